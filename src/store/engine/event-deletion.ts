/**
 * Deleting records and files (docs/API.md, "Cleanup and reset"; docs/STORAGE.md, "Reclaiming
 * space"): each call is one LMDB write transaction that removes the entries, marks the blob bytes
 * dead in their segments' accounting and lowers the counters, so the storage figures drop at once.
 * Segment files with no live blob left are reclaimed afterwards by `reclaimSegments`.
 */
import { SEGMENT_ROLL_BYTES } from '../log/blob-log.js';
import { recycleOrRemove } from '../log/segment-files.js';
import { deadLetterRange, fileAgeKey, fileIdsOf, indexKeysOf, pendingKey } from '../index/index-keys.js';
import { addToCounters, type StoreDatabases } from '../index/lmdb-env.js';
import { holdsLive, liveFrameBytes, type SegmentEntry } from '../log/log-entries.js';
import type { EventRecord } from '../record/event-record.js';
import { encodeRecord } from '../index/record-codec.js';
import type { DeletionReason, StoreChange } from '../record/store-changes.js';
import { storeHandles, type StoreView } from '../read/store-view.js';
import type { LogPosition } from '../index/lmdb-env.js';
import { encodeTombstone } from '../log/record-copy-frame.js';
import { FRAME_HEADER_BYTES } from '../log/segment-frames.js';
import { CreateRanges, forgetFrames, FrameTally } from './frame-accounting.js';
import { noteReclaimedSegments } from './unknown-segments.js';
import { hideRowSync, moveToLmdbSync } from './block-rows.js';

/**
 * Logs the tombstones of events about to be deleted (EventStore.logTombstones, asked of the HTTP
 * thread): each event's id and created_at (µs); resolves with where each tombstone's frame ends.
 */
export type TombstoneLogger = (events: { id: string; createdAt: number }[]) => Promise<LogPosition[]>;

/** Segments smaller than this (bytes) are not worth compacting. */
const COMPACT_MIN_BYTES = 1024 * 1024;
/**
 * A segment whose live bytes are under this share of its length is compacted: copying them
 * forward then frees at least three bytes for every byte copied.
 */
const COMPACT_MAX_LIVE_SHARE = 1 / 4;
/**
 * An active segment with no live blob is retired when files were just deleted, or else once it is
 * this long (bytes, a quarter of a segment). Most such segments never held a blob: they hold the
 * record frames of events without images, and retiring one costs a checkpoint of the head, a flushed
 * commit and a new segment file for a few kilobytes (native-bench/PROFILE.md, "A cleanup
 * checkpointed the head every five minutes").
 */
const RETIRE_MIN_BYTES = SEGMENT_ROLL_BYTES / 4;

/** What a deletion removed. Bytes are blob data bytes. */
export interface DeletionTally {
  records: number;
  files: number;
  bytes: number;
}

/** Per-segment bytes and blobs that died in one transaction. */
class DeadBlobs {
  private readonly bySegment = new Map<number, { bytes: number; blobs: number }>();
  files = 0;
  bytes = 0;

  /** Removes file `fileId` and counts its bytes dead; false when it was already gone. */
  remove(dbs: StoreDatabases, fileId: string): boolean {
    const entry = dbs.files.get(fileId);
    if (!entry) return false;
    dbs.files.removeSync(fileId);
    const dead = this.bySegment.get(entry.segment) ?? { bytes: 0, blobs: 0 };
    dead.bytes += entry.length;
    dead.blobs += 1;
    this.bySegment.set(entry.segment, dead);
    this.files++;
    this.bytes += entry.length;
    return true;
  }

  /** Writes the segments' lowered live figures; call inside the transaction. */
  apply(dbs: StoreDatabases): void {
    for (const [segment, dead] of this.bySegment) {
      const entry = dbs.segments.get(segment);
      if (!entry) continue;
      dbs.segments.putSync(segment, { ...entry, liveBytes: entry.liveBytes - dead.bytes, liveBlobs: entry.liveBlobs - dead.blobs });
    }
  }
}

/**
 * Deletes whole records (and every file of theirs) created at `createdAts` (µs), and announces
 * each once flushed (store-changes.ts). Each event's tombstone is logged first (docs/STORAGE.md,
 * "Two copies of every record"), so a rebuild from the log does not bring it back; its frames
 * die in their segments' accounting, and the tombstone lives while its home segment does.
 * @param reason why they go (the cleanup pass deleting them)
 * @param logTombstones logs the tombstones (EventStore.logTombstones on the HTTP thread)
 * @throws the error of logging the tombstones (nothing is deleted then), the lmdb error of a
 *   failed commit (nothing is deleted then; the tombstones are in the log, and the next cleanup
 *   deletes the same events)
 */
export async function deleteRecords(
  store: StoreView,
  createdAts: number[],
  reason: Exclude<DeletionReason, 'reset'>,
  announce: (change: StoreChange) => void,
  logTombstones: TombstoneLogger,
): Promise<DeletionTally> {
  const { dbs } = store[storeHandles];
  const tally: DeletionTally = { records: 0, files: 0, bytes: 0 };
  const deleted: EventRecord[] = [];
  const doomed = createdAts.flatMap((createdAt) => {
    const record = store.getRecord(createdAt);
    return record ? [{ id: record.id, createdAt }] : [];
  });
  if (doomed.length === 0) return tally;
  const tombstones = await logTombstones(doomed);
  await dbs.root.transaction(() => {
    const dead = new DeadBlobs();
    const ranges = CreateRanges.read(dbs);
    const frames = new FrameTally();
    let images = 0;
    let drafts = 0;
    let uploads = 0;
    for (const [i, { createdAt }] of doomed.entries()) {
      const record = store.getRecord(createdAt);
      const tombstone = tombstones[i];
      const tombstoneBytes = encodeTombstone(createdAt).length + FRAME_HEADER_BYTES;
      const home = record ? forgetFrames(dbs, ranges, frames, createdAt) : undefined;
      // The tombstone is needed while a frame it supersedes is on disk: its event's home, when
      // that is another segment (one segment's frames go together).
      const needed = home !== undefined && home !== tombstone.segment;
      if (needed) dbs.tombstones.putSync([tombstone.segment, createdAt], { id: record!.id, home });
      frames.added(tombstone.segment, tombstoneBytes, needed, undefined, tombstone.offset);
      if (!record) continue;
      // An image counts in `images` until its file goes (deleteFiles lowers it then), or, with no
      // file stored, until its record goes (docs/API.md, "Statistics": total_images).
      for (const image of record.images) if (image.file_id === null || dead.remove(dbs, image.file_id)) images++;
      for (const fileId of fileIdsOf(record)) dead.remove(dbs, fileId);
      for (const key of indexKeysOf(record)) dbs.index.removeSync(key);
      // Its ledger entry, if any, stays: sinks pass over entries whose event is gone.
      if (dbs.index.removeSync(pendingKey(createdAt))) uploads++;
      for (const key of dbs.index.getKeys(deadLetterRange(createdAt))) dbs.index.removeSync(key);
      // An event a block holds has its row hidden (block-rows.ts); one LMDB holds is removed.
      if (dbs.events.removeSync(createdAt)) dbs.eventIds.removeSync(record.id);
      else hideRowSync(dbs, createdAt);
      tally.records++;
      deleted.push(record);
      if (record.draft) drafts++;
    }
    dead.apply(dbs);
    frames.apply(dbs);
    tally.files = dead.files;
    tally.bytes = dead.bytes;
    addToCounters(dbs, {
      events: -tally.records, images: -images, drafts: -drafts, files: -dead.files, liveBlobBytes: -dead.bytes, uploadsPending: -uploads,
    });
  });
  await dbs.root.flushed;
  for (const record of deleted) announce({ kind: 'deleted', id: record.id, createdAt: record.created_at, reason, record });
  return tally;
}

/** A file to delete: its id and the created_at (µs) of its event. */
export interface FileRef {
  createdAt: number;
  fileId: string;
}

/**
 * Deletes files but keeps their records, lowering `current_file_count`, and `total_images` for
 * each image file among them (docs/API.md, "Cleanup and reset": storage; "Statistics"). File ids
 * stay listed on the record; their entries are gone, so a download of one finds no file
 * (`file_not_found`) from then on.
 * @throws the lmdb error of a failed commit (nothing is deleted then)
 */
export async function deleteFiles(store: StoreView, files: FileRef[]): Promise<DeletionTally> {
  const { dbs } = store[storeHandles];
  const tally: DeletionTally = { records: 0, files: 0, bytes: 0 };
  await dbs.root.transaction(() => {
    const dead = new DeadBlobs();
    const lowered = new Map<number, string[]>();
    for (const { createdAt, fileId } of files) {
      dbs.index.removeSync(fileAgeKey(createdAt, fileId));
      if (dead.remove(dbs, fileId)) lowered.set(createdAt, [...(lowered.get(createdAt) ?? []), fileId]);
    }
    let images = 0;
    for (const [createdAt, fileIds] of lowered) {
      const record = store.getRecord(createdAt);
      if (!record) continue;
      record.current_file_count = Math.max(0, record.current_file_count - fileIds.length);
      images += record.images.filter((image) => image.file_id !== null && fileIds.includes(image.file_id)).length;
      if (dbs.events.doesExist(createdAt)) {
        dbs.events.putSync(createdAt, encodeRecord(record, store.present));
      } else {
        moveToLmdbSync(dbs, record, store.present);
      }
    }
    dead.apply(dbs);
    tally.files = dead.files;
    tally.bytes = dead.bytes;
    addToCounters(dbs, { images: -images, files: -dead.files, liveBlobBytes: -dead.bytes });
  });
  await dbs.root.flushed;
  return tally;
}

/**
 * Whether what lives in a segment (its live blobs' bytes and its live frames') is under
 * COMPACT_MAX_LIVE_SHARE of its length: compacting it frees at least three bytes a byte copied.
 */
export function isSparse(entry: SegmentEntry): boolean {
  return entry.liveBytes + liveFrameBytes(entry) < entry.committed * COMPACT_MAX_LIVE_SHARE;
}

/**
 * Drops the tombstones whose events' home segments are among `removed` (nothing is left for them
 * to supersede), and counts their frames dead; call inside the transaction that removes the
 * segments' entries.
 */
function releaseTombstones(dbs: StoreDatabases, removed: readonly number[]): void {
  if (removed.length === 0) return;
  const gone = new Set(removed);
  const frames = new FrameTally();
  for (const { key, value } of dbs.tombstones.getRange()) {
    if (!gone.has(value.home)) continue;
    dbs.tombstones.removeSync(key);
    if (!gone.has(key[0])) frames.died(key[0]);
  }
  frames.apply(dbs);
}

/**
 * Deletes segment files that hold nothing live (no live blob, no live frame), compacting first
 * those where little lives. The newest unsealed segment may be the one the HTTP thread appends
 * to: when nothing lives in it, or little does and `filesDeleted`, and `filesDeleted` or it is
 * RETIRE_MIN_BYTES long, `retire` asks the HTTP thread to stop appending to it and seal it first;
 * otherwise it is left alone (docs/STORAGE.md, "Reclaiming space").
 * @param retire asks the segment's writer to retire it (EventStore.retireSegment)
 * @param compact asks the segment's writer to copy its live blobs forward (EventStore.compactSegment)
 * @param filesDeleted whether the caller just deleted files, whose bytes may sit in the active segment
 * @returns the numbers of the segments deleted
 */
export async function reclaimSegments(
  store: StoreView,
  retire?: (segment: number) => Promise<void>,
  compact?: (segment: number) => Promise<void>,
  filesDeleted = false,
): Promise<number[]> {
  const { dbs } = store[storeHandles];
  let newestUnsealed = 0;
  for (const { key, value } of dbs.segments.getRange()) if (!value.sealed) newestUnsealed = Math.max(newestUnsealed, key);
  // The active segment is retired when nothing in it lives, or, once files were deleted, when
  // little does: what lives in it is then compacted with the rest (docs/STORAGE.md, "Reclaiming space").
  const active = dbs.segments.get(newestUnsealed);
  const worthRetiring = filesDeleted || (active?.committed ?? 0) >= RETIRE_MIN_BYTES;
  let retired = false;
  if (retire && active && worthRetiring && (!holdsLive(active) || (filesDeleted && isSparse(active)))) {
    await retire(newestUnsealed);
    // The writer sealed it in its own commit, on another thread: read from the latest snapshot,
    // not the one this thread's read transaction may still hold (lmdb-js README, "resetReadTxn").
    dbs.root.resetReadTxn();
    retired = dbs.segments.get(newestUnsealed)?.sealed === true;
  }
  // Segments whose live share fell below COMPACT_MAX_LIVE_SHARE are compacted.
  let compacted = false;
  for (const { key, value } of dbs.segments.getRange()) {
    const candidate = key === newestUnsealed ? retired : value.committed >= COMPACT_MIN_BYTES;
    if (compact && candidate && holdsLive(value) && isSparse(value)) {
      await compact(key);
      compacted = true;
    }
  }
  // The writer moved what lived there in its own commits, on another thread: see them (below).
  if (compacted) dbs.root.resetReadTxn();
  const empty: number[] = [];
  for (const { key, value } of dbs.segments.getRange()) if (!holdsLive(value)) empty.push(key);
  const doomed = empty.filter((segment) => segment !== newestUnsealed || dbs.segments.get(segment)?.sealed);
  if (doomed.length === 0) return [];
  const removed: number[] = [];
  await dbs.root.transaction(() => {
    for (const segment of doomed) {
      const entry = dbs.segments.get(segment);
      if (!entry || holdsLive(entry)) continue;
      dbs.segments.removeSync(segment);
      removed.push(segment);
    }
    noteReclaimedSegments(dbs, removed);
    releaseTombstones(dbs, removed);
  });
  await dbs.root.flushed;
  for (const segment of removed) {
    await store[storeHandles].blobs.forget(segment);
    await recycleOrRemove(store[storeHandles].blobsDir, segment, SEGMENT_ROLL_BYTES);
  }
  return removed;
}
