/**
 * Rows of live blocks that LMDB takes over (docs/STORAGE.md, "Blocks"): a block is never
 * rewritten in place, so an event deleted, updated or re-stamped after its block was written has
 * its row hidden (`block_hidden`), and an event that lives on is put into LMDB's `events`,
 * `event_ids` and `index` as it now is, in the same write transaction; a step that writes it into
 * a block again (an upgrade, a merge) takes it out of LMDB in its commit.
 */
import { EMPTY, fileOfAgeKey, indexKeysOf } from '../index/index-keys.js';
import { blocksChanged, readEventValue, type StoreDatabases } from '../index/lmdb-env.js';
import { decodeRecord, encodeRecord, type RecordPresenter } from '../index/record-codec.js';
import { checksum } from '../log/segment-frames.js';
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

/**
 * What a step that moves an event from LMDB into a block (an upgrade, a merge folding it back)
 * knows of the value it read: its length (bytes) and CRC32C, to tell at its commit whether the
 * event changed since (`leaveLmdbSync`).
 */
export interface ReadValue {
  length: number;
  crc: number;
}

/** The `ReadValue` of `value`. */
export function readValueOf(value: Buffer): ReadValue {
  return { length: value.length, crc: checksum(value) };
}

/**
 * Takes the event created at `createdAt` (µs) out of LMDB, its record, id and index entries (a
 * file's files-by-age entry stays, with its entry), when its value is still the one a step read
 * (`was`): a block the same commit enters holds it from then on. Otherwise (updated or deleted
 * since) LMDB's state stands and the new block's row is hidden. Call inside a write transaction.
 * @returns whether the event left LMDB
 */
export function leaveLmdbSync(dbs: StoreDatabases, createdAt: number, was: ReadValue): boolean {
  const now = readEventValue(dbs, createdAt);
  if (!now || now.length !== was.length || checksum(now) !== was.crc) {
    hideRowSync(dbs, createdAt);
    return false;
  }
  const record = decodeRecord(now);
  dbs.events.removeSync(createdAt);
  dbs.eventIds.removeSync(record.id);
  for (const key of indexKeysOf(record)) {
    if (key[0] !== 'F') dbs.index.removeSync(key);
  }
  return true;
}

/** Hides the block row created at `createdAt` (µs); call inside a write transaction. */
export function hideRowSync(dbs: StoreDatabases, createdAt: number): void {
  dbs.blockHidden.putSync(createdAt, EMPTY);
  blocksChanged(dbs);
}
