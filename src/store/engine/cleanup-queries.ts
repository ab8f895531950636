/**
 * The reads cleanup and its kin need (docs/OPERATIONS.md, "Keeping the disk bounded"): events
 * and files oldest first for cleanup, drafts due for the auto-finalize sweep, the retention cutoff
 * and what it would delete for `/stats`, and the walks of the consistency pass over segment and
 * file entries with its scrub cursor. The lifecycle worker and the statistics reach LMDB only
 * through these and the other modules of src/store; index key shapes are index-keys.ts's.
 *
 * Walks are generators over lmdb-js ranges: lazy, so a caller that stops early reads no further.
 * Times are µs since the epoch (timestamps.ts), sizes bytes.
 */
import { DRAFTS_PREFIX, fileAgeKey, fileAgeRange, fileOfAgeKey } from '../index/index-keys.js';
import type { FileRef } from './event-deletion.js';
import type { FileEntry, SegmentEntry } from '../log/log-entries.js';
import { storeHandles, type StoreView } from '../read/store-view.js';
import { heldCutoff, type HeldClock } from './store-clock.js';
import { DAY_MICROS } from '../record/timestamps.js';
import { isProtected } from '../ledger/sink-ledger.js';

/** The `meta` entry holding the file id the next scrub starts at (docs/STORAGE.md, "The index"). */
const SCRUB_CURSOR_KEY = 'scrubCursor';

/** What retention would delete now: records past the cutoff cleanup may delete, their files. */
export interface RetentionBacklog {
  records: number;
  files: number;
  /** Bytes of those files' data. */
  bytes: number;
}

/**
 * created_at of the records created in [`from`, `before`), oldest first.
 * @param range `from` (inclusive, default: the oldest), `before` (exclusive, default: no bound),
 *   `limit` (most yielded, default: no limit)
 */
export function* eventsOldestFirst(
  store: StoreView,
  range: { from?: number; before?: number; limit?: number },
): Generator<number, void, undefined> {
  yield* store[storeHandles].stored.createdAts(range);
}

/**
 * Files in files-by-age order: oldest event first, then by file id (a file's length is
 * `store.getFile(fileId).length`).
 * @param range `after` (exclusive: the walk resumes past this file; default: from the first),
 *   `before` (created_at of the event, exclusive; default: no bound), `limit` (most yielded,
 *   default: no limit)
 */
export function* filesByAge(
  store: StoreView,
  range: { after?: FileRef; before?: number; limit?: number },
): Generator<FileRef, void, undefined> {
  const bounds = fileAgeRange(range.before);
  const { after } = range;
  const start = after ? fileAgeKey(after.createdAt, after.fileId) : bounds.start;
  for (const key of store[storeHandles].dbs.index.getKeys({ start, end: bounds.end, exclusiveStart: after !== undefined, limit: range.limit })) {
    yield fileOfAgeKey(key);
  }
}

/**
 * created_at of the drafts created before `cutoff` (exclusive), oldest first.
 * @param limit most returned
 */
export function draftsOlderThan(store: StoreView, cutoff: number, limit: number): number[] {
  return [...store[storeHandles].stored.createdAtsUnder(DRAFTS_PREFIX, { before: cutoff, limit })];
}

/** created_at of the oldest draft, or null when there is none. */
export function oldestDraft(store: StoreView): number | null {
  for (const createdAt of store[storeHandles].stored.createdAtsUnder(DRAFTS_PREFIX)) {
    // A draft the head finalized is still among the checkpointed drafts until its checkpoint.
    if (!store.updatedInHead(createdAt) || store.getRecord(createdAt)?.draft) return createdAt;
  }
  // Drafts in the head (head.ts) are newer than every draft in LMDB.
  return store.inHead((source) => source.keyRange(DRAFTS_PREFIX, -Infinity, Infinity, 'asc'), -Infinity, Infinity, 'asc', (record) => record.draft).seek(-Infinity) ?? null;
}

/**
 * The retention cutoff (docs/OPERATIONS.md, "Keeping the disk bounded", retention; docs/STORAGE.md,
 * "A clock that jumps"): records created before it (exclusive) are past retention, older than
 * RETENTION_DAYS by the wall clock and held for RETENTION_DAYS of the store's running time
 * (store-clock.ts `heldCutoff`), so a clock that was behind and is corrected deletes nothing the
 * store has not held that long. The one place it is computed, for cleanup and for `/stats`'
 * prediction of it.
 * @param nowMicros the wall clock's time retention is measured from (µs since the epoch)
 * @param retentionDays RETENTION_DAYS (decimals allowed)
 * @param held the store's running time and epochs (store-clock.ts `heldClock`)
 * @returns µs since the epoch, an integer
 */
export function retentionCutoff(nowMicros: number, retentionDays: number, held: HeldClock): number {
  const retentionMicros = retentionDays * DAY_MICROS;
  return Math.min(Math.floor(nowMicros - retentionMicros), heldCutoff(held, retentionMicros));
}

/**
 * What retention would delete at `cutoff` (`retentionCutoff`): the records created before it that
 * cleanup may delete (not `isProtected`), and their files still stored, with their bytes. Walks
 * the records and files past the cutoff; nothing else. Reads LMDB alone, as cleanup does after its
 * checkpoint: a caller first checkpoints a head that holds creates before `cutoff`
 * (`StoreView.checkpointedBefore`; operations/store-stats.ts).
 */
export function retentionBacklog(store: StoreView, cutoff: number): RetentionBacklog {
  let records = 0;
  if (!store.shipping) {
    // Nothing is protected with cloud upload off: the range is counted without a walk.
    records = store[storeHandles].stored.countBefore(cutoff);
  } else {
    for (const createdAt of eventsOldestFirst(store, { before: cutoff })) if (!isProtected(store, createdAt)) records++;
  }
  let files = 0;
  let bytes = 0;
  for (const { createdAt, fileId } of filesByAge(store, { before: cutoff })) {
    if (isProtected(store, createdAt)) continue;
    files++;
    bytes += store.getFile(fileId)?.length ?? 0;
  }
  return { records, files, bytes };
}

/** True when segment `segment` has an entry: the index knows its file. */
export function hasSegment(store: StoreView, segment: number): boolean {
  return store[storeHandles].dbs.segments.doesExist(segment);
}

/** Every segment entry, by segment number. */
export function* segmentEntries(store: StoreView): Generator<{ segment: number; entry: SegmentEntry }, void, undefined> {
  for (const { key, value } of store[storeHandles].dbs.segments.getRange()) yield { segment: key, entry: value };
}

/**
 * File entries by file id, from `fromFileId` (inclusive; default: the first).
 */
export function* fileEntries(store: StoreView, fromFileId = ''): Generator<{ fileId: string; entry: FileEntry }, void, undefined> {
  for (const { key, value } of store[storeHandles].dbs.files.getRange({ start: fromFileId })) yield { fileId: key, entry: value };
}

/** The file id the next scrub starts at ('' for the first file). */
export function scrubCursor(store: StoreView): string {
  return (store[storeHandles].dbs.meta.get(SCRUB_CURSOR_KEY) as string | undefined) ?? '';
}

/**
 * Saves the file id the next scrub starts at ('' to start over).
 * @throws the lmdb error of a failed commit
 */
export async function saveScrubCursor(store: StoreView, fileId: string): Promise<void> {
  await store[storeHandles].dbs.meta.put(SCRUB_CURSOR_KEY, fileId);
}
