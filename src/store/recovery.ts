/**
 * Start-up recovery (docs/STORAGE.md, "Recovery"): with LMDB at its last flushed commit, the
 * creates and changes logged after the position the index covers are replayed
 * into it up to the first torn frame; then segment tails the index does not
 * cover are cut, files in blobs/ no segment entry knows are removed and staging is emptied.
 * After a clean stop nothing is replayed: start-up walks segment entries, never records.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { SEGMENT_ROLL_BYTES, segmentFileName, segmentNumberOf } from './blob-log.js';
import { indexLogged, type IndexOptions } from './create-index.js';
import type { LoggedEntries } from './index-head.js';
import { indexedLogPosition, LOG_POSITION_KEY, type FileKind, type LogPosition, type StoreDatabases } from './lmdb-env.js';
import { decodeRecord } from './record-codec.js';
import { decodeRecordFrame } from './record-frame.js';
import { decodeChange } from './record-change.js';
import { blobCrcMatches, scanFrames, type ScannedFrame } from './segment-frames.js';

/** Creates and changes indexed per replay step. */
const REPLAY_BATCH = 1000;

export interface RecoveryResult {
  /** Highest segment number seen in LMDB, on disk or in the log position (0 when none). */
  lastSegment: number;
  /** The segment to keep appending to, when the newest one has room. */
  activeSegment: { segment: number; committed: number } | undefined;
  /** created_at (µs) of the newest record, 0 when empty. */
  lastCreatedAt: number;
  /** Creates found in the log beyond the index's position and indexed (again) now. */
  replayed: number;
  /** Changes to events (record-change.ts) found there and applied now (or dropped, their event deleted). */
  changesReplayed: number;
  /** Creates skipped by the replay: whole frames naming a file no frame before them holds. */
  skipped: SkippedCreate[];
  stagingFilesRemoved: number;
  tailsTruncated: number;
  orphanedDiskFilesRemoved: number;
}

/**
 * A create the replay could not index and went past: its record frame is whole, but a file it
 * names is in no frame before it (an id that was not a UUID, so its blob frame's 16-byte id
 * does not read back the same). Nothing of it is indexed; the creates after it are.
 */
export interface SkippedCreate {
  segment: number;
  /** Byte offset of the record frame in the segment. */
  offset: number;
  eventId: string;
  /** The file ids no frame holds. */
  missingFiles: string[];
}

/** Segment numbers of the files in blobs/, ascending. */
async function segmentsOnDisk(blobsDir: string): Promise<number[]> {
  return (await fsp.readdir(blobsDir)).map(segmentNumberOf).filter((n): n is number => n !== undefined).sort((a, b) => a - b);
}

/**
 * Indexes the creates and changes logged in segment `segment` from `start` (bytes), in log order:
 * each step indexes its creates, then its changes, which are to events created before them. Every create is applied,
 * even one whose record the index already holds: a flush can fall between the puts of a batch
 * and the transaction that counts it and moves the log position (lmdb-js may commit queued puts
 * and a transaction callback in separate transactions), so
 * a create after the position may be in the index without its counters. Puts are idempotent,
 * and the counters and segment accounting of a create are never in the index before the
 * position passes it, so replaying it again counts it exactly once.
 * Stops at the first torn frame, or at the first create one of whose blobs fails its CRC:
 * appends are sequential, so nothing after it was acknowledged. A whole create naming a file no
 * frame holds is skipped and reported, never a reason to stop (SkippedCreate). A change's
 * counters and entries move only in the transaction that moves the position past it, so it is
 * applied exactly once too.
 * @returns how many creates and changes were indexed, and the creates skipped
 */
async function replaySegment(dbs: StoreDatabases, file: string, segment: number, start: number, options: IndexOptions): Promise<{ replayed: number; changesReplayed: number; skipped: SkippedCreate[] }> {
  const handle = await fsp.open(file, 'r');
  let replayed = 0;
  let changesReplayed = 0;
  const skipped: SkippedCreate[] = [];
  try {
    const blobs = new Map<string, ScannedFrame>();
    let batch: LoggedEntries = { creates: [], changes: [] };
    let end = start;
    const flush = async () => {
      if (batch.creates.length === 0 && batch.changes.length === 0) return;
      await indexLogged(dbs, batch, { segment, offset: end }, options);
      replayed += batch.creates.length;
      changesReplayed += batch.changes.length;
      batch = { creates: [], changes: [] };
    };
    for await (const frame of scanFrames(handle, start)) {
      if (frame.kind === 'change') {
        batch.changes.push(decodeChange(frame.data!));
        end = frame.offset + frame.length;
        if (batch.changes.length >= REPLAY_BATCH) await flush();
        continue;
      }
      if (frame.kind !== 'record') {
        blobs.set(frame.id, frame);
        continue;
      }
      const { value, files } = decodeRecordFrame(frame.data!);
      const record = decodeRecord(value);
      const placed = files.map(({ fileId, contentType }) => ({ fileId, contentType, frame: blobs.get(fileId) }));
      const missingFiles = placed.filter(({ frame: blob }) => !blob).map(({ fileId }) => fileId);
      if (missingFiles.length > 0) {
        skipped.push({ segment, offset: frame.offset, eventId: record.id, missingFiles });
        end = frame.offset + frame.length;
        blobs.clear();
        continue;
      }
      const whole = await Promise.all(placed.map(({ frame: blob }) => blobCrcMatches(handle, blob!)));
      if (whole.includes(false)) break;
      end = frame.offset + frame.length;
      blobs.clear();
      batch.creates.push({
        record,
        value,
        files: placed.map(({ fileId, contentType, frame: blob }) => ({
          fileId, contentType, kind: blob!.kind as FileKind,
          at: { segment, offset: blob!.offset, length: blob!.length, crc: blob!.crc },
        })),
      });
      if (batch.creates.length >= REPLAY_BATCH) await flush();
    }
    await flush();
  } finally {
    await handle.close();
  }
  return { replayed, changesReplayed, skipped };
}

/**
 * Replays the log after the index's position (every segment from the position's on, in
 * order). A store without a position (new, or written by an engine that synced every commit)
 * starts its log after every segment it has.
 * @returns creates and changes replayed, and the position's segment
 */
async function replayLog(dbs: StoreDatabases, blobsDir: string, options: IndexOptions): Promise<{ replayed: number; changesReplayed: number; skipped: SkippedCreate[]; positionSegment: number }> {
  const onDisk = await segmentsOnDisk(blobsDir);
  const position: LogPosition | undefined = indexedLogPosition(dbs);
  if (!position) {
    let last = onDisk.at(-1) ?? 0;
    for (const key of dbs.segments.getKeys()) last = Math.max(last, key);
    const start = { segment: last + 1, offset: 0 };
    await dbs.root.transaction(() => dbs.meta.putSync(LOG_POSITION_KEY, start));
    return { replayed: 0, changesReplayed: 0, skipped: [], positionSegment: start.segment };
  }
  let replayed = 0;
  let changesReplayed = 0;
  const skipped: SkippedCreate[] = [];
  for (const segment of onDisk.filter((n) => n >= position.segment)) {
    const from = segment === position.segment ? position.offset : 0;
    const result = await replaySegment(dbs, path.join(blobsDir, segmentFileName(segment)), segment, from, options);
    replayed += result.replayed;
    changesReplayed += result.changesReplayed;
    skipped.push(...result.skipped);
  }
  return { replayed, changesReplayed, skipped, positionSegment: position.segment };
}

/**
 * Brings the index up to the log, then DATA_DIR's files in line with the index.
 * @param options how replayed creates and changes are indexed (`shipping`: replayed finalized
 *   events enter the shipping ledger)
 * @throws the fs error when blobs/ or staging/ cannot be read, the lmdb error of a failed commit
 */
export async function recoverStore(dbs: StoreDatabases, blobsDir: string, stagingDir: string, options: IndexOptions): Promise<RecoveryResult> {
  const { replayed, changesReplayed, skipped, positionSegment } = await replayLog(dbs, blobsDir, options);

  const stagingFiles = await fsp.readdir(stagingDir);
  await Promise.all(stagingFiles.map((f) => fsp.rm(path.join(stagingDir, f), { force: true, recursive: true })));

  let lastSegment = positionSegment;
  let tailsTruncated = 0;
  let newest: { segment: number; committed: number; sealed: boolean } | undefined;
  const known = new Set<number>();
  for (const { key, value } of dbs.segments.getRange()) {
    known.add(key);
    lastSegment = Math.max(lastSegment, key);
    newest = { segment: key, committed: value.committed, sealed: Boolean(value.sealed) };
    const file = path.join(blobsDir, segmentFileName(key));
    const size = fs.statSync(file, { throwIfNoEntry: false })?.size;
    if (size !== undefined && size > value.committed) {
      await fsp.truncate(file, value.committed);
      tailsTruncated++;
    }
  }

  let orphanedDiskFilesRemoved = 0;
  for (const name of await fsp.readdir(blobsDir)) {
    const segment = segmentNumberOf(name);
    if (segment !== undefined) lastSegment = Math.max(lastSegment, segment);
    if (segment === undefined || !known.has(segment)) {
      await fsp.rm(path.join(blobsDir, name), { force: true, recursive: true });
      orphanedDiskFilesRemoved++;
    }
  }

  const activeSegment = newest && !newest.sealed && newest.committed < SEGMENT_ROLL_BYTES
    && fs.existsSync(path.join(blobsDir, segmentFileName(newest.segment)))
    ? { segment: newest.segment, committed: newest.committed }
    : undefined;
  const [lastKey] = dbs.events.getKeys({ reverse: true, limit: 1 });
  return {
    lastSegment,
    activeSegment,
    lastCreatedAt: lastKey ?? 0,
    replayed,
    changesReplayed,
    skipped,
    stagingFilesRemoved: stagingFiles.length,
    tailsTruncated,
    orphanedDiskFilesRemoved,
  };
}
