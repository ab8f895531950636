/**
 * The upgrade of a store written before record copies (docs/STORAGE.md, "Two copies of every
 * record", "Upgrading a store"): an engine that kept a segment only while it held a live blob
 * deleted the record frames of many live events with their segments, and logged no deletions.
 * The upgrade, run once at the first open by this engine with the head checkpointed:
 *
 * 1. walks every frame of the log, counting in each segment the record frames of live events
 *    (their homes), the update frames after them and the range of their creates;
 * 2. logs a tombstone for every record frame whose event the index no longer holds (deleted by a
 *    cleanup), so a rebuild does not bring it back;
 * 3. logs a record copy of every live event whose record only the index holds;
 * 4. commits the counts, the homes and the tombstones in one flushed commit, with the version that
 *    says the invariant holds (`meta.recordCopies`).
 *
 * A crash before the commit leaves the index as it was: the next open runs the upgrade again, and
 * the copies and tombstones of the first try stay in the log as frames nothing counts.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { recordFromFrame } from '../index/record-codec.js';
import { decodeUpdate } from '../index/record-update.js';
import type { AppendedFrame, FrameToAppend } from '../log/blob-log.js';
import { encodeTombstone } from '../log/record-copy-frame.js';
import { recordCopyFrame } from './segment-compaction.js';
import { decodeRecordFrame } from '../log/record-frame.js';
import { segmentFileName } from '../log/segment-files.js';
import { FRAME_HEADER_BYTES, scanSegment, type ScannedFrame } from '../log/segment-frames.js';
import { FrameTally } from './frame-accounting.js';
import type { SegmentEntry } from '../log/log-entries.js';
import type { MaintenanceAccess } from './segment-maintenance.js';
import { segmentsOnDisk } from './store-check.js';

/** Where `meta` keeps the version of the record copies' invariant the index counts by. */
export const RECORD_COPIES_KEY = 'recordCopies';
export const RECORD_COPIES_VERSION = 1;

/**
 * A file in DATA_DIR saying the folder counts by record copies, readable without LMDB: a repair
 * whose damaged index cannot be read at all knows from it that the log held every live event
 * (index-salvage-copies.ts).
 */
export const RECORD_COPIES_MARKER = 'record-copies';

/** Whether the folder whose log is in `blobsDir` says it counts by record copies (RECORD_COPIES_MARKER). */
export function marksRecordCopies(blobsDir: string): boolean {
  try {
    return Number(fs.readFileSync(path.join(path.dirname(blobsDir), RECORD_COPIES_MARKER), 'utf8')) >= RECORD_COPIES_VERSION;
  } catch {
    return false;
  }
}

/** Writes RECORD_COPIES_MARKER, durably, once the index counts by record copies. */
async function markRecordCopies(blobsDir: string): Promise<void> {
  const file = path.join(path.dirname(blobsDir), RECORD_COPIES_MARKER);
  if (marksRecordCopies(blobsDir)) return;
  const handle = await fsp.open(file, 'w');
  try {
    await handle.writeFile(`${RECORD_COPIES_VERSION}\n`);
    await handle.datasync();
  } finally {
    await handle.close();
  }
}

/** Record copies and tombstones per append of the upgrade. */
const UPGRADE_APPEND_FRAMES = 512;

/** How far the upgrade got; the log says it after each segment. */
export interface UpgradeProgress {
  segmentsRead: number;
  segments: number;
  /** Live events whose record frame the log holds, found so far. */
  eventsInLog: number;
}

/** What the upgrade did. */
export interface UpgradeReport extends UpgradeProgress {
  /** Live events whose record only the index held: each got a record copy. */
  copied: number;
  /** Deleted events whose record frames are still in the log: each got a tombstone. */
  tombstoned: number;
  ms: number;
}

/** One segment's frames as the upgrade counts them. */
interface SegmentCount {
  frames: number;
  live: number;
  bytes: number;
  first?: number;
  last?: number;
}

/** What the upgrade's walk of the log found. */
interface LogCount {
  counts: Map<number, SegmentCount>;
  /** created_at (µs) of the live events whose record frame the log holds. */
  homes: Set<number>;
  /** Per live event, the segments of its update frames after its home. */
  updates: Map<number, number[]>;
  /** Deleted events whose record frames are still in the log: each gets a tombstone. */
  tombstones: { createdAt: number; id: string; home: number }[];
  progress: UpgradeProgress;
}

/**
 * Upgrades the store to record copies (module comment) when its index does not count by them yet;
 * a new store is only marked.
 * @param onProgress told after each segment read
 * @returns what it did, or undefined when nothing was to upgrade
 * @throws the fs error of a read or an append, the lmdb error of the commit (the next open runs it again)
 */
export async function upgradeToRecordCopies(store: MaintenanceAccess, onProgress?: (progress: UpgradeProgress) => void): Promise<UpgradeReport | undefined> {
  const { dbs } = store;
  if (dbs.meta.get(RECORD_COPIES_KEY) === RECORD_COPIES_VERSION) {
    await markRecordCopies(store.blobsDir);
    return undefined;
  }
  const [anyEvent] = store.stored.createdAts({ limit: 1 });
  const [anySegment] = dbs.segments.getKeys({ limit: 1 });
  if (anyEvent === undefined && anySegment === undefined) {
    await store.commitDurably(() => dbs.meta.putSync(RECORD_COPIES_KEY, RECORD_COPIES_VERSION));
    await markRecordCopies(store.blobsDir);
    return undefined;
  }
  let report: UpgradeReport | undefined;
  await store.paused(async () => {
    const started = performance.now();
    const log = await countLog(store, onProgress);
    const appends: FrameToAppend[] = log.tombstones.map(({ id, createdAt }) => ({ id, kind: 'tombstone', bytes: encodeTombstone(createdAt) }));
    const copied = recordCopiesOfIndexOnly(store, log.homes, appends);
    const placed: AppendedFrame[] = [];
    for (let i = 0; i < appends.length; i += UPGRADE_APPEND_FRAMES) placed.push(...(await store.appender.append(appends.slice(i, i + UPGRADE_APPEND_FRAMES))).placed);
    await store.commitDurably(() => commitUpgradeSync(store, log, copied, placed));
    await markRecordCopies(store.blobsDir);
    report = { ...log.progress, copied: copied.length, tombstoned: log.tombstones.length, ms: Math.round(performance.now() - started) };
  });
  return report;
}

/**
 * Walks every frame of the segments the index knows: the record frames of live events (their
 * homes, and their segments' create ranges), the update frames after them, and the record frames
 * of deleted events.
 * @throws the fs error of a failed read
 */
async function countLog(store: MaintenanceAccess, onProgress?: (progress: UpgradeProgress) => void): Promise<LogCount> {
  const { dbs } = store;
  const onDisk = segmentsOnDisk(store.blobsDir).filter((segment) => dbs.segments.get(segment) !== undefined);
  const log: LogCount = { counts: new Map(), homes: new Set(), updates: new Map(), tombstones: [], progress: { segmentsRead: 0, segments: onDisk.length, eventsInLog: 0 } };
  for (const segment of onDisk) {
    const count: SegmentCount = { frames: 0, live: 0, bytes: 0 };
    log.counts.set(segment, count);
    const handle = await fsp.open(path.join(store.blobsDir, segmentFileName(segment)), 'r');
    try {
      for await (const frame of scanSegment(handle, 0, segment)) {
        if (frame.kind !== 'record' && frame.kind !== 'update') continue;
        count.frames++;
        count.bytes += frame.length + FRAME_HEADER_BYTES;
        countFrame(store, log, count, segment, frame);
      }
    } finally {
      await handle.close();
    }
    log.progress.segmentsRead++;
    onProgress?.({ ...log.progress });
  }
  return log;
}

/** Counts one record or update frame of `segment` into `log` and its segment's `count`. */
function countFrame(store: MaintenanceAccess, log: LogCount, count: SegmentCount, segment: number, frame: ScannedFrame): void {
  const { stored } = store;
  if (frame.kind === 'update') {
    const { createdAt } = decodeUpdate(frame.data!);
    if (!log.homes.has(createdAt) || !stored.holds(createdAt)) return;
    count.live++;
    log.updates.set(createdAt, [...(log.updates.get(createdAt) ?? []), segment]);
    return;
  }
  const createdAt = stored.createdAtOf(frame.id);
  if (createdAt !== undefined && stored.holds(createdAt)) {
    count.live++;
    count.first = Math.min(count.first ?? createdAt, createdAt);
    count.last = Math.max(count.last ?? createdAt, createdAt);
    log.homes.add(createdAt);
    log.progress.eventsInLog++;
    return;
  }
  // A deleted event (the old engine logged no deletions): its tombstone keeps it deleted.
  const deleted = recordFromFrame(decodeRecordFrame(frame.data!).record, store.present).record;
  log.tombstones.push({ createdAt: deleted.created_at, id: frame.id, home: segment });
}

/**
 * Adds to `appends` a record copy of every event of the index whose created_at is not in `homes`.
 * @returns their created_at (µs), in the order of their copies
 */
function recordCopiesOfIndexOnly(store: MaintenanceAccess, homes: Set<number>, appends: FrameToAppend[]): number[] {
  const { stored } = store;
  const copied: number[] = [];
  for (const createdAt of [...stored.createdAts()]) {
    if (homes.has(createdAt)) continue;
    const value = stored.value(createdAt);
    if (!value) continue;
    copied.push(createdAt);
    // A copy: an LMDB value is a view the file reads in recordCopyFrame overwrite (stored-events.ts `value`).
    appends.push(recordCopyFrame(store, Buffer.from(value), new Map()));
  }
  return copied;
}

/**
 * Commits what the upgrade counted and appended: each segment's frame counts (set, not added),
 * the events' update segments and record copies, the tombstones still needed, and the version;
 * call inside the commit. `placed` holds the tombstones' places first, then the copies'.
 */
function commitUpgradeSync(store: MaintenanceAccess, log: LogCount, copied: number[], placed: AppendedFrame[]): void {
  const { dbs } = store;
  for (const [segment, count] of log.counts) {
    const entry = dbs.segments.get(segment);
    if (!entry) continue;
    const next: SegmentEntry = { ...entry, frames: count.frames, liveFrames: count.live, frameBytes: count.bytes };
    if (count.first !== undefined) Object.assign(next, { firstCreate: count.first, lastCreate: count.last });
    dbs.segments.putSync(segment, next);
  }
  for (const [createdAt, segments] of log.updates) dbs.recordFrames.putSync(createdAt, { updates: segments });
  const frames = new FrameTally();
  placed.forEach((at, i) => {
    const bytes = at.length + FRAME_HEADER_BYTES;
    const end = at.offset + at.length;
    if (i >= log.tombstones.length) {
      dbs.recordFrames.putSync(copied[i - log.tombstones.length], { home: at.segment, updates: [] });
      frames.added(at.segment, bytes, true, undefined, end);
      return;
    }
    // A tombstone is needed while its event's frame is on disk in another segment.
    const { createdAt, id, home } = log.tombstones[i];
    const needed = home !== at.segment;
    if (needed) dbs.tombstones.putSync([at.segment, createdAt], { id, home });
    frames.added(at.segment, bytes, needed, undefined, end);
  });
  frames.apply(dbs);
  dbs.meta.putSync(RECORD_COPIES_KEY, RECORD_COPIES_VERSION);
}
