/**
 * Records fill their pages (docs/STORAGE.md, "Records fill their pages"): a checkpoint appends its
 * creates' records at the end of the `events` B-tree, so LMDB fills each leaf page before it starts
 * the next instead of splitting full pages in the middle, which leaves them half empty.
 */
import t from 'tap';
import { openDatabases, type StoreDatabases } from '../src/store/index/lmdb-env.js';
import { postJson, smallEvent } from './support/events.js';
import { startStore } from './support/store-server.js';

/** The share of the `events` B-tree's leaf pages its records' bytes fill (0 to 1), and its largest record (bytes). */
function leafFill(dbs: StoreDatabases): { fill: number; records: number; largest: number } {
  let bytes = 0;
  let records = 0;
  let largest = 0;
  for (const { value } of dbs.events.getRange()) {
    bytes += value.length;
    largest = Math.max(largest, value.length);
    records++;
  }
  const { treeLeafPageCount, pageSize } = dbs.events.getStats() as { treeLeafPageCount: number; pageSize: number };
  return { fill: bytes / (treeLeafPageCount * pageSize), records, largest };
}

t.test('creates checkpointed in order fill the leaf pages of their records', async (t) => {
  const store = await startStore({ CLEANUP_INTERVAL_SECONDS: '3600' });
  // Records of about 1.8 KB, as the bench's small events: two fit a 4 KiB page, and split in the
  // middle each page would keep one (under about 2 KB, LMDB keeps a record in its leaf page).
  const padding = 'x'.repeat(560);
  for (let i = 0; i < 300; i++) {
    const created = await postJson(`${store.url}/v2/events`, smallEvent({ custom_metadata: { note: padding, i } }));
    if (created.status !== 201) t.fail(JSON.stringify(created.body));
  }
  await store.stop();

  const dbs = openDatabases(store.dataDir);
  const { fill, records, largest } = leafFill(dbs);
  t.equal(records, 300, 'every record stored');
  t.ok(largest > 1400 && largest < 2000, `records of ${largest} bytes at most: two to a page`);
  t.ok(fill > 0.8, `records fill ${(fill * 100).toFixed(0)}% of their leaf pages (over 80%; half of that when LMDB splits pages in the middle)`);
  await dbs.root.close();
});
