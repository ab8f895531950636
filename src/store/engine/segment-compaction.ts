/**
 * Compaction (docs/STORAGE.md, "Reclaiming space"): what is live in a segment whose live share fell
 * low is copied forward into the active segment, so the segment holds nothing live and the
 * lifecycle worker deletes it. What is live is its live blobs, and the frames live events depend on
 * (docs/STORAGE.md, "Two copies of every record"): each event with a blob, a home frame or an
 * update frame there gets a record copy, its whole record as the index holds it with the places of
 * its files; each tombstone still needed there is logged again.
 */
import { fileIdsOf } from '../index/index-keys.js';
import { decodeRecord, frameRecordBytes } from '../index/record-codec.js';
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
  const { dbs } = store;
  const blobs = [...dbs.files.getRange()].filter(({ value }) => value.segment === segment);
  const events = new Set<number>(blobs.map(({ value }) => value.event));
  const entry = dbs.segments.get(segment);
  if (entry?.firstCreate !== undefined && entry.lastCreate !== undefined) {
    const ranges = CreateRanges.read(dbs);
    for (const createdAt of dbs.events.getKeys({ start: entry.firstCreate, end: entry.lastCreate + 1 })) {
      if (framesOf(dbs, ranges, createdAt).home === segment) events.add(createdAt);
    }
  }
  for (const { key, value } of dbs.recordFrames.getRange()) if (value.home === segment || value.updates.includes(segment)) events.add(key);
  const tombstones = [...dbs.tombstones.getRange({ start: [segment], end: [segment + 1] })];
  return { blobs, events: [...events].filter((createdAt) => dbs.events.doesExist(createdAt)).sort((a, b) => a - b), tombstones };
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
    const { dbs } = store;
    const live = liveContents(store, segment);
    if (live.blobs.length === 0 && live.events.length === 0 && live.tombstones.length === 0) return;
    const blobs = await Promise.all(live.blobs.map(async ({ key, value }) => {
      const bytes = Buffer.allocUnsafe(value.length);
      await store.blobs.read(segment, value.offset, bytes);
      return { id: key, kind: value.kind, bytes };
    }));
    const movedBlobs = blobs.length > 0 ? await store.appender.append(blobs) : undefined;
    const newPlace = new Map<string, AppendedFrame>(live.blobs.map(({ key }, i) => [key, movedBlobs!.placed[i]]));
    const records: FrameToAppend[] = [];
    const copied: { createdAt: number; frame: number }[] = [];
    for (const createdAt of live.events) {
      const value = dbs.events.getBinary(createdAt);
      if (!value) continue;
      const record = decodeRecord(value);
      const files = fileIdsOf(record).flatMap((fileId) => {
        const entry = dbs.files.get(fileId);
        if (!entry) return [];
        const at = newPlace.get(fileId) ?? entry;
        return [{ fileId, contentType: entry.contentType, kind: entry.kind, segment: at.segment, offset: at.offset, length: at.length, crc: at.crc }];
      });
      copied.push({ createdAt, frame: records.length });
      records.push({ id: record.id, kind: 'copy', bytes: encodeRecordCopy({ record: frameRecordBytes(value), files }) });
    }
    const firstTombstone = records.length;
    for (const { key, value } of live.tombstones) records.push({ id: value.id, kind: 'tombstone', bytes: encodeTombstone(key[1]) });
    const movedRecords = records.length > 0 ? await store.appender.append(records) : undefined;
    await store.commitDurably(() => {
      if (movedBlobs) moveBlobs(store, segment, live.blobs, movedBlobs.placed, movedBlobs.end);
      if (!movedRecords) return;
      const ranges = CreateRanges.read(dbs);
      const frames = new FrameTally();
      for (const { createdAt, frame } of copied) {
        const { home, updates } = framesOf(dbs, ranges, createdAt);
        frames.died(home);
        for (const update of updates) frames.died(update);
        const at = movedRecords.placed[frame];
        dbs.recordFrames.putSync(createdAt, { home: at.segment, updates: [] });
        frames.added(at.segment, at.length + FRAME_HEADER_BYTES, true, undefined, at.offset + at.length);
      }
      live.tombstones.forEach(({ key, value }, i) => {
        const at = movedRecords.placed[firstTombstone + i];
        dbs.tombstones.removeSync(key);
        dbs.tombstones.putSync([at.segment, key[1]], value);
        frames.died(segment);
        frames.added(at.segment, at.length + FRAME_HEADER_BYTES, true, undefined, at.offset + at.length);
      });
      frames.apply(dbs);
    });
  });
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
