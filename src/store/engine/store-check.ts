/**
 * The offline check of a data folder (`edge-events
 * check`; docs/OPERATIONS.md, "Checking and repairing a data folder"; docs/STORAGE.md, "A damaged
 * index"). Run with no store on the folder: both take its lock (data-dir-lock.ts), and the
 * `check` command holds it across both (`holdForCheck`).
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
 * The rebuild is index-rebuild.ts's; the report's shapes are check-report.ts's.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { CheckRefused, type BadLocation, type CheckReport, type DamageInLog, type IndexAgainstLog } from './check-report.js';
import { holdDataDir, lockDataDir } from './data-dir-lock.js';
import { inspectIndexFile, metaIsForeign, readsAsNew, type IndexFileReport } from '../index/index-file-check.js';
import { DRAFTS_PREFIX, pendingKey } from '../index/index-keys.js';
import { blocksDirOf, StoredEvents } from '../read/stored-events.js';
import { indexedLogPosition, openDatabases, type LogPosition, type StoreDatabases } from '../index/lmdb-env.js';
import { quarantineDirOf, readQuarantine } from '../log/quarantine.js';
import { decodeRecord, type RecordPresenter } from '../index/record-codec.js';
import { decodeRecordFrame } from '../log/record-frame.js';
import { segmentFileName, segmentNumberOf } from '../log/segment-files.js';
import { blobCrcMatches, FRAME_HEADER_BYTES, scanSegment, type ScannedFrame } from '../log/segment-frames.js';
import { checkRecords, unknownSegmentsOf } from './index-checks.js';

/** Items listed at most in each list of a report; the counts cover them all. */
const LISTED = 50;

/** Segment numbers of the segment files in `blobsDir`, ascending; none when it is missing. */
export function segmentsOnDisk(blobsDir: string): number[] {
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
export function lockForCheck(dataDir: string): () => void {
  if (!fs.statSync(dataDir, { throwIfNoEntry: false })?.isDirectory()) throw new CheckRefused(`DATA_DIR ${dataDir} is not a folder`);
  try {
    return lockDataDir(dataDir);
  } catch (err) {
    if ((err as Error).name === 'DataDirLocked') throw new CheckRefused(`${(err as Error).message}: stop it first (systemctl stop edge-events)`, { cause: err });
    throw err;
  }
}

/**
 * Runs `work` (a check, a repair and its recheck) holding `dataDir`'s lock throughout, so that
 * no store starts on the folder between its steps (data-dir-lock.ts `holdDataDir`).
 * @throws CheckRefused when it is no folder or a store holds it
 */
export function holdForCheck<T>(dataDir: string, work: () => Promise<T>): Promise<T> {
  return holdDataDir(dataDir, lockForCheck, work);
}

/** What the check reads of the index before it walks the log. */
interface IndexState {
  dbs: StoreDatabases;
  /** The live blocks and LMDB's events (stored-events.ts). */
  stored: StoredEvents;
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
function readIndex(stored: StoredEvents): IndexState {
  const { dbs } = stored;
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
  for (const createdAt of stored.createdAts()) {
    if (!stored.has(DRAFTS_PREFIX, createdAt) && !dbs.index.doesExist(pendingKey(createdAt))) {
      oldestDeletable = createdAt;
      break;
    }
  }
  return { dbs, stored, position: indexedLogPosition(dbs), segments, files, fileCount, events: stored.countBefore(Infinity), oldestDeletable };
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

/** What the walk of the log gathers across segments for the index against the log. */
interface LogCopies {
  /** Ids of the events with a whole record frame or record copy in the log. */
  events: Set<string>;
  /** Ids of the events with a tombstone in the log. */
  tombstoned: Set<string>;
  /** Record frames before the index's position whose event the index lacks: judged once the walk has seen every tombstone. */
  unindexed: { segment: number; frame: ScannedFrame }[];
}

/**
 * Counts a record frame of the log against the index: indexed, after the index's log position
 * (a replay brings it in), or to judge once the whole log is read (`judgeUnindexed`).
 * @param end where the frame ends (bytes)
 */
function checkRecordIndexed(index: IndexState, out: IndexAgainstLog, copies: LogCopies, segment: number, frame: ScannedFrame, end: number): void {
  if (index.stored.createdAtOf(frame.id) !== undefined) out.recordsIndexed++;
  else if (!covered(index.position, segment, end)) out.recordsToReplay++;
  else copies.unindexed.push({ segment, frame });
}

/**
 * Judges the record frames the index lacks: deleted by a cleanup (a tombstone says so, or, for a
 * log written before tombstones, the frame is older than the oldest event a cleanup may delete),
 * else missing from the index (listed).
 */
function judgeUnindexed(index: IndexState, out: IndexAgainstLog, copies: LogCopies): void {
  for (const { segment, frame } of copies.unindexed) {
    const createdAt = createdAtOf(frame.data!);
    if (copies.tombstoned.has(frame.id) || (createdAt >= 0 && (index.oldestDeletable === undefined || createdAt < index.oldestDeletable))) out.deletedByCleanup++;
    else {
      out.unindexedCount++;
      if (out.unindexed.length < LISTED) out.unindexed.push({ eventId: frame.id, createdAt, segment, offset: frame.offset - FRAME_HEADER_BYTES });
    }
  }
}

/** Counts the index's events by the copies they have: both, or the index's alone (listed; docs/STORAGE.md, "Two copies of every record"). */
function countCopies(index: IndexState, out: IndexAgainstLog, copies: LogCopies): void {
  for (const { id } of index.stored.idEntries()) {
    if (copies.events.has(id)) {
      out.bothCopies++;
      continue;
    }
    out.indexOnly++;
    if (out.indexOnlyIds.length < LISTED) out.indexOnlyIds.push(id);
  }
}

/** Counts an update, a tombstone or a record copy of the walk (docs/STORAGE.md, "Two copies of every record"). */
function countCopyFrame(log: CheckReport['log'], copies: LogCopies, frame: ScannedFrame): void {
  if (frame.kind === 'update') log.changes++;
  else if (frame.kind === 'tombstone') {
    log.tombstones++;
    copies.tombstoned.add(frame.id);
  } else {
    log.copies++;
    copies.events.add(frame.id);
  }
}

/**
 * Walks one segment: frames counted, blob data checked against its CRC, damage and the tail
 * noted; record frames compared with the index when it is open.
 */
async function checkSegment(report: CheckReport, blobsDir: string, segment: number, index: IndexState | undefined, copies: LogCopies): Promise<void> {
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
        if (out && piece.frame?.kind === 'record' && index?.stored.createdAtOf(piece.frame.id) !== undefined) out.indexedRecordsDamaged++;
        noteDamage(piece.frame
          ? { segment, offset: piece.offset, end: piece.end, what: 'crc', kind: piece.frame.kind, id: piece.frame.id }
          : { segment, offset: piece.offset, end: piece.end, what: 'no-frame' });
        end = piece.end;
        continue;
      }
      const frame = piece;
      end = frame.offset + frame.length;
      log.frames++;
      if (frame.kind === 'update' || frame.kind === 'tombstone' || frame.kind === 'copy') {
        countCopyFrame(log, copies, frame);
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
      copies.events.add(frame.id);
      if (index && out) checkRecordIndexed(index, out, copies, segment, frame, end);
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
  if (against && against.unknownSegments.length > 0) return 'segment files holding records of events have no entry in the index';
  if (!against || against.indexOnly > 0 || against.indexedRecordsDamaged > 0) return null;
  if (against.badLocations.some((b) => b.side === 'index')) return 'file locations in the index name no frame of the log';
  if (against.unindexedCount > 0) return 'events of the log are missing from the index';
  if (against.recordsNotReadingBack > 0) return 'records of the index do not read back as their events';
  return null;
}

/**
 * Checks the data folder `dataDir` (see the module's comment), which no store may be running on.
 * Reads only, but for the lock file it takes and what opening LMDB does at any open (it starts
 * from its last flushed commit, docs/STORAGE.md "The index").
 * @param present the store's presenter (StoreOptions.present): with it, every record of the index
 *   is read back (`recordsNotReadingBack`)
 * @returns what it found; `damage` is true when anything loses or risks acknowledged data
 * @throws CheckRefused when `dataDir` is not a folder or a running store holds it
 * @throws the fs error of a failed read
 */
export async function checkStore(dataDir: string, present?: RecordPresenter): Promise<CheckReport> {
  const unlock = lockForCheck(dataDir);
  try {
    return await checkLocked(dataDir, present);
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

async function checkLocked(dataDir: string, present: RecordPresenter | undefined): Promise<CheckReport> {
  const blobsDir = path.join(dataDir, 'blobs');
  const onDisk = segmentsOnDisk(blobsDir);
  const file = inspectIndexFile(dataDir, { walk: true });
  const report: CheckReport = {
    dataDir,
    index: indexPart(file),
    log: { segments: onDisk.length, bytes: 0, frames: 0, records: 0, copies: 0, changes: 0, tombstones: 0, fileFrames: 0, damageCount: 0, damage: [], tails: [], shortSegments: [] },
    quarantine: (({ ranges, bytes, lostEvents }) => ({ ranges, bytes, lostEvents }))(readQuarantine(quarantineDirOf(dataDir))),
    indexAgainstLog: null,
    damage: false,
    rebuild: null,
  };
  let index: IndexState | undefined;
  if (file.state === 'sound') {
    try {
      index = readIndex(new StoredEvents(openDatabases(dataDir), blocksDirOf(dataDir)));
    } catch (err) {
      report.index.state = 'unreadable';
      report.index.problem = (err as Error).message;
    }
  }
  try {
    if (index) {
      report.indexAgainstLog = {
        logPosition: index.position ?? null, readsAsNew: readsAsNew(index.dbs, onDisk), metaForeign: metaIsForeign(index.dbs),
        unknownSegments: await unknownSegmentsOf(index.dbs, index.segments, blobsDir, onDisk), events: index.events, files: index.fileCount, badLocationCount: 0, badLocations: [],
        recordsIndexed: 0, recordsToReplay: 0, deletedByCleanup: 0, unindexedCount: 0, unindexed: [], indexedRecordsDamaged: 0, recordsNotReadingBack: 0, recordsNotReadingBackAt: [], bothCopies: 0, indexOnly: 0, indexOnlyIds: [],
      };
    }
    const copies: LogCopies = { events: new Set(), tombstoned: new Set(), unindexed: [] };
    for (const segment of onDisk) await checkSegment(report, blobsDir, segment, index, copies);
    if (index && report.indexAgainstLog) {
      const against = report.indexAgainstLog;
      const scanned = new Set(onDisk);
      // Locations in segments with no file (a reclaimed segment has no location left).
      for (const segment of index.files.keys()) if (!scanned.has(segment)) checkLocations(index, segment, null, new Map(), [], against);
      for (const [segment, { committed, liveBlobs }] of index.segments) {
        const size = scanned.has(segment) ? fs.statSync(path.join(blobsDir, segmentFileName(segment))).size : null;
        if (size === null ? liveBlobs > 0 : size < committed) report.log.shortSegments.push({ segment, fileBytes: size, committed, liveBlobs });
      }
      judgeUnindexed(index, against, copies);
      countCopies(index, against, copies);
      if (present) checkRecords(index.stored, against, present);
    }
  } finally {
    index?.stored.close();
    await index?.dbs.root.close();
  }
  const against = report.indexAgainstLog;
  report.damage = report.index.state === 'damaged' || report.index.state === 'unreadable'
    || (report.index.state === 'absent' && onDisk.length > 0)
    || report.log.damageCount > 0 || report.log.tails.some((t) => t.acknowledged) || report.log.shortSegments.length > 0
    || (against !== null && (against.readsAsNew || against.metaForeign || against.unknownSegments.length > 0 || against.recordsNotReadingBack > 0 || against.badLocationCount > 0 || against.unindexedCount > 0 || against.indexOnly > 0));
  report.rebuild = needsRebuild(report);
  return report;
}
