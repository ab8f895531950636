/**
 * Rows of live blocks that LMDB takes over (docs/STORAGE.md, "Blocks"): a block is never
 * rewritten in place, so an event deleted, updated or re-stamped after its block was written has
 * its row hidden (`block_hidden`), and an event that lives on is put into LMDB's `events`,
 * `event_ids` and `index` as it now is, in the same write transaction.
 */
import { EMPTY, fileOfAgeKey, indexKeysOf } from '../index/index-keys.js';
import { blocksChanged, type StoreDatabases } from '../index/lmdb-env.js';
import { encodeRecord, type RecordPresenter } from '../index/record-codec.js';
import type { EventRecord } from '../record/event-record.js';

/**
 * Puts an event a live block holds into LMDB as `record` now is, with its id and every index
 * entry (files-by-age only for files still stored: a file a cleanup deleted stays listed on its
 * record without one), and hides its block row (docs/STORAGE.md, "Blocks"): the event is read
 * from LMDB from then on, until a merge writes it into a block again. Call inside a write
 * transaction.
 */
export function moveToLmdbSync(dbs: StoreDatabases, record: EventRecord, present: RecordPresenter): void {
  const createdAt = record.created_at;
  dbs.events.putSync(createdAt, encodeRecord(record, present));
  dbs.eventIds.putSync(record.id, createdAt);
  for (const key of indexKeysOf(record)) {
    if (key[0] === 'F' && dbs.files.get(fileOfAgeKey(key).fileId)?.event !== createdAt) continue;
    dbs.index.putSync(key, EMPTY);
  }
  hideRowSync(dbs, createdAt);
}

/** Hides the block row created at `createdAt` (µs); call inside a write transaction. */
export function hideRowSync(dbs: StoreDatabases, createdAt: number): void {
  dbs.blockHidden.putSync(createdAt, EMPTY);
  blocksChanged(dbs);
}
