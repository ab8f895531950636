/**
 * Compaction (docs/STORAGE.md, "Reclaiming space"): what is live in a segment whose live share fell
 * low is copied forward into the active segment, so the segment holds nothing live and the
 * lifecycle worker deletes it. What is live is its live blobs, and the frames live events depend on
 * (docs/STORAGE.md, "Two copies of every record"): each event with a blob, a home frame or an
 * update frame there gets a record copy, its whole record as the index holds it with the places of
 * its files; each tombstone still needed there is logged again.
 */
import { fileIdsOf } from '../index/index-keys.js';
import { decodeRecord, recordCopyBytes } from '../index/record-codec.js';
import type { AppendedFrame, FrameToAppend } from '../log/blob-log.js';
import type { FileEntry } from '../log/log-entries.js';
import { encodeRecordCopy, encodeTombstone } from '../log/record-copy-frame.js';
import { FRAME_HEADER_BYTES } from '../log/segment-frames.js';
import { CreateRanges, framesOf, FrameTally } from './frame-accounting.js';
import type { MaintenanceAccess } from './segment-maintenance.js';

/** What lives in a segment: its live blobs, the events whose frames it holds, its tombstones still needed. */
interface LiveContents {
  blobs: { key: string; value: FileEntry }[];
  /** created_at (µs) of every event that gets a record copy. */
  events: number[];
  tombstones: { key: [number, number]; value: { id: string; home: number } }[];
}

/** Finds what lives in `segment`, as the index holds it now. */
function liveContents(store: MaintenanceAccess, segment: number): LiveContents {
  const { dbs, stored } = store;
  const blobs = [...dbs.files.getRange()].filter(({ value }) => value.segment === segment);
  const events = new Set<number>(blobs.map(({ value }) => value.event));
  const entry = dbs.segments.get(segment);
  if (entry?.firstCreate !== undefined && entry.lastCreate !== undefined) {
    const ranges = CreateRanges.read(dbs);
    for (const createdAt of stored.createdAts({ from: entry.firstCreate, before: entry.lastCreate + 1 })) {
      if (framesOf(dbs, ranges, createdAt).home === segment) events.add(createdAt);
    }
  }
  for (const { key, value } of dbs.recordFrames.getRange()) if (value.home === segment || value.updates.includes(segment)) events.add(key);
  const tombstones = [...dbs.tombstones.getRange({ start: [segment], end: [segment + 1] })];
  return { blobs, events: [...events].filter((createdAt) => stored.holds(createdAt)).sort((a, b) => a - b), tombstones };
}

/**
 * Compacts `segment`: its live blobs are appended to the active segment, then a record copy of
 * every event with a frame or a blob in it and its tombstones still needed; one flushed commit
 * points the files' entries at their copies and moves the events' homes and the tombstones, so the
 * segment holds nothing live. The worker asks it of a segment whose live bytes are below a
 * quarter of its length.
 * @throws the fs error of a read or an append (nothing moved), or the lmdb error of the commit
 *   (the copies stay in the log, unreferenced, and the entries where they were)
 */
export async function compactSegment(store: MaintenanceAccess, segment: number): Promise<void> {
  await store.paused(async () => {
    const live = liveContents(store, segment);
    if (live.blobs.length === 0 && live.events.length === 0 && live.tombstones.length === 0) return;
    const blobs = await Promise.all(live.blobs.map(async ({ key, value }) => {
      const bytes = Buffer.allocUnsafe(value.length);
      await store.blobs.read(segment, value.offset, bytes);
      return { id: key, kind: value.kind, bytes };
    }));
    const movedBlobs = blobs.length > 0 ? await store.appender.append(blobs) : undefined;
    const newPlace = new Map<string, AppendedFrame>(live.blobs.map(({ key }, i) => [key, movedBlobs!.placed[i]]));
    await copyRecordsForward(store, live.events, newPlace, segment, live.tombstones, () => {
      if (movedBlobs) moveBlobs(store, segment, live.blobs, movedBlobs.placed, movedBlobs.end);
    });
  });
}

/**
 * Repairs the log's copy of the events created at `createdAts` (µs), found damaged or missing by
 * the scrub (scrub.ts): each gets a record copy of its record as the index holds it, its new home
 * (docs/STORAGE.md, "Two copies of every record"). Runs with the log stage paused and the head
 * checkpointed.
 * @returns how many record copies were written (an event the index no longer holds gets none)
 * @throws the fs error of the append, the lmdb error of the commit
 */
export async function rewriteLogCopies(store: MaintenanceAccess, createdAts: readonly number[]): Promise<number> {
  let copied = 0;
  await store.paused(async () => {
    copied = await copyRecordsForward(store, createdAts.filter((createdAt) => store.stored.holds(createdAt)), new Map(), undefined, [], () => undefined);
  });
  return copied;
}

/**
 * Appends a record copy of each event at `createdAts` (its record as the index holds it, its files
 * where `newPlace` or the index places them) and a tombstone for each of `tombstones` (of `from`),
 * then commits in one flushed commit `alsoCommit`'s writes, the events' new homes (their old frames
 * dead) and the tombstones' new places.
 * @returns how many record copies were appended
 */
async function copyRecordsForward(
  store: MaintenanceAccess, createdAts: readonly number[], newPlace: Map<string, AppendedFrame>, from: number | undefined,
  tombstones: LiveContents['tombstones'], alsoCommit: () => void,
): Promise<number> {
  const { dbs } = store;
  const records: FrameToAppend[] = [];
  const copied: { createdAt: number; frame: number }[] = [];
  for (const createdAt of createdAts) {
    const value = store.stored.value(createdAt);
    if (!value) continue;
    copied.push({ createdAt, frame: records.length });
    // A copy: an LMDB value is a view the file reads in recordCopyFrame overwrite (stored-events.ts `value`).
    records.push(recordCopyFrame(store, Buffer.from(value), newPlace));
  }
  const firstTombstone = records.length;
  for (const { key, value } of tombstones) records.push({ id: value.id, kind: 'tombstone', bytes: encodeTombstone(key[1]) });
  const moved = records.length > 0 ? await store.appender.append(records) : undefined;
  await store.commitDurably(() => {
    alsoCommit();
    if (!moved) return;
    const ranges = CreateRanges.read(dbs);
    const frames = new FrameTally();
    for (const { createdAt, frame } of copied) {
      const { home, updates } = framesOf(dbs, ranges, createdAt);
      frames.died(home);
      for (const update of updates) frames.died(update);
      const at = moved.placed[frame];
      dbs.recordFrames.putSync(createdAt, { home: at.segment, updates: [] });
      frames.added(at.segment, at.length + FRAME_HEADER_BYTES, true, undefined, at.offset + at.length);
    }
    tombstones.forEach(({ key, value }, i) => {
      const at = moved.placed[firstTombstone + i];
      dbs.tombstones.removeSync(key);
      dbs.tombstones.putSync([at.segment, key[1]], value);
      frames.died(from);
      frames.added(at.segment, at.length + FRAME_HEADER_BYTES, true, undefined, at.offset + at.length);
    });
    frames.apply(dbs);
  });
  return copied.length;
}

/** The record copy frame of the stored `value` (record-copy-frame.ts): its files where `newPlace` or the index places them. */
export function recordCopyFrame(store: MaintenanceAccess, value: Buffer, newPlace: Map<string, AppendedFrame>): FrameToAppend {
  const record = decodeRecord(value);
  const files = fileIdsOf(record).flatMap((fileId) => {
    const entry = store.dbs.files.get(fileId);
    if (!entry) return [];
    const at = newPlace.get(fileId) ?? entry;
    return [{ fileId, contentType: entry.contentType, kind: entry.kind, segment: at.segment, offset: at.offset, length: at.length, crc: at.crc }];
  });
  return { id: record.id, kind: 'copy', bytes: encodeRecordCopy({ record: recordCopyBytes(value, store.present), files }) };
}

/** Points the entries of the blobs copied out of `segment` at their copies, and moves their bytes in the segments' accounting; call inside the commit. */
function moveBlobs(store: MaintenanceAccess, segment: number, live: LiveContents['blobs'], placed: AppendedFrame[], end: number): void {
  const { dbs } = store;
  let moved = 0;
  let movedBytes = 0;
  const target = placed[0].segment;
  live.forEach(({ key }, i) => {
    const entry = dbs.files.get(key);
    if (!entry || entry.segment !== segment) return;
    const at = placed[i];
    dbs.files.putSync(key, { ...entry, segment: at.segment, offset: at.offset, crc: at.crc });
    moved++;
    movedBytes += entry.length;
  });
  const old = dbs.segments.get(segment);
  if (old) dbs.segments.putSync(segment, { ...old, liveBytes: old.liveBytes - movedBytes, liveBlobs: old.liveBlobs - moved });
  const entry = dbs.segments.get(target) ?? { committed: 0, liveBytes: 0, liveBlobs: 0 };
  dbs.segments.putSync(target, {
    ...entry,
    committed: Math.max(entry.committed, end),
    liveBytes: entry.liveBytes + movedBytes,
    liveBlobs: entry.liveBlobs + moved,
  });
}
