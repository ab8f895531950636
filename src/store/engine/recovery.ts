/**
 * Start-up recovery (docs/STORAGE.md, "Recovery"): with LMDB at its last flushed commit, the
 * creates and updates logged after the position the index covers are replayed up to the first
 * torn frame, into batches for the head, which the store's first checkpoint commits; then
 * segment tails neither covers are cut, files in blobs/ no segment knows are removed and staging
 * is emptied.
 * After a clean stop nothing is replayed: start-up walks segment entries, never records.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { HeadBatch } from '../head/head.js';
import { indexedLogPosition, LOG_POSITION_KEY, type LogPosition, type StoreDatabases } from '../index/lmdb-env.js';
import { SEGMENT_ROLL_BYTES } from '../log/blob-log.js';
import { quarantine, type LogDamage, type QuarantinedBytes } from '../log/quarantine.js';
import { recycledNumberOf, segmentFileName, segmentNumberOf } from '../log/segment-files.js';
import type { IndexOptions } from './checkpoint-writer.js';
import { explainQuarantineFailure } from './data-dir-check.js';
import { damagedTail, missingBytes, wholeFramesEnd } from './log-damage.js';
import { ReplayedBatches, replaySegment, type SegmentFindings, type SkippedCreate } from './log-replay.js';
import { FrameTally } from './frame-accounting.js';
import { RebuildPlan } from './rebuild-plan.js';
import { FRAME_HEADER_BYTES } from '../log/segment-frames.js';
import { encodeTombstone } from '../log/record-copy-frame.js';
import { IndexDamaged } from '../index/index-file-check.js';
import { blocksDirOf, StoredEvents } from '../read/stored-events.js';
import { BlockDamaged } from '../block/block-format.js';
import { removeUnnamedBlocks } from './checkpoint-block.js';
import { isGarbageSegment, unknownSegmentProblem } from './unknown-segments.js';

/**
 * Where `meta` marks an index a rebuild has just created (index-rebuild.ts): its first open
 * replays the whole log with a RebuildPlan (docs/STORAGE.md, "A damaged index").
 */
export const REBUILD_KEY = 'rebuildFromLog';

export interface RecoveryResult {
  /** Highest segment number seen in LMDB, on disk or in the log position (0 when none). */
  lastSegment: number;
  /** The segment to keep appending to, when the newest one has room. */
  activeSegment: { segment: number; committed: number } | undefined;
  /** created_at (µs) of the newest record, in LMDB or in `head`, 0 when empty. */
  lastCreatedAt: number;
  /**
   * What the replay leaves for the head, in log order: batches of creates and updates
   * after the position LMDB covers, for the store's first checkpoint to commit.
   */
  head: HeadBatch[];
  /** Creates found in the log beyond the index's position: in `head`, or checkpointed during the replay. */
  replayed: number;
  /** Updates to events (record-update.ts) found there, likewise. */
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
 * quarantine.ts `quarantine`, with a folder in the place of the entry's file told as a start-up
 * error with its fix (data-dir-check.ts `explainQuarantineFailure`).
 */
async function keepDamaged(blobsDir: string, quarantineDir: string, damage: LogDamage): Promise<QuarantinedBytes> {
  try {
    return await quarantine(blobsDir, quarantineDir, damage);
  } catch (err) {
    throw explainQuarantineFailure(err);
  }
}

/** The folders of DATA_DIR recovery works in. */
export interface RecoveryDirs {
  blobsDir: string;
  stagingDir: string;
  /** quarantine.ts `quarantineDirOf`. */
  quarantineDir: string;
}

/** Segment numbers of the files in blobs/, ascending. */
async function segmentsOnDisk(blobsDir: string): Promise<number[]> {
  return (await fsp.readdir(blobsDir)).map(segmentNumberOf).filter((n): n is number => n !== undefined).sort((a, b) => a - b);
}

/**
 * Replays the log after the index's position (every segment from the position's on, in
 * order). A store without a position (new, or written by an engine that synced every commit)
 * starts its log after every segment it has.
 * @returns what was replayed, and the position's segment
 * @throws the fs error of a failed read, the lmdb error of a failed commit
 */
async function replayLog(stored: StoredEvents, blobsDir: string, options: IndexOptions): Promise<SegmentFindings & { replay: ReplayedBatches; positionSegment: number; rebuilt: boolean }> {
  const { dbs } = stored;
  const onDisk = await segmentsOnDisk(blobsDir);
  const position: LogPosition | undefined = indexedLogPosition(dbs);
  const replay = new ReplayedBatches(stored, options);
  if (!position) {
    let last = onDisk.at(-1) ?? 0;
    for (const key of dbs.segments.getKeys()) last = Math.max(last, key);
    const start = { segment: last + 1, offset: 0 };
    await dbs.root.transaction(() => dbs.meta.putSync(LOG_POSITION_KEY, start));
    return { replay, skipped: [], damaged: [], positionSegment: start.segment, rebuilt: false };
  }
  const findings: SegmentFindings = { skipped: [], damaged: [] };
  const replayed = onDisk.filter((n) => n >= position.segment);
  const plan = dbs.meta.get(REBUILD_KEY) === true ? await RebuildPlan.scan(blobsDir, replayed) : undefined;
  for (const segment of replayed) {
    const from = segment === position.segment ? position.offset : 0;
    const { skipped, damaged } = await replaySegment(path.join(blobsDir, segmentFileName(segment)), segment, from, replay, options.present, plan);
    findings.skipped.push(...skipped);
    findings.damaged.push(...damaged);
  }
  if (plan) await finishRebuild(dbs, replay, plan);
  return { replay, ...findings, positionSegment: position.segment, rebuilt: plan !== undefined };
}

/**
 * Ends a rebuild's replay: every batch it holds is committed (record copies are out of created_at
 * order, which the head does not allow), the tombstones whose events' homes are still in the log
 * are entered as live (frame-accounting.ts), and the index is no longer marked as a rebuild's.
 * @throws the lmdb error of a failed commit
 */
async function finishRebuild(dbs: StoreDatabases, replay: ReplayedBatches, plan: RebuildPlan): Promise<void> {
  await replay.finish();
  await dbs.root.transaction(() => {
    const tally = new FrameTally();
    for (const { segment, createdAt, id, home } of plan.keptTombstones()) {
      dbs.tombstones.putSync([segment, createdAt], { id, home });
      tally.added(segment, encodeTombstone(createdAt).length + FRAME_HEADER_BYTES, true);
    }
    tally.apply(dbs);
    dbs.meta.removeSync(REBUILD_KEY);
  });
}

/** A segment as recovery weighs it: its committed length (bytes) and whether it is sealed. */
type KnownSegment = { committed: number; sealed: boolean };

/** Segments LMDB knows, and those only the replayed head knows (opened since the last checkpoint). */
function knownSegments(dbs: StoreDatabases, replay: ReplayedBatches): Map<number, KnownSegment> {
  const segments = new Map<number, KnownSegment>();
  for (const { key, value } of dbs.segments.getRange()) segments.set(key, { committed: value.committed, sealed: Boolean(value.sealed) });
  for (const [segment, { end, sealed }] of replay.segments) {
    const entry = segments.get(segment);
    segments.set(segment, { committed: Math.max(entry?.committed ?? 0, end), sealed: sealed || (entry?.sealed ?? false) });
  }
  return segments;
}

/**
 * Cuts each segment's tail past its committed length, quarantining first the bytes the index says
 * were written and the file lacks, and a tail that is a frame of its segment in a segment the log
 * had moved on from (docs/STORAGE.md, "Damage in the log").
 * @param quarantined where what is quarantined is reported
 * @returns how many tails were cut
 * @throws the fs error of a failed read, copy or truncate
 */
async function cutTails(dbs: StoreDatabases, dirs: RecoveryDirs, segments: Map<number, KnownSegment>, quarantined: QuarantinedBytes[]): Promise<number> {
  const { blobsDir, quarantineDir } = dirs;
  // The log appends to the newest unsealed segment; an upload's segment is sealed when attached.
  const newestLogSegment = Math.max(0, ...[...segments].filter(([, { sealed }]) => !sealed).map(([segment]) => segment));
  let tailsTruncated = 0;
  for (const [segment, entry] of segments) {
    const file = path.join(blobsDir, segmentFileName(segment));
    const size = fs.statSync(file, { throwIfNoEntry: false })?.size;
    if ((size ?? 0) < entry.committed) {
      quarantined.push(await keepDamaged(blobsDir, quarantineDir, missingBytes(dbs, segment, size ?? 0, entry.committed)));
      continue;
    }
    if (size === undefined || size === entry.committed) continue;
    // A segment the log moved on from keeps the whole frames past its recorded length: a store
    // before 2026-12 recorded a segment's length from its images alone when a checkpoint spanned a roll.
    const committed = segment < newestLogSegment ? await wholeFramesEnd(file, segment, entry.committed) : entry.committed;
    if (size <= committed) continue;
    const damage = segment < newestLogSegment ? await damagedTail(file, segment, committed) : undefined;
    if (damage) quarantined.push(await keepDamaged(blobsDir, quarantineDir, damage));
    await fsp.truncate(file, committed);
    tailsTruncated++;
  }
  return tailsTruncated;
}

/**
 * Removes the files of blobs/ no known segment is, keeping recycled ones for the log to overwrite
 * (docs/STORAGE.md, "Recycled segments"). A segment file no segment entry knows is removed only
 * when it is garbage (unknown-segments.ts): after a rebuild, whose replay passed over the
 * segments holding nothing live, any.
 * @param rebuilt whether this open ends a rebuild (`REBUILD_KEY`)
 * @returns how many were removed, and the highest segment number on disk (recycled ones too; 0 when none)
 * @throws IndexDamaged when an unknown segment file holds records of events (`unknownSegmentProblem`),
 *   with the index closed
 * @throws the fs error of a failed read or removal
 */
async function removeOrphans(dbs: StoreDatabases, blobsDir: string, segments: Map<number, KnownSegment>, rebuilt: boolean): Promise<{ removed: number; lastSegment: number }> {
  let removed = 0;
  let lastSegment = 0;
  for (const name of await fsp.readdir(blobsDir)) {
    const recycled = recycledNumberOf(name);
    if (recycled !== undefined) {
      lastSegment = Math.max(lastSegment, recycled);
      continue;
    }
    const segment = segmentNumberOf(name);
    if (segment !== undefined) lastSegment = Math.max(lastSegment, segment);
    if (segment !== undefined && !segments.has(segment) && !rebuilt && !(await isGarbageSegment(dbs, blobsDir, segment))) {
      await dbs.root.close(); // as assertIndexCoversLog does: the refused open leaves nothing mapped
      throw new IndexDamaged(path.dirname(blobsDir), unknownSegmentProblem(segment));
    }
    if (segment === undefined || !segments.has(segment)) {
      await fsp.rm(path.join(blobsDir, name), { force: true, recursive: true });
      removed++;
    }
  }
  return { removed, lastSegment };
}

/**
 * Brings the index up to the log, then DATA_DIR's files in line with the index and the head:
 * what LMDB lacks is replayed into batches for the head (RecoveryResult `head`), damage
 * the replay went past is quarantined, and segment tails past what either covers are cut (a
 * tail that is a frame of its segment, in a segment the log had moved on from, is quarantined
 * first: docs/STORAGE.md, "Damage in the log"). Block files the catalogue does not name (a
 * checkpoint's or a merge's cut short: "Blocks in the running store") are removed first.
 * @param options how creates and updates checkpointed during the replay are indexed (`shipping`:
 *   finalized events enter the shipping ledger)
 * @throws IndexDamaged when blobs/ holds a segment file with records of events that the index
 *   does not know (unknown-segments.ts)
 * @throws the fs error when blobs/ or staging/ cannot be read, the lmdb error of a failed commit
 */
export async function recoverStore(dbs: StoreDatabases, dirs: RecoveryDirs, options: IndexOptions): Promise<RecoveryResult> {
  const stored = new StoredEvents(dbs, blocksDirOf(path.dirname(dirs.blobsDir))); // blobs/ and blocks/ are DATA_DIR's
  try {
    return await recoverWith(stored, dirs, options);
  } finally {
    stored.close();
  }
}

/**
 * Opens the live blocks, each read against its CRC32C (block-reader.ts `BlockReader.open`).
 * @throws IndexDamaged naming the block that does not read back and `edge-events check --repair`,
 *   which rebuilds the index, blocks included, from the log
 */
async function openBlocks(stored: StoredEvents): Promise<void> {
  try {
    stored.blocks();
  } catch (err) {
    if (!(err instanceof BlockDamaged)) throw err;
    await stored.dbs.root.close(); // as removeOrphans does: the refused open leaves nothing mapped
    throw new IndexDamaged(path.dirname(stored.blocksDir), err.message.replace(`block ${err.file}: `, ''), path.join('blocks', path.basename(err.file)), { cause: err });
  }
}

/** recoverStore's work, with the store's checkpointed events open. */
async function recoverWith(stored: StoredEvents, dirs: RecoveryDirs, options: IndexOptions): Promise<RecoveryResult> {
  const { dbs } = stored;
  const { blobsDir, stagingDir } = dirs;
  await removeUnnamedBlocks(dbs, stored.blocksDir);
  await openBlocks(stored);
  const { replay, skipped, damaged, positionSegment, rebuilt } = await replayLog(stored, blobsDir, options);
  const quarantined: QuarantinedBytes[] = [];
  for (const damage of damaged) quarantined.push(await keepDamaged(blobsDir, dirs.quarantineDir, damage));

  const stagingFiles = await fsp.readdir(stagingDir);
  await Promise.all(stagingFiles.map((f) => fsp.rm(path.join(stagingDir, f), { force: true, recursive: true })));

  const segments = knownSegments(dbs, replay);
  const newestSegment = Math.max(0, ...segments.keys());
  const tailsTruncated = await cutTails(dbs, dirs, segments, quarantined);
  const onDisk = await removeOrphans(dbs, blobsDir, segments, rebuilt);
  const lastSegment = Math.max(positionSegment, newestSegment, onDisk.lastSegment);
  const orphanedDiskFilesRemoved = onDisk.removed;

  const newest = segments.has(newestSegment) ? { segment: newestSegment, ...segments.get(newestSegment)! } : undefined;
  const activeSegment = newest && !newest.sealed && newest.committed < SEGMENT_ROLL_BYTES
    && fs.existsSync(path.join(blobsDir, segmentFileName(newest.segment)))
    ? { segment: newest.segment, committed: newest.committed }
    : undefined;
  const [lastKey] = stored.createdAts({ reverse: true, limit: 1 });
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
