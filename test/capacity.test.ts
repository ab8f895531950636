/**
 * The capacity gate (src/lifecycle/capacity.ts, src/lifecycle/capacity-gate.ts; docs/API.md,
 * "Capacity and 529") over real HTTP: 529 only with cloud upload on and nothing deletable. The
 * gate with cloud upload on is tested in cloud-upload.test.ts.
 */
import t from 'tap';
import { postJson, smallEvent } from './support/events.js';
import { startStore } from './support/store-server.js';

// Found by the soak harness (npm run soak; docs/RELIABILITY.md), commit daa6b49.
t.test('with cloud upload off, creates at the record cap are never refused with 529 (found by the soak)', async (t) => {
  // E10: 529 means over a limit and waiting for uploads to drain. With cloud upload off nothing
  // waits for uploads: cleanup can always delete. The gate closed whenever ingest crossed the
  // cap again while a cleanup ran (1770 of 3000 creates answered 529 in the reproduction).
  const store = await startStore({ MAX_RECORDS: '50' });
  t.teardown(store.stop);
  const statuses = new Map<number, number>();
  let sent = 0;
  await Promise.all(Array.from({ length: 10 }, async () => {
    while (sent < 2000) {
      sent++;
      const { status } = await postJson(`${store.url}/v2/events`, smallEvent());
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
  }));
  t.same([...statuses], [[201, 2000]], 'every create acknowledged');
});
