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
import { SEGMENT_ROLL_BYTES } from '../log/blob-log.js';
import { recycledNumberOf, segmentFileName, segmentNumberOf } from '../log/segment-files.js';
import { indexBatches, type IndexOptions } from './checkpoint-writer.js';
import { checkpointDue } from '../head/checkpoint-pace.js';
import type { HeadBatch, LoggedEntries } from '../head/index-head.js';
import { indexedLogPosition, LOG_POSITION_KEY, type LogPosition, type StoreDatabases } from '../index/lmdb-env.js';
import type { FileKind } from '../log/log-entries.js';
import { recordFromFrame, type RecordPresenter } from '../index/record-codec.js';
import { decodeRecordFrame } from '../log/record-frame.js';
import { attachedFile, decodeChange } from '../index/record-change.js';
import { blobCrcMatches, FRAME_HEADER_BYTES, readFrameHeader, scanFrames, scanSegment, segmentTag, type DamagedBytes, type ScannedFrame } from '../log/segment-frames.js';
import { quarantine, type LogDamage, type QuarantinedBytes } from '../log/quarantine.js';

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
  /** Damage the replay went past, or found in a cut tail, each copied into quarantine/ (quarantine.ts). */
  quarantined: QuarantinedBytes[];
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

/** The folders of DATA_DIR recovery works in. */
export interface RecoveryDirs {
  blobsDir: string;
  stagingDir: string;
  /** quarantine.ts `quarantineDirOf`. */
  quarantineDir: string;
}

/**
 * The damage a segment's cut tail holds, when the tail starts with a header of a frame of the
 * segment itself, followed by some of its data, in a segment the log had moved on from: that
 * frame was written whole once (only the active segment's last append can be torn), so it is
 * damage, not a torn append; its data may end with the file's end, the file cut short after it.
 * A tail of zeros written ahead, of a recycled file's former frames (another segment's tag), or
 * of a write that failed after its first header (zeros follow it) before the log gave the
 * segment up (blob-log.ts `abandon`) is none.
 * @param committed where the tail starts (bytes)
 * @throws the fs error of a failed read
 */
async function damagedTail(file: string, segment: number, committed: number): Promise<LogDamage | undefined> {
  const handle = await fsp.open(file, 'r');
  try {
    const header = await readFrameHeader(handle, committed);
    if (!header || header.tag !== segmentTag(segment)) return undefined;
    const dataStart = committed + FRAME_HEADER_BYTES;
    // A header written alone: zeros follow it, or the file's end. A frame whose data the file's end
    // cuts off after some of it was cut off with the file, whole when its segment rolled.
    if (await allZero(handle, dataStart, header.length)) return undefined;
    return {
      segment,
      offset: committed,
      end: dataStart + header.length,
      lostEvents: header.kind === 'record' ? [header.id] : [],
      lostChanges: header.kind === 'change' ? [header.id] : [],
    };
  } finally {
    await handle.close();
  }
}

/**
 * Bytes `from`..`end` of a segment the index says were written, gone from its file (the file
 * missing, or cut short): damage with nothing to copy, naming the files the index places there
 * (docs/STORAGE.md, "Damage in the log"). Creates only the log held there cannot be named.
 */
function missingBytes(dbs: StoreDatabases, segment: number, from: number, end: number): LogDamage {
  const lostFiles: string[] = [];
  for (const { key, value } of dbs.files.getRange()) {
    if (value.segment === segment && value.offset + value.length > from) lostFiles.push(key);
  }
  return { segment, offset: from, end, lostEvents: [], lostChanges: [], missing: true, lostFiles };
}

/**
 * Where the whole frames of segment `segment`'s file that follow `from` (bytes) end: `from` when
 * none follows.
 * @throws the fs error of a failed read
 */
async function wholeFramesEnd(file: string, segment: number, from: number): Promise<number> {
  const handle = await fsp.open(file, 'r');
  try {
    let end = from;
    for await (const frame of scanFrames(handle, from, segment)) end = frame.offset + frame.length;
    return end;
  } finally {
    await handle.close();
  }
}

/** Whether the `length` bytes at `position` of an open file are all zeros; bytes past the file's end count as zeros. */
async function allZero(handle: fsp.FileHandle, position: number, length: number): Promise<boolean> {
  const chunk = Buffer.allocUnsafe(Math.min(length, 1024 * 1024));
  for (let at = position; at < position + length;) {
    const { bytesRead } = await handle.read(chunk, 0, Math.min(chunk.length, position + length - at), at);
    if (bytesRead === 0) return true;
    if (chunk.subarray(0, bytesRead).some((byte) => byte !== 0)) return false;
    at += bytesRead;
  }
  return true;
}

/** Segment numbers of the files in blobs/, ascending. */
async function segmentsOnDisk(blobsDir: string): Promise<number[]> {
  return (await fsp.readdir(blobsDir)).map(segmentNumberOf).filter((n): n is number => n !== undefined).sort((a, b) => a - b);
}

/**
 * The batches a replay hands to the index head, and where it got to in each segment. Past the
 * checkpoint's size trigger (checkpoint-pace.ts `checkpointDue`) the
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

/** What the replay of one segment found besides what it replayed. */
interface SegmentFindings {
  skipped: SkippedCreate[];
  damaged: LogDamage[];
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
 * Stops at the torn tail: a torn frame with no whole frame after it (the last append, cut by a
 * crash). Damage with whole frames after it (docs/STORAGE.md, "Damage in the log") is reported
 * and gone past: the creates and changes whose frames it holds are lost, the rest replayed; a
 * create one of whose blobs fails its CRC is lost likewise, with its frames. A whole create naming
 * a file no frame holds is skipped and reported (SkippedCreate), or counted lost when damage
 * since the create before it took the file's frame. A change's counters and entries move only in
 * the transaction that moves the position past it, so it is applied exactly once too.
 * @param present the store's presenter: it renders the presented JSON a record frame leaves out
 *   (record-codec.ts `recordFromFrame`)
 * @returns the creates skipped and the damage gone past, in log order
 * @throws the fs error of a failed read, the lmdb error of a failed checkpoint
 */
async function replaySegment(file: string, segment: number, start: number, replay: ReplayedBatches, present: RecordPresenter): Promise<SegmentFindings> {
  const handle = await fsp.open(file, 'r');
  const findings: SegmentFindings = { skipped: [], damaged: [] };
  try {
    const blobs = new Map<string, ScannedFrame>();
    /** Damage since the last create: a create after it missing a file lost the file to it. */
    let damageSinceCreate: LogDamage | undefined;
    let batch: LoggedEntries = { creates: [], changes: [] };
    let end = start;
    const flush = async () => {
      await replay.add(batch, { segment, offset: end });
      batch = { creates: [], changes: [] };
    };
    for await (const frame of scanSegment(handle, start, segment)) {
      if (frame.kind === 'damaged') {
        damageSinceCreate = damageOf(segment, frame);
        findings.damaged.push(damageSinceCreate);
        continue;
      }
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
      const whole = missingFiles.length > 0 ? [] : await Promise.all(placed.map(({ frame: blob }) => blobCrcMatches(handle, blob!)));
      const recordEnd = frame.offset + frame.length;
      blobs.clear();
      if (missingFiles.length > 0 && damageSinceCreate) {
        damageSinceCreate.end = recordEnd; // the create's frames after the damage go with it
        damageSinceCreate.lostEvents.push(record.id);
      } else if (missingFiles.length > 0) {
        findings.skipped.push({ segment, offset: frame.offset, eventId: record.id, missingFiles });
      } else if (whole.includes(false)) {
        const first = Math.min(...placed.map(({ frame: blob }) => blob!.offset - FRAME_HEADER_BYTES));
        findings.damaged.push({ segment, offset: first, end: recordEnd, lostEvents: [record.id], lostChanges: [] });
      }
      damageSinceCreate = undefined;
      if (findings.damaged.at(-1)?.end === recordEnd) continue; // lost: `end` stays before it
      if (missingFiles.length === 0) {
        batch.creates.push({
          record,
          value,
          files: placed.map(({ fileId, contentType, frame: blob }) => ({
            fileId, contentType, kind: blob!.kind as FileKind,
            at: { segment, offset: blob!.offset, length: blob!.length, crc: blob!.crc },
          })),
        });
      }
      end = recordEnd;
      if (batch.creates.length >= REPLAY_BATCH) await flush();
    }
    await flush();
    // Damage with nothing whole replayed after it is the torn tail of the last append: cut, not quarantined.
    while ((findings.damaged.at(-1)?.offset ?? -1) >= end) findings.damaged.pop();
  } finally {
    await handle.close();
  }
  return findings;
}

/** The damage `scanSegment` reported, with the create or change its first frame held when its header still names it. */
function damageOf(segment: number, { offset, end, frame }: DamagedBytes): LogDamage {
  return {
    segment, offset, end,
    lostEvents: frame?.kind === 'record' ? [frame.id] : [],
    lostChanges: frame?.kind === 'change' ? [frame.id] : [],
  };
}

/**
 * Replays the log after the index's position (every segment from the position's on, in
 * order). A store without a position (new, or written by an engine that synced every commit)
 * starts its log after every segment it has.
 * @returns what was replayed, and the position's segment
 * @throws the fs error of a failed read, the lmdb error of a failed commit
 */
async function replayLog(dbs: StoreDatabases, blobsDir: string, options: IndexOptions): Promise<SegmentFindings & { replay: ReplayedBatches; positionSegment: number }> {
  const onDisk = await segmentsOnDisk(blobsDir);
  const position: LogPosition | undefined = indexedLogPosition(dbs);
  const replay = new ReplayedBatches(dbs, options);
  if (!position) {
    let last = onDisk.at(-1) ?? 0;
    for (const key of dbs.segments.getKeys()) last = Math.max(last, key);
    const start = { segment: last + 1, offset: 0 };
    await dbs.root.transaction(() => dbs.meta.putSync(LOG_POSITION_KEY, start));
    return { replay, skipped: [], damaged: [], positionSegment: start.segment };
  }
  const findings: SegmentFindings = { skipped: [], damaged: [] };
  for (const segment of onDisk.filter((n) => n >= position.segment)) {
    const from = segment === position.segment ? position.offset : 0;
    const { skipped, damaged } = await replaySegment(path.join(blobsDir, segmentFileName(segment)), segment, from, replay, options.present);
    findings.skipped.push(...skipped);
    findings.damaged.push(...damaged);
  }
  return { replay, ...findings, positionSegment: position.segment };
}

/**
 * Brings the index up to the log, then DATA_DIR's files in line with the index and the head:
 * what LMDB lacks is replayed into batches for the index head (RecoveryResult `head`), damage
 * the replay went past is quarantined, and segment tails past what either covers are cut (a
 * tail that is a frame of its segment, in a segment the log had moved on from, is quarantined
 * first: docs/STORAGE.md, "Damage in the log").
 * @param options how creates and changes checkpointed during the replay are indexed (`shipping`:
 *   finalized events enter the shipping ledger)
 * @throws the fs error when blobs/ or staging/ cannot be read, the lmdb error of a failed commit
 */
export async function recoverStore(dbs: StoreDatabases, dirs: RecoveryDirs, options: IndexOptions): Promise<RecoveryResult> {
  const { blobsDir, stagingDir } = dirs;
  const { replay, skipped, damaged, positionSegment } = await replayLog(dbs, blobsDir, options);
  const quarantined: QuarantinedBytes[] = [];
  for (const damage of damaged) quarantined.push(await quarantine(blobsDir, dirs.quarantineDir, damage));

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
  // The log appends to the newest unsealed segment; an upload's segment is sealed when attached.
  const newestLogSegment = Math.max(0, ...[...segments].filter(([, { sealed }]) => !sealed).map(([segment]) => segment));

  let lastSegment = Math.max(positionSegment, newestSegment);
  let tailsTruncated = 0;
  for (const [segment, entry] of segments) {
    const file = path.join(blobsDir, segmentFileName(segment));
    const size = fs.statSync(file, { throwIfNoEntry: false })?.size;
    if ((size ?? 0) < entry.committed) {
      quarantined.push(await quarantine(blobsDir, dirs.quarantineDir, missingBytes(dbs, segment, size ?? 0, entry.committed)));
      continue;
    }
    if (size === undefined || size === entry.committed) continue;
    // A segment the log moved on from keeps the whole frames past its recorded length: a store
    // before 2026-12 recorded a segment's length from its images alone when a checkpoint spanned a roll.
    const committed = segment < newestLogSegment ? await wholeFramesEnd(file, segment, entry.committed) : entry.committed;
    if (size <= committed) continue;
    const damage = segment < newestLogSegment ? await damagedTail(file, segment, committed) : undefined;
    if (damage) quarantined.push(await quarantine(blobsDir, dirs.quarantineDir, damage));
    await fsp.truncate(file, committed);
    tailsTruncated++;
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
    quarantined,
    stagingFilesRemoved: stagingFiles.length,
    tailsTruncated,
    orphanedDiskFilesRemoved,
  };
}
