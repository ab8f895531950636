/**
 * Records fill their pages (docs/STORAGE.md, "Records fill their pages"): creates put into LMDB
 * (those that do not go to a block) are appended at the end of the `events` B-tree, so LMDB fills each leaf page before it starts
 * the next instead of splitting full pages in the middle, which leaves them half empty.
 */
import t from 'tap';
import { openDatabases, type StoreDatabases } from '../src/store/index/lmdb-env.js';
import { presentEventJson } from '../src/events/present.js';
import { indexBatches } from '../src/store/engine/checkpoint-writer.js';
import type { LoggedCreate } from '../src/store/head/head.js';
import { encodeRecord } from '../src/store/index/record-codec.js';
import { blocksDirOf, StoredEvents } from '../src/store/read/stored-events.js';
import type { EventRecord } from '../src/store/record/event-record.js';
import { timeOrderedId } from '../src/store/record/ids.js';
import { tempDataDir } from './support/store-server.js';

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

t.test('records put into LMDB in order fill the leaf pages of their records', async (t) => {
  // Record copies, as a rebuild replays them, go to LMDB, not to a block (docs/STORAGE.md, "Blocks
  // in the running store"). Records of about 1.8 KB, as the bench's small events: two fit a 4 KiB
  // page, and split in the middle each page would keep one (under about 2 KB, LMDB keeps a record
  // in its leaf page).
  const dataDir = tempDataDir();
  const dbs = openDatabases(dataDir);
  const stored = new StoredEvents(dbs, blocksDirOf(dataDir));
  t.teardown(() => {
    stored.close();
    return dbs.root.close();
  });
  const padding = 'x'.repeat(560);
  const creates: LoggedCreate[] = Array.from({ length: 300 }, (_, i) => {
    const record: EventRecord = {
      id: timeOrderedId(), created_at: 1_795_000_000_000_000 + i, solution: null, workflow_id: null, workflow_version: null,
      inference_timestamp: '2026-12-07T01:00:00Z', device_id: 'cam-1', stream_id: null, image_id: null, event_schema: 'custom',
      event_data: {}, custom_metadata: { note: padding, i }, images: [], videos: [], local_only_files: [], display_image_position: null,
      original_file_count: 0, current_file_count: 0, draft: false, finalized_at: 1_795_000_000_000_000 + i, auto_finalized_at: null,
    };
    return { record, value: encodeRecord(record, presentEventJson), files: [], copy: true };
  });
  await indexBatches(stored, [{ creates, updates: [], end: { segment: 1, offset: 0 } }], { shipping: false, present: presentEventJson });

  t.equal(dbs.blocks.getCount(), 0, 'no block: record copies go to LMDB');
  const { fill, records, largest } = leafFill(dbs);
  t.equal(records, 300, 'every record stored');
  t.ok(largest > 1400 && largest < 2000, `records of ${largest} bytes at most: two to a page`);
  t.ok(fill > 0.8, `records fill ${(fill * 100).toFixed(0)}% of their leaf pages (over 80%; half of that when LMDB splits pages in the middle)`);
});
