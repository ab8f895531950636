/**
 * One request may weigh at most half of V8's heap limit (docs/OPERATIONS.md, "Memory";
 * src/http/body-budget.ts `defaultRequestWeightLimit`). A body within MAX_RECORD_SIZE_BYTES can
 * still be dense enough that its parse passes the heap limit: on the create preparer's worker the
 * worker died of it and the create answered 500 `store_failure`; on the HTTP thread V8 ends the
 * whole process (`FATAL ERROR: Reached heap limit`). The built store under a 128 MiB heap
 * (`--max-old-space-size`, as the unit sets 512) is sent 20 MiB of `[0]`: refused 413 as its
 * bytes arrive, never parsed, and the store serves on.
 */
import t from 'tap';
import { spawnStore } from '../../scripts/lib/spawned-store.js';
import { getJson, postJson, smallEvent } from '../support/events.js';
import { tempDataDir } from '../support/store-server.js';

t.test('a body within the size limit whose parse would pass the heap is refused 413 before it is parsed; the store serves on', async (t) => {
  const store = await spawnStore({ PORT: '0', DATA_DIR: tempDataDir(), NODE_OPTIONS: '--max-old-space-size=128' });
  t.teardown(() => store.child.kill('SIGKILL'));
  // 20 MiB of `[0],`: 5.2 million arrays, about 380 MiB once parsed (72 bytes each, body-budget.ts PARSED_WEIGHT).
  const items = Math.floor((20 * 1024 * 1024 - 64) / 4);
  const dense = `{"dense": [${'[0],'.repeat(items - 1)}[0]]}`;
  const refused = await postJson(`${store.url}/v2/events`, dense);
  t.equal(refused.status, 413);
  t.match(refused.body.detail, /once parsed .* half of the store's V8 heap limit \(--max-old-space-size\)/, 'the answer names the cause');
  t.equal(store.child.exitCode, null, 'the store is running');
  t.equal((await getJson(`${store.url}/health`)).status, 200);
  t.equal((await postJson(`${store.url}/v2/events`, smallEvent())).status, 201, 'and stores the next create');
});
