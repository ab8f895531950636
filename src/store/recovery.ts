/**
 * Start-up recovery (docs/STORAGE.md, "Recovery"): with LMDB at its last flushed commit, the
 * creates and changes logged after the position the index covers are replayed up to the first
 * torn frame, into batches for the index head, which the store's first checkpoint commits; then
 * segment tails neither covers are cut, files in blobs/ no segment knows are removed and staging
 * is emptied.
 * After a clean stop nothing is replayed: start-up walks segment entries, never records.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { SEGMENT_ROLL_BYTES } from './blob-log.js';
import { recycledNumberOf, segmentFileName, segmentNumberOf } from './segment-files.js';
import { indexBatches, type IndexOptions } from './create-index.js';
import { checkpointDue, type HeadBatch, type LoggedEntries } from './index-head.js';
import { indexedLogPosition, LOG_POSITION_KEY, type FileKind, type LogPosition, type StoreDatabases } from './lmdb-env.js';
import { recordFromFrame, type RecordPresenter } from './record-codec.js';
import { decodeRecordFrame } from './record-frame.js';
import { attachedFile, decodeChange } from './record-change.js';
import { blobCrcMatches, scanFrames, type ScannedFrame } from './segment-frames.js';

/** Creates, or changes, per batch a replay hands to the index head. */
const REPLAY_BATCH = 1000;

export interface RecoveryResult {
  /** Highest segment number seen in LMDB, on disk or in the log position (0 when none). */
  lastSegment: number;
  /** The segment to keep appending to, when the newest one has room. */
  activeSegment: { segment: number; committed: number } | undefined;
  /** created_at (µs) of the newest record, in LMDB or in `head`, 0 when empty. */
  lastCreatedAt: number;
  /**
   * What the replay leaves for the index head, in log order: batches of creates and changes
   * after the position LMDB covers, for the store's first checkpoint to commit.
   */
  head: HeadBatch[];
  /** Creates found in the log beyond the index's position: in `head`, or checkpointed during the replay. */
  replayed: number;
  /** Changes to events (record-change.ts) found there, likewise. */
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
 * The batches a replay hands to the index head, and where it got to in each segment. Past the
 * checkpoint's size trigger (index-head.ts `checkpointDue`) the
 * batches held are checkpointed into LMDB before the replay goes on, as the running store's head
 * would be, so a long log replays in bounded memory.
 */
class ReplayedBatches {
  readonly head: HeadBatch[] = [];
  /**
   * The segments the replayed batches hold frames in or attach files from: the end (bytes) of
   * the last frame replayed, or of the attached file; an upload's segment is sealed.
   */
  readonly segments = new Map<number, { end: number; sealed: boolean }>();
  replayed = 0;
  changesReplayed = 0;
  /** Creates and changes held, and the bytes of their records: what `checkpointDue` weighs. */
  entries = 0;
  bytes = 0;

  constructor(private readonly dbs: StoreDatabases, private readonly options: IndexOptions) {}

  /**
   * Takes creates and changes logged together in log order, ending at `end`.
   * @throws the lmdb error of a failed checkpoint
   */
  async add(batch: LoggedEntries, end: LogPosition): Promise<void> {
    if (batch.creates.length === 0 && batch.changes.length === 0) return;
    this.head.push({ ...batch, end });
    this.segments.set(end.segment, { end: end.offset, sealed: false });
    for (const change of batch.changes) {
      if (change.type === 'attach') this.segments.set(change.segment, { end: attachedFile(change).offset + change.file.size_bytes, sealed: true });
    }
    this.replayed += batch.creates.length;
    this.changesReplayed += batch.changes.length;
    this.entries += batch.creates.length + batch.changes.length;
    for (const { value } of batch.creates) this.bytes += value.length;
    if (checkpointDue(this)) await this.checkpoint();
  }

  /** Commits the batches held to LMDB, as a checkpoint of the head does (event-store.ts `commitHead`). */
  private async checkpoint(): Promise<void> {
    await indexBatches(this.dbs, this.head.splice(0), this.options);
    this.entries = 0;
    this.bytes = 0;
  }
}

/**
 * Replays the creates and changes logged in segment `segment` from `start` (bytes) into
 * `replay`, in log order, in batches of creates followed by changes to events created before
 * them. Every create is replayed, even one whose record the index already holds: a flush can fall
 * between the puts of a checkpoint and the transaction that counts it and moves the log position
 * (lmdb-js may commit queued puts and a transaction callback in separate transactions), so a
 * create after the position may be in the index without its counters. The head tolerates a
 * create in both (index-head.ts), its checkpoint's puts are idempotent, and the counters and
 * segment accounting of a create are never in the index before the position passes it, so it is
 * counted exactly once.
 * Stops at the first torn frame, or at the first create one of whose blobs fails its CRC:
 * appends are sequential, so nothing after it was acknowledged. A whole create naming a file no
 * frame holds is skipped and reported, never a reason to stop (SkippedCreate). A change's
 * counters and entries move only in the transaction that moves the position past it, so it is
 * applied exactly once too.
 * @param present the store's presenter: it renders the presented JSON a record frame leaves out
 *   (record-codec.ts `recordFromFrame`)
 * @returns the creates skipped
 * @throws the fs error of a failed read, the lmdb error of a failed checkpoint
 */
async function replaySegment(file: string, segment: number, start: number, replay: ReplayedBatches, present: RecordPresenter): Promise<SkippedCreate[]> {
  const handle = await fsp.open(file, 'r');
  const skipped: SkippedCreate[] = [];
  try {
    const blobs = new Map<string, ScannedFrame>();
    let batch: LoggedEntries = { creates: [], changes: [] };
    let end = start;
    const flush = async () => {
      await replay.add(batch, { segment, offset: end });
      batch = { creates: [], changes: [] };
    };
    for await (const frame of scanFrames(handle, start, segment)) {
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
      const { record: bytes, files } = decodeRecordFrame(frame.data!);
      const { record, value } = recordFromFrame(bytes, present);
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
  return skipped;
}

/**
 * Replays the log after the index's position (every segment from the position's on, in
 * order). A store without a position (new, or written by an engine that synced every commit)
 * starts its log after every segment it has.
 * @returns what was replayed, and the position's segment
 * @throws the fs error of a failed read, the lmdb error of a failed commit
 */
async function replayLog(dbs: StoreDatabases, blobsDir: string, options: IndexOptions): Promise<{ replay: ReplayedBatches; skipped: SkippedCreate[]; positionSegment: number }> {
  const onDisk = await segmentsOnDisk(blobsDir);
  const position: LogPosition | undefined = indexedLogPosition(dbs);
  const replay = new ReplayedBatches(dbs, options);
  if (!position) {
    let last = onDisk.at(-1) ?? 0;
    for (const key of dbs.segments.getKeys()) last = Math.max(last, key);
    const start = { segment: last + 1, offset: 0 };
    await dbs.root.transaction(() => dbs.meta.putSync(LOG_POSITION_KEY, start));
    return { replay, skipped: [], positionSegment: start.segment };
  }
  const skipped: SkippedCreate[] = [];
  for (const segment of onDisk.filter((n) => n >= position.segment)) {
    const from = segment === position.segment ? position.offset : 0;
    skipped.push(...await replaySegment(path.join(blobsDir, segmentFileName(segment)), segment, from, replay, options.present));
  }
  return { replay, skipped, positionSegment: position.segment };
}

/**
 * Brings the index up to the log, then DATA_DIR's files in line with the index and the head:
 * what LMDB lacks is replayed into batches for the index head (RecoveryResult `head`), and
 * segment tails past what either covers are cut.
 * @param options how creates and changes checkpointed during the replay are indexed (`shipping`:
 *   finalized events enter the shipping ledger)
 * @throws the fs error when blobs/ or staging/ cannot be read, the lmdb error of a failed commit
 */
export async function recoverStore(dbs: StoreDatabases, blobsDir: string, stagingDir: string, options: IndexOptions): Promise<RecoveryResult> {
  const { replay, skipped, positionSegment } = await replayLog(dbs, blobsDir, options);

  const stagingFiles = await fsp.readdir(stagingDir);
  await Promise.all(stagingFiles.map((f) => fsp.rm(path.join(stagingDir, f), { force: true, recursive: true })));

  // Segments LMDB knows, and those only the replayed head knows (opened since the last checkpoint).
  const segments = new Map<number, { committed: number; sealed: boolean }>();
  for (const { key, value } of dbs.segments.getRange()) segments.set(key, { committed: value.committed, sealed: Boolean(value.sealed) });
  for (const [segment, { end, sealed }] of replay.segments) {
    const entry = segments.get(segment);
    segments.set(segment, { committed: Math.max(entry?.committed ?? 0, end), sealed: sealed || (entry?.sealed ?? false) });
  }
  const newestSegment = Math.max(0, ...segments.keys());

  let lastSegment = Math.max(positionSegment, newestSegment);
  let tailsTruncated = 0;
  for (const [segment, { committed }] of segments) {
    const file = path.join(blobsDir, segmentFileName(segment));
    const size = fs.statSync(file, { throwIfNoEntry: false })?.size;
    if (size !== undefined && size > committed) {
      await fsp.truncate(file, committed);
      tailsTruncated++;
    }
  }

  let orphanedDiskFilesRemoved = 0;
  for (const name of await fsp.readdir(blobsDir)) {
    const recycled = recycledNumberOf(name);
    if (recycled !== undefined) { // kept for the log to overwrite (docs/STORAGE.md, "Recycled segments")
      lastSegment = Math.max(lastSegment, recycled);
      continue;
    }
    const segment = segmentNumberOf(name);
    if (segment !== undefined) lastSegment = Math.max(lastSegment, segment);
    if (segment === undefined || !segments.has(segment)) {
      await fsp.rm(path.join(blobsDir, name), { force: true, recursive: true });
      orphanedDiskFilesRemoved++;
    }
  }

  const newest = segments.has(newestSegment) ? { segment: newestSegment, ...segments.get(newestSegment)! } : undefined;
  const activeSegment = newest && !newest.sealed && newest.committed < SEGMENT_ROLL_BYTES
    && fs.existsSync(path.join(blobsDir, segmentFileName(newest.segment)))
    ? { segment: newest.segment, committed: newest.committed }
    : undefined;
  const [lastKey] = dbs.events.getKeys({ reverse: true, limit: 1 });
  const lastReplayed = replay.head.at(-1)?.creates.at(-1)?.record.created_at;
  return {
    lastSegment,
    activeSegment,
    lastCreatedAt: Math.max(lastKey ?? 0, lastReplayed ?? 0),
    head: replay.head,
    replayed: replay.replayed,
    changesReplayed: replay.changesReplayed,
    skipped,
    stagingFilesRemoved: stagingFiles.length,
    tailsTruncated,
    orphanedDiskFilesRemoved,
  };
}
