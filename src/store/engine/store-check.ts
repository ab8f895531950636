/**
 * The offline check of a data folder and the rebuild of its index from the log (`edge-events
 * check`; docs/OPERATIONS.md, "Checking and repairing a data folder"; docs/STORAGE.md, "A damaged
 * index"). Run with no store on the folder: both take its lock (data-dir-lock.ts).
 *
 * The check reads three things and reports what disagrees:
 * - the index's file, `db/data.mdb`, by plain reads (index-file-check.ts);
 * - every frame of every segment (docs/STORAGE.md, "The segment log"): headers, and every
 *   frame's data against its CRC32C, images and files included; past bytes that are no frame it
 *   goes on at the next whole frame as a replay does (segment-frames.ts `scanSegment`), so it
 *   tells damage in the middle of a segment ("Damage in the log") from the torn tail an unclean
 *   stop leaves, which the next start cuts; damage before the index's log position, which no
 *   replay reads, is found only here;
 * - when LMDB opens, the index against the log: every file location points at the whole frame it
 *   names, and every event whose record frame is in the log before the index's log position is
 *   in the index, or was deleted by a cleanup.
 *
 * The rebuild moves `db/` aside (never deletes it), starts an empty LMDB whose log position is
 * the first segment on disk, and opens the store, whose recovery replays the whole log into the
 * index (docs/STORAGE.md, "Recovery").
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { lockDataDir } from './data-dir-lock.js';
import { EventStore } from './event-store.js';
import { assertIndexOpenable, inspectIndexFile, metaIsForeign, readsAsNew, type IndexFileReport } from '../index/index-file-check.js';
import { draftKey, pendingKey } from '../index/index-keys.js';
import { indexedLogPosition, LOG_POSITION_KEY, openDatabases, type LogPosition, type StoreDatabases } from '../index/lmdb-env.js';
import { quarantineDirOf, readQuarantine } from '../log/quarantine.js';
import { decodeRecord } from '../index/record-codec.js';
import { decodeRecordFrame } from '../log/record-frame.js';
import { segmentFileName, segmentNumberOf, syncDirectory } from '../log/segment-files.js';
import { blobCrcMatches, FRAME_HEADER_BYTES, scanSegment, type FrameKind } from '../log/segment-frames.js';
import { startCursors } from '../ledger/sink-ledger.js';
import type { StoreOptions } from '../read/store-view.js';

/** Items listed at most in each list of a report; the counts cover them all. */
const LISTED = 50;

/**
 * Bytes of the log that are damaged (docs/STORAGE.md, "Damage in the log"). Offsets in bytes from
 * the start of the segment file.
 */
export interface DamageInLog {
  segment: number;
  offset: number;
  end: number;
  /**
   * `no-frame`: bytes that are no frame, with whole frames after them; `crc`: a frame whose
   * header checks and whose data fails its CRC32C.
   */
  what: 'no-frame' | 'crc';
  /** For `crc`: the frame's kind and id (a file id, or the event id of a record or change frame). */
  kind?: FrameKind;
  id?: string;
}

/** Bytes after a segment's last whole frame, with none after them: what an unclean stop leaves. */
export interface LogTail {
  segment: number;
  offset: number;
  bytes: number;
  /** The index counts bytes past `offset` as committed: acknowledged frames were lost (damage). */
  acknowledged: boolean;
}

/** A segment the index knows that is shorter on disk than the index's committed length, or gone. */
export interface ShortSegment {
  segment: number;
  /** Bytes on disk; null when the file is missing. */
  fileBytes: number | null;
  committed: number;
  liveBlobs: number;
}

/** A file location of the index that does not lead to the whole frame it names. */
export interface BadLocation {
  fileId: string;
  segment: number;
  offset: number;
  /** `log`: the frame there is damaged or gone; `index`: the location names no such frame. */
  side: 'log' | 'index';
  why: string;
}

/** An event whose record frame is in the log, before the index's log position, not in the index. */
export interface UnindexedEvent {
  eventId: string;
  createdAt: number;
  segment: number;
  offset: number;
}

/** The index against the log (only when LMDB opened). */
export interface IndexAgainstLog {
  logPosition: LogPosition | null;
  /** The index reads as a new one while the log has segments (index-file-check.ts `readsAsNew`): the store refuses it. */
  readsAsNew: boolean;
  /** The meta database holds another database's keys (index-file-check.ts `metaIsForeign`): the store refuses it. */
  metaForeign: boolean;
  /** Events in the index (`event_ids`). */
  events: number;
  /** File locations in the index, and those that do not lead to their whole frame. */
  files: number;
  badLocationCount: number;
  badLocations: BadLocation[];
  /** Record frames in the log whose event is in the index. */
  recordsIndexed: number;
  /** Record frames after the log position the index lacks: the next start replays them. */
  recordsToReplay: number;
  /** Record frames before the position the index lacks, older than its oldest event a cleanup may delete: deleted by a cleanup. */
  deletedByCleanup: number;
  /** Record frames before the position the index lacks and no cleanup explains: lost from the index. */
  unindexedCount: number;
  unindexed: UnindexedEvent[];
  /** Events of the index whose record frame is damaged in the log: a rebuild would lose them. */
  indexedRecordsDamaged: number;
  /**
   * Events of the index whose record frame is in no segment on disk (its segment was reclaimed:
   * docs/STORAGE.md, "Reclaiming space"): the index is their only copy, and a rebuild loses them.
   */
  indexOnly: number;
}

/** What `checkStore` found. */
export interface CheckReport {
  dataDir: string;
  index: {
    file: string;
    /** `unreadable`: the file checks, but LMDB failed to open or read it. */
    state: 'sound' | 'absent' | 'damaged' | 'unreadable';
    problem: string | null;
    fileBytes: number | null;
    pageSize: number | null;
    /** The transaction LMDB opens at. */
    transaction: number | null;
  };
  log: {
    segments: number;
    bytes: number;
    frames: number;
    records: number;
    changes: number;
    /** Frames of images, videos and local-only files. */
    fileFrames: number;
    damageCount: number;
    damage: DamageInLog[];
    tails: LogTail[];
    shortSegments: ShortSegment[];
  };
  /** What earlier replays moved aside into quarantine/ (quarantine.ts): damage found before, not by this check. */
  quarantine: { ranges: number; bytes: number; lostEvents: number };
  /** Null when the index did not open (absent, damaged, unreadable). */
  indexAgainstLog: IndexAgainstLog | null;
  /** Anything above that loses or risks acknowledged data: the command exits 1. */
  damage: boolean;
  /** Why a rebuild of the index from the log is advised (`needsRebuild`), or null. */
  rebuild: string | null;
}

/** The data directory cannot be checked: not a folder, or a store runs on it (the lock's message). */
export class CheckRefused extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CheckRefused';
  }
}

/** Segment numbers of the segment files in `blobsDir`, ascending; none when it is missing. */
function segmentsOnDisk(blobsDir: string): number[] {
  let names: string[];
  try {
    names = fs.readdirSync(blobsDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  return names.map(segmentNumberOf).filter((n): n is number => n !== undefined).sort((a, b) => a - b);
}

/** Takes `dataDir`'s lock, as a store would. @throws CheckRefused when it is no folder or a store holds it */
function lockForCheck(dataDir: string): () => void {
  if (!fs.statSync(dataDir, { throwIfNoEntry: false })?.isDirectory()) throw new CheckRefused(`DATA_DIR ${dataDir} is not a folder`);
  try {
    return lockDataDir(dataDir);
  } catch (err) {
    if ((err as Error).name === 'DataDirLocked') throw new CheckRefused(`${(err as Error).message}: stop it first (systemctl stop edge-events)`, { cause: err });
    throw err;
  }
}

/** What the check reads of the index before it walks the log. */
interface IndexState {
  dbs: StoreDatabases;
  position: LogPosition | undefined;
  segments: Map<number, { committed: number; liveBlobs: number }>;
  /** File locations by segment. */
  files: Map<number, { id: string; offset: number; length: number; crc: number }[]>;
  fileCount: number;
  events: number;
  /** created_at (µs) of the oldest event that is neither a draft nor unshipped; undefined when none. */
  oldestDeletable: number | undefined;
}

/** Reads what the check needs of an open index. @throws the lmdb error of a failed read */
function readIndex(dbs: StoreDatabases): IndexState {
  const segments = new Map<number, { committed: number; liveBlobs: number }>();
  for (const { key, value } of dbs.segments.getRange()) segments.set(key, { committed: value.committed, liveBlobs: value.liveBlobs });
  const files = new Map<number, { id: string; offset: number; length: number; crc: number }[]>();
  let fileCount = 0;
  for (const { key, value } of dbs.files.getRange()) {
    const list = files.get(value.segment) ?? [];
    list.push({ id: key, offset: value.offset, length: value.length, crc: value.crc });
    files.set(value.segment, list);
    fileCount++;
  }
  // Cleanup deletes the oldest events first, passing over those it must keep (drafts and events
  // a sink has not shipped: sink-ledger.ts `isProtected`), so an event it deleted is older than
  // the oldest event the index holds that it could have deleted (docs/OPERATIONS.md, "Keeping
  // the disk bounded").
  let oldestDeletable: number | undefined;
  for (const createdAt of dbs.events.getKeys()) {
    if (!dbs.index.doesExist(draftKey(createdAt)) && !dbs.index.doesExist(pendingKey(createdAt))) {
      oldestDeletable = createdAt;
      break;
    }
  }
  return { dbs, position: indexedLogPosition(dbs), segments, files, fileCount, events: dbs.eventIds.getKeysCount(), oldestDeletable };
}

/** Whether the frame ending at `end` of `segment` is covered by the index's log position. */
function covered(position: LogPosition | undefined, segment: number, end: number): boolean {
  return position !== undefined && (segment < position.segment || (segment === position.segment && end <= position.offset));
}

/** created_at (µs) of a record frame's event; -1 when the frame does not decode (counted as unindexed). */
function createdAtOf(data: Buffer): number {
  try {
    return decodeRecord(decodeRecordFrame(data).record).created_at;
  } catch {
    return -1;
  }
}

/** The blob frames of one segment, by the offset of their data. */
type BlobFrames = Map<number, { id: string; length: number; crc: number; whole: boolean }>;

/** Checks the index's file locations in `segment` against the frames the walk found there. */
function checkLocations(index: IndexState, segment: number, fileBytes: number | null, blobs: BlobFrames, damaged: DamageInLog[], out: IndexAgainstLog): void {
  for (const entry of index.files.get(segment) ?? []) {
    const bad = (side: BadLocation['side'], why: string) => {
      out.badLocationCount++;
      if (out.badLocations.length < LISTED) out.badLocations.push({ fileId: entry.id, segment, offset: entry.offset, side, why });
    };
    const frame = blobs.get(entry.offset);
    if (fileBytes === null) bad('log', 'its segment file is missing');
    else if (entry.offset + entry.length > fileBytes) bad('log', `its segment file ends at byte ${fileBytes}, before the file's end`);
    else if (!frame) {
      const inDamage = damaged.some((d) => d.segment === segment && entry.offset >= d.offset && entry.offset < d.end);
      bad(inDamage ? 'log' : 'index', inDamage ? 'it lies in damaged bytes of the log' : 'no frame starts there');
    } else if (frame.id !== entry.id || frame.length !== entry.length || frame.crc !== entry.crc) {
      bad('index', `the frame there is another (${frame.id}, ${frame.length} bytes)`);
    } else if (!frame.whole) bad('log', 'the frame\'s data fails its CRC32C');
  }
}

/**
 * Walks one segment: frames counted, blob data checked against its CRC, damage and the tail
 * noted; record frames compared with the index when it is open.
 */
async function checkSegment(report: CheckReport, blobsDir: string, segment: number, index: IndexState | undefined): Promise<void> {
  const { log } = report;
  const out = report.indexAgainstLog;
  const handle = await fsp.open(path.join(blobsDir, segmentFileName(segment)), 'r');
  const damaged: DamageInLog[] = [];
  const blobs: BlobFrames = new Map();
  const noteDamage = (d: DamageInLog) => {
    damaged.push(d);
    log.damageCount++;
    if (log.damage.length < LISTED) log.damage.push(d);
  };
  let fileBytes: number;
  try {
    fileBytes = (await handle.stat()).size;
    log.bytes += fileBytes;
    let end = 0;
    for await (const piece of scanSegment(handle, 0, segment)) {
      if (piece.kind === 'damaged') {
        if (out && piece.frame?.kind === 'record' && index?.dbs.eventIds.get(piece.frame.id) !== undefined) out.indexedRecordsDamaged++;
        noteDamage(piece.frame
          ? { segment, offset: piece.offset, end: piece.end, what: 'crc', kind: piece.frame.kind, id: piece.frame.id }
          : { segment, offset: piece.offset, end: piece.end, what: 'no-frame' });
        end = piece.end;
        continue;
      }
      const frame = piece;
      end = frame.offset + frame.length;
      log.frames++;
      if (frame.kind === 'change') {
        log.changes++;
        continue;
      }
      if (frame.kind !== 'record') {
        log.fileFrames++;
        const whole = await blobCrcMatches(handle, frame);
        blobs.set(frame.offset, { id: frame.id, length: frame.length, crc: frame.crc, whole });
        if (!whole) noteDamage({ segment, offset: frame.offset - FRAME_HEADER_BYTES, end, what: 'crc', kind: frame.kind, id: frame.id });
        continue;
      }
      log.records++;
      if (!index || !out) continue;
      if (index.dbs.eventIds.get(frame.id) !== undefined) out.recordsIndexed++;
      else if (!covered(index.position, segment, end)) out.recordsToReplay++;
      else {
        const createdAt = createdAtOf(frame.data!);
        if (createdAt >= 0 && (index.oldestDeletable === undefined || createdAt < index.oldestDeletable)) out.deletedByCleanup++;
        else {
          out.unindexedCount++;
          if (out.unindexed.length < LISTED) out.unindexed.push({ eventId: frame.id, createdAt, segment, offset: frame.offset - FRAME_HEADER_BYTES });
        }
      }
    }
    // scanSegment ends silently at a torn tail: the bytes after the last whole frame.
    if (end < fileBytes) {
      const committed = index?.segments.get(segment)?.committed ?? 0;
      log.tails.push({ segment, offset: end, bytes: fileBytes - end, acknowledged: committed > end });
    }
  } finally {
    await handle.close();
  }
  if (index && out) checkLocations(index, segment, fileBytes, blobs, damaged, out);
}

/**
 * Whether to rebuild the index from the log, and why (docs/OPERATIONS.md, "Checking and repairing
 * a data folder"): when LMDB cannot open it (damaged, unreadable), when it is missing while the
 * log has segments, or when it disagrees with a sound log (a location naming no such frame, or
 * logged events no cleanup deleted missing) and holds no event the log lacks, which a rebuild
 * would lose.
 * @returns the reason in words, or null when a rebuild would not help
 */
export function needsRebuild(report: Omit<CheckReport, 'rebuild' | 'damage'>): string | null {
  const { index, log, indexAgainstLog: against } = report;
  if (index.state === 'damaged') return 'the index file is damaged';
  if (index.state === 'unreadable') return 'LMDB cannot read the index';
  if (index.state === 'absent') return log.segments > 0 ? 'the index is missing while the log has segments' : null;
  if (against?.readsAsNew) return 'the index reads as a new one while the log has segments';
  if (against?.metaForeign) return 'the index\'s meta database holds another database\'s keys';
  if (!against || against.indexOnly > 0 || against.indexedRecordsDamaged > 0) return null;
  if (against.badLocations.some((b) => b.side === 'index')) return 'file locations in the index name no frame of the log';
  if (against.unindexedCount > 0) return 'events of the log are missing from the index';
  return null;
}

/**
 * Checks the data folder `dataDir` (see the module's comment), which no store may be running on.
 * Reads only, but for the lock file it takes and what opening LMDB does at any open (it starts
 * from its last flushed commit, docs/STORAGE.md "The index").
 * @returns what it found; `damage` is true when anything loses or risks acknowledged data
 * @throws CheckRefused when `dataDir` is not a folder or a running store holds it
 * @throws the fs error of a failed read
 */
export async function checkStore(dataDir: string): Promise<CheckReport> {
  const unlock = lockForCheck(dataDir);
  try {
    return await checkLocked(dataDir);
  } finally {
    unlock();
  }
}

function indexPart(file: IndexFileReport): CheckReport['index'] {
  return {
    file: file.file,
    state: file.state,
    problem: file.state === 'damaged' ? file.problem : null,
    fileBytes: file.state === 'absent' ? null : file.fileBytes,
    pageSize: file.state === 'sound' ? file.pageSize : null,
    transaction: file.state === 'sound' ? Number(file.opensAt.txnid) : null,
  };
}

async function checkLocked(dataDir: string): Promise<CheckReport> {
  const blobsDir = path.join(dataDir, 'blobs');
  const onDisk = segmentsOnDisk(blobsDir);
  const file = inspectIndexFile(dataDir, { walk: true });
  const report: CheckReport = {
    dataDir,
    index: indexPart(file),
    log: { segments: onDisk.length, bytes: 0, frames: 0, records: 0, changes: 0, fileFrames: 0, damageCount: 0, damage: [], tails: [], shortSegments: [] },
    quarantine: (({ ranges, bytes, lostEvents }) => ({ ranges, bytes, lostEvents }))(readQuarantine(quarantineDirOf(dataDir))),
    indexAgainstLog: null,
    damage: false,
    rebuild: null,
  };
  let index: IndexState | undefined;
  if (file.state === 'sound') {
    try {
      index = readIndex(openDatabases(dataDir));
    } catch (err) {
      report.index.state = 'unreadable';
      report.index.problem = (err as Error).message;
    }
  }
  try {
    if (index) {
      report.indexAgainstLog = {
        logPosition: index.position ?? null, readsAsNew: readsAsNew(index.dbs, onDisk), metaForeign: metaIsForeign(index.dbs), events: index.events, files: index.fileCount, badLocationCount: 0, badLocations: [],
        recordsIndexed: 0, recordsToReplay: 0, deletedByCleanup: 0, unindexedCount: 0, unindexed: [], indexedRecordsDamaged: 0, indexOnly: 0,
      };
    }
    for (const segment of onDisk) await checkSegment(report, blobsDir, segment, index);
    if (index && report.indexAgainstLog) {
      const against = report.indexAgainstLog;
      const scanned = new Set(onDisk);
      // Locations in segments with no file (a reclaimed segment has no location left).
      for (const segment of index.files.keys()) if (!scanned.has(segment)) checkLocations(index, segment, null, new Map(), [], against);
      for (const [segment, { committed, liveBlobs }] of index.segments) {
        const size = scanned.has(segment) ? fs.statSync(path.join(blobsDir, segmentFileName(segment))).size : null;
        if (size === null ? liveBlobs > 0 : size < committed) report.log.shortSegments.push({ segment, fileBytes: size, committed, liveBlobs });
      }
      against.indexOnly = Math.max(0, against.events - against.recordsIndexed - against.indexedRecordsDamaged);
    }
  } finally {
    await index?.dbs.root.close();
  }
  const against = report.indexAgainstLog;
  report.damage = report.index.state === 'damaged' || report.index.state === 'unreadable'
    || (report.index.state === 'absent' && onDisk.length > 0)
    || report.log.damageCount > 0 || report.log.tails.some((t) => t.acknowledged) || report.log.shortSegments.length > 0
    || (against !== null && (against.readsAsNew || against.metaForeign || against.badLocationCount > 0 || against.unindexedCount > 0));
  report.rebuild = needsRebuild(report);
  return report;
}

/** What `rebuildIndex` did. */
export interface RebuildReport {
  /** Where the former `db/` went (`db.damaged-<time>`), or null when there was none. */
  movedTo: string | null;
  /** The segment the replay started from; null when the log has none. */
  firstSegment: number | null;
  /** Creates and changes the replay indexed, creates it went past (store.opened). */
  replayed: number;
  changesReplayed: number;
  skipped: number;
  /** Events in the rebuilt index. */
  events: number;
  /**
   * Segment files the open removed as files the rebuilt index does not know (docs/STORAGE.md,
   * "Recovery", step 3), kept as they were in `keptIn`; empty when it removed none.
   */
  segmentFilesRemoved: string[];
  /** `blobs.before-rebuild-<time>`, holding `segmentFilesRemoved`; null when it removed none. */
  keptIn: string | null;
  /** The sinks the shipping ledger was rebuilt for (`options.sinks`): each ships every finalized event again. */
  sinks: string[];
  ms: number;
}

/** Gives `dir` and what is in it to `uid`:`gid` (one level deep: db/ holds only files). */
function chownTree(dir: string, uid: number, gid: number): void {
  fs.chownSync(dir, uid, gid);
  for (const name of fs.readdirSync(dir)) fs.chownSync(path.join(dir, name), uid, gid);
}

/** `<time>` for the names of a rebuild's folders in `dataDir`, one no other rebuild took. */
function rebuildStamp(dataDir: string, now: Date): string {
  const stamp = now.toISOString().replaceAll(':', '-');
  for (let n = 0; ; n++) {
    const candidate = `${stamp}${n === 0 ? '' : `-${n}`}`;
    if (!fs.existsSync(path.join(dataDir, `db.damaged-${candidate}`)) && !fs.existsSync(path.join(dataDir, `blobs.before-rebuild-${candidate}`))) return candidate;
  }
}

/**
 * Hard-links every segment file of `blobsDir` into the new folder `kept`: the open that follows a
 * rebuild removes the files no replayed frame names (an upload whose attach frame was in a
 * segment already reclaimed), and a link keeps their bytes without copying them.
 * @throws the fs error of a failed link (another file system: nothing is changed then)
 */
function linkSegments(blobsDir: string, kept: string): void {
  fs.mkdirSync(kept);
  try {
    for (const name of fs.readdirSync(blobsDir)) {
      if (segmentNumberOf(name) !== undefined) fs.linkSync(path.join(blobsDir, name), path.join(kept, name));
    }
  } catch (err) {
    fs.rmSync(kept, { recursive: true, force: true });
    throw err;
  }
}

/**
 * Removes from `kept` the links of the segment files still in `blobsDir` (the same file), and
 * `kept` itself when nothing else is left.
 * @returns the names of the files left in `kept`: those the open removed from blobs/
 */
function pruneKept(blobsDir: string, kept: string): string[] {
  const removed: string[] = [];
  for (const name of fs.readdirSync(kept)) {
    const link = fs.statSync(path.join(kept, name));
    const still = fs.statSync(path.join(blobsDir, name), { throwIfNoEntry: false });
    if (still && still.ino === link.ino && still.dev === link.dev) fs.rmSync(path.join(kept, name));
    else removed.push(name);
  }
  if (removed.length === 0) fs.rmdirSync(kept);
  return removed.sort();
}

/**
 * Rebuilds the index of `dataDir` from its log (docs/STORAGE.md, "A damaged index"): moves `db/`
 * aside to `db.damaged-<time>` (never deleted), creates an empty LMDB whose log position is the
 * first segment on disk at offset 0 and whose shipping sinks start at the beginning of the
 * ledger (everything finalized is shipped again: shipping is at least once), then opens the
 * store, whose recovery replays the whole log into the index, and closes it, which checkpoints
 * what the replay left in the index head. Every segment file is hard-linked into
 * `blobs.before-rebuild-<time>` first; what the open removed stays there, the rest is unlinked.
 * Run as root on a folder another user owns, the new folders are given to that user.
 * @param options the store's options: `sinks` as the store is configured (finalized events enter
 *   the shipping ledger for them), `present` its record presenter
 * @throws CheckRefused when `dataDir` is not a folder or a running store holds it
 * @throws the fs or lmdb error of a failed step; `db.damaged-*` keeps the former index and
 *   `blobs.before-rebuild-*` every segment file, and the rebuild can be run again
 */
export async function rebuildIndex(dataDir: string, options: StoreOptions, now = new Date()): Promise<RebuildReport> {
  const started = performance.now();
  const unlock = lockForCheck(dataDir);
  const dbDir = path.join(dataDir, 'db');
  const blobsDir = path.join(dataDir, 'blobs');
  const stamp = rebuildStamp(dataDir, now);
  const kept = path.join(dataDir, `blobs.before-rebuild-${stamp}`);
  let movedTo: string | null = null;
  let firstSegment: number | null = null;
  try {
    firstSegment = segmentsOnDisk(blobsDir)[0] ?? null;
    if (firstSegment !== null) linkSegments(blobsDir, kept);
    if (fs.existsSync(dbDir)) {
      movedTo = path.join(dataDir, `db.damaged-${stamp}`);
      fs.renameSync(dbDir, movedTo);
    }
    const dbs = openDatabases(dataDir);
    try {
      const start: LogPosition | undefined = firstSegment === null ? undefined : { segment: firstSegment, offset: 0 };
      if (start) await dbs.root.transaction(() => dbs.meta.putSync(LOG_POSITION_KEY, start));
      await startCursors(dbs, options.sinks); // at seq 0: the replay's finalized events are all ahead of them
      await dbs.root.flushed;
    } finally {
      await dbs.root.close();
    }
    const owner = fs.statSync(dataDir);
    if (process.getuid?.() === 0 && (owner.uid !== 0 || owner.gid !== 0)) {
      chownTree(dbDir, owner.uid, owner.gid);
      if (firstSegment !== null) fs.chownSync(kept, owner.uid, owner.gid);
    }
    await syncDirectory(dataDir);
  } finally {
    unlock();
  }
  assertIndexOpenable(dataDir);
  const store = await EventStore.open(dataDir, options);
  const { replayed, changesReplayed, skipped } = store.opened;
  const events = store.counters().events;
  await store.close();
  const segmentFilesRemoved = firstSegment === null ? [] : pruneKept(blobsDir, kept);
  return {
    movedTo, firstSegment, replayed, changesReplayed, skipped: skipped.length, events,
    segmentFilesRemoved, keptIn: segmentFilesRemoved.length > 0 ? kept : null, sinks: [...options.sinks], ms: Math.round(performance.now() - started),
  };
}
