/**
 * The scrub of the running store (docs/STORAGE.md, "The scrub"), run by the lifecycle worker a
 * step at a time: it re-reads every frame of the log in log order, checks each CRC32C, and checks
 * that each live event has its two copies, the log's (its home frame and the update frames after
 * it, whole) and the index's (a record that decodes to the same event, with that record's presented
 * JSON: record-codec.ts `wholeRecord`). What it finds:
 *
 * - a live event whose log copy is damaged or gone: its record is copied again into the log from
 *   the index (`repair`, a record copy), so both copies are whole again: **repaired**;
 * - an index record that does not read back as its event: **unrepairable** here (LMDB's pages are
 *   rewritten only by LMDB); `edge-events check --repair` rebuilds the index from the log;
 * - a file (image, video, local-only file) whose bytes fail their CRC: it has one copy, so it is
 *   **unrepairable**: its bytes are copied into quarantine/ and its entry dropped, so a download
 *   answers 404 instead of wrong bytes, and the event keeps its record.
 *
 * - a live block whose tables (locations, ids, postings and their offsets: read whole after the
 *   log, each pass; its records are each checked as an event's index copy) do not match their
 *   CRC32C: **unrepairable** here (a block is written once); reads that need the damaged part
 *   answer `index_damaged`, and `edge-events check --repair` rebuilds the index from the log.
 *
 * Blobs larger than SCRUB_MAX_BLOB_BYTES (videos) are not read here: the consistency pass
 * (consistency.ts) and `edge-events check` verify them.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { wholeRecord } from '../index/record-codec.js';
import { quarantine, quarantineDirOf } from '../log/quarantine.js';
import { segmentFileName } from '../log/segment-files.js';
import { blobCrcMatches, FRAME_HEADER_BYTES, scanSegment, type DamagedBytes, type ScannedFrame } from '../log/segment-frames.js';
import { storeHandles, type StoreView } from '../read/store-view.js';
import { SECTIONS } from '../block/block-format.js';
import type { BlockReader } from '../block/block-reader.js';
import { deleteFiles } from './event-deletion.js';
import { CreateRanges, framesOf } from './frame-accounting.js';

/** Largest blob (bytes) a step reads whole to check its CRC. */
export const SCRUB_MAX_BLOB_BYTES = 16 * 1024 * 1024;
/** Findings kept for /stats `scrub.recent`. */
const RECENT_FINDINGS = 20;

/** One thing the scrub found (/stats `scrub.recent[]`; docs/API.md, "Statistics"). */
export interface ScrubFinding {
  /** When (ISO 8601). */
  at: string;
  /** `log_copy`: a live event's frames in the log; `index_copy`: its record in the index; `file`: a file's bytes. */
  copy: 'log_copy' | 'index_copy' | 'file';
  repaired: boolean;
  /** The events concerned, by id. */
  event_ids: string[];
  /** The file concerned (`copy` `file`). */
  file_id: string | null;
  /** Where: the segment file (or `blocks/<name>`, a block) and the byte offset of the frame, the damage or the damaged section. */
  file: string;
  offset: number;
  detail: string;
}

/** The scrub's figures (/stats `scrub`, /metrics). Times in ms since the epoch. */
export interface ScrubStatus {
  passes: number;
  lastPassAt: number | null;
  /** Bytes of frames read and checked, since start. */
  verifiedBytes: number;
  damaged: number;
  repaired: number;
  unrepairable: number;
  recent: ScrubFinding[];
}

/** What a step may ask of the store's writer: copy the records of these events into the log again (EventStore.rewriteLogCopies). */
export type LogCopyRepair = (createdAts: number[]) => Promise<number>;

/** What the scrub has seen of the segment under way. */
interface SegmentSeen {
  segment: number;
  /** Ids of the events whose whole record frame or record copy, and of those whose whole update frames, were read. */
  homes: Set<string>;
  updates: Set<string>;
}

/** The sections of a block the scrub reads whole: all but the records, which it reads one by one as index copies. */
const BLOCK_TABLES = SECTIONS.filter((name) => name !== 'records');

/** Bytes of `block`'s BLOCK_TABLES. */
function tableBytes(block: BlockReader): number {
  return BLOCK_TABLES.reduce((n, name) => n + block.toc.sections[name].length, 0);
}

/** The scrub of one store; see the module comment. */
export class LogScrub {
  readonly status: ScrubStatus = { passes: 0, lastPassAt: null, verifiedBytes: 0, damaged: 0, repaired: 0, unrepairable: 0, recent: [] };
  private cursor = { segment: 0, offset: 0 };
  /** created_at (µs) of the oldest row of the next block a pass reads, once the log is read. */
  private blockCursor = -Infinity;
  private seen: SegmentSeen | undefined;
  /** The segments' create ranges as this step's snapshot holds them. */
  private ranges: CreateRanges | undefined;

  /**
   * @param store the lifecycle worker's view of the store
   * @param repair copies records into the log again (a writer job)
   * @param onFinding told each finding, once (the worker logs it)
   */
  constructor(private readonly store: StoreView, private readonly repair: LogCopyRepair, private readonly onFinding: (finding: ScrubFinding) => void) {}

  /** Bytes a whole pass reads: the committed bytes of every segment, and the live blocks' tables. */
  passBytes(): number {
    let bytes = 0;
    for (const { value } of this.store[storeHandles].dbs.segments.getRange()) bytes += value.committed;
    for (const block of this.store[storeHandles].stored.blocks().blocks) bytes += tableBytes(block);
    return bytes;
  }

  /**
   * Reads and checks about `budget` bytes of the log from where the last step stopped, going on to
   * the next segment, and from the first after the last (a pass done).
   * @throws the fs error of a read other than a missing segment, the error of a repair
   */
  async step(budget: number): Promise<void> {
    const { dbs, blobsDir } = this.store[storeHandles];
    dbs.root.resetReadTxn(); // the writer's commits on the HTTP thread, compactions among them
    this.ranges = CreateRanges.read(dbs);
    const segments = [...dbs.segments.getKeys()].filter((segment) => segment >= this.cursor.segment);
    let left = budget;
    for (const segment of segments) {
      if (segment !== this.cursor.segment) this.cursor = { segment, offset: 0 };
      const read = await this.readSegment(path.join(blobsDir, segmentFileName(segment)), segment, left);
      left -= read.bytes;
      if (!read.ended) return;
      await this.finishSegment(segment);
      if (left <= 0) {
        this.cursor = { segment: segment + 1, offset: 0 };
        return;
      }
    }
    if (!this.readBlocks(left)) {
      this.cursor = { segment: Infinity, offset: 0 }; // the log is read: the blocks go on
      return;
    }
    this.blockCursor = -Infinity;
    this.status.passes++;
    this.status.lastPassAt = Date.now();
    this.cursor = { segment: 0, offset: 0 };
  }

  /**
   * Reads the live blocks' tables, oldest first, from the block cursor on, for about `budget` bytes
   * (one block at least), and names each whose tables fail their CRC32C (block-reader.ts
   * `damagedSections`).
   * @returns true once every block is read (the pass is done)
   */
  private readBlocks(budget: number): boolean {
    let left = budget;
    for (const block of this.store[storeHandles].stored.blocks().blocks) {
      const { oldest } = block.bounds();
      if (oldest < this.blockCursor) continue;
      if (left <= 0) {
        this.blockCursor = oldest;
        return false;
      }
      const damaged = block.damagedSections(undefined, BLOCK_TABLES);
      const bytes = tableBytes(block);
      this.status.verifiedBytes += bytes;
      left -= bytes;
      if (damaged.length > 0) {
        this.found({
          copy: 'index_copy', repaired: false, event_ids: [], file_id: null, file: `blocks/${path.basename(block.file)}`, offset: block.toc.sections[damaged[0]].offset,
          detail: `its ${damaged.join(', ')} ${damaged.length > 1 ? 'sections fail their' : 'section fails its'} CRC32C: reads that need it answer index_damaged; \`edge-events check --repair\` rebuilds the index from the log`,
        });
      }
    }
    return true;
  }

  /** Reads `segment` from the cursor for up to `budget` bytes; `ended` once its last whole frame is read. */
  private async readSegment(file: string, segment: number, budget: number): Promise<{ bytes: number; ended: boolean }> {
    const handle = await fsp.open(file, 'r').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined; // reclaimed meanwhile
      throw err;
    });
    if (!handle) return { bytes: 0, ended: true };
    if (this.seen?.segment !== segment) this.seen = { segment, homes: new Set(), updates: new Set() };
    let bytes = 0;
    try {
      for await (const piece of scanSegment(handle, this.cursor.offset, segment)) {
        const end = piece.kind === 'damaged' ? piece.end : piece.offset + piece.length;
        bytes += end - this.cursor.offset;
        this.cursor.offset = end;
        if (piece.kind === 'damaged') await this.damagedBytes(file, segment, piece);
        else await this.frame(handle, file, segment, piece);
        if (bytes >= budget) return { bytes, ended: false };
      }
    } finally {
      await handle.close();
    }
    return { bytes, ended: true };
  }

  /** Checks one whole frame: a blob's CRC; a live event's home against the index. */
  private async frame(handle: fsp.FileHandle, file: string, segment: number, frame: ScannedFrame): Promise<void> {
    this.status.verifiedBytes += frame.length + FRAME_HEADER_BYTES;
    const seen = this.seen!;
    if (frame.kind === 'update') seen.updates.add(frame.id);
    else if (frame.kind === 'record' || frame.kind === 'copy') {
      seen.homes.add(frame.id);
      this.checkIndexCopy(file, segment, frame);
    } else if (frame.kind !== 'tombstone' && frame.length <= SCRUB_MAX_BLOB_BYTES && !(await blobCrcMatches(handle, frame))) {
      await this.damagedFile(file, segment, frame.id, frame.offset, frame.offset + frame.length);
    }
  }

  /** Damaged bytes: the files whose frames were there have lost their only copy; the events homed there are found by `finishSegment`. */
  private async damagedBytes(file: string, segment: number, damage: DamagedBytes): Promise<void> {
    const { dbs } = this.store[storeHandles];
    for (const { key, value } of dbs.files.getRange()) {
      if (value.segment === segment && value.offset >= damage.offset && value.offset < damage.end) await this.damagedFile(file, segment, key, damage.offset, damage.end);
    }
  }

  /** A live file whose bytes fail their CRC: quarantined, its entry dropped, named. */
  private async damagedFile(file: string, segment: number, fileId: string, offset: number, end: number): Promise<void> {
    const { dbs, blobsDir } = this.store[storeHandles];
    const entry = dbs.files.get(fileId);
    if (!entry || entry.segment !== segment) return; // not live, or live elsewhere
    const owner = this.store.getRecord(entry.event);
    await quarantine(blobsDir, quarantineDirOf(path.dirname(blobsDir)), { segment, offset: offset - FRAME_HEADER_BYTES, end, lostEvents: [], lostChanges: [] });
    await deleteFiles(this.store, [{ createdAt: entry.event, fileId }]);
    this.found({ copy: 'file', repaired: false, event_ids: owner ? [owner.id] : [], file_id: fileId, file, offset, detail: 'its bytes fail their CRC32C; a file has one copy: quarantined, and its downloads answer 404' });
  }

  /** The index's record of the event whose home `frame` is must read back as that event. */
  private checkIndexCopy(file: string, segment: number, frame: ScannedFrame): void {
    const { dbs, stored } = this.store[storeHandles];
    let createdAt: number | undefined;
    try {
      createdAt = stored.createdAtOf(frame.id);
      if (createdAt === undefined || framesOf(dbs, this.ranges!, createdAt).home !== segment) return; // deleted, or superseded
      const value = stored.value(createdAt);
      if (value && wholeRecord(value, this.store.present)?.id === frame.id) return;
    } catch {
      // an index page LMDB cannot read, a block's record failing its CRC32C: the same finding
    }
    this.found({
      copy: 'index_copy', repaired: false, event_ids: [frame.id], file_id: null, file, offset: frame.offset - FRAME_HEADER_BYTES,
      detail: 'the index\'s record does not read back as this event; the log\'s copy is whole: `edge-events check --repair` rebuilds the index from the log',
    });
  }

  /**
   * Once a segment is read: every live event homed in it, or with update frames in it, whose frames
   * were not read whole there has lost its log copy: it is copied again from the index.
   */
  private async finishSegment(segment: number): Promise<void> {
    const seen = this.seen;
    this.seen = undefined;
    if (!seen) return;
    const { dbs, stored } = this.store[storeHandles];
    const lost = new Map<number, string>();
    const entry = dbs.segments.get(segment);
    const ranges = this.ranges!;
    const idOf = (createdAt: number): string => {
      try {
        return this.store.getRecord(createdAt)?.id ?? '';
      } catch {
        return '';
      }
    };
    if (entry?.firstCreate !== undefined && entry.lastCreate !== undefined) {
      for (const createdAt of stored.createdAts({ from: entry.firstCreate, before: entry.lastCreate + 1 })) {
        if (framesOf(dbs, ranges, createdAt).home !== segment) continue;
        const id = idOf(createdAt);
        if (!seen.homes.has(id)) lost.set(createdAt, id);
      }
    }
    for (const { key, value } of dbs.recordFrames.getRange()) {
      const id = value.home === segment || value.updates.includes(segment) ? idOf(key) : undefined;
      if (id === undefined || !stored.holds(key)) continue;
      if ((value.home === segment && !seen.homes.has(id)) || (value.updates.includes(segment) && !seen.updates.has(id))) lost.set(key, id);
    }
    if (lost.size === 0) return;
    // Frames appended after the walk passed (the active segment), which a checkpoint since made
    // live, were not read: a second walk, after this thread's snapshot was taken, finds them.
    const whole = await this.wholeFramesOf(segment);
    for (const [createdAt, id] of lost) if (whole.has(id)) lost.delete(createdAt);
    if (lost.size > 0) await this.repairLogCopies(segment, lost);
  }

  /** Ids of the events with a whole record frame, record copy or update frame in `segment`, read from its start. */
  private async wholeFramesOf(segment: number): Promise<Set<string>> {
    const ids = new Set<string>();
    const handle = await fsp.open(path.join(this.store[storeHandles].blobsDir, segmentFileName(segment)), 'r').catch(() => undefined);
    if (!handle) return ids;
    try {
      for await (const piece of scanSegment(handle, 0, segment)) {
        if (piece.kind === 'record' || piece.kind === 'copy' || piece.kind === 'update') ids.add(piece.id);
      }
    } finally {
      await handle.close();
    }
    return ids;
  }

  /** Copies the records of `lost` (created_at -> id) into the log again from the index, and names them. */
  private async repairLogCopies(segment: number, lost: Map<number, string>): Promise<void> {
    const readable = [...lost].filter(([, id]) => id !== '');
    const copied = readable.length > 0 ? await this.repair(readable.map(([createdAt]) => createdAt)) : 0;
    const file = segmentFileName(segment);
    if (copied > 0) {
      this.found({ copy: 'log_copy', repaired: true, event_ids: readable.map(([, id]) => id), file_id: null, file, offset: 0, detail: 'their frames in the log are damaged or gone: copied again from the index' });
    }
    const unreadable = lost.size - readable.length;
    if (unreadable > 0 || copied < readable.length) {
      this.found({ copy: 'log_copy', repaired: false, event_ids: [], file_id: null, file, offset: 0, detail: `${lost.size - copied} events have lost their log copy and the index cannot give their record back` });
    }
  }

  private found(finding: Omit<ScrubFinding, 'at'>): void {
    const full: ScrubFinding = { at: new Date().toISOString(), ...finding };
    this.status.damaged++;
    if (full.repaired) this.status.repaired++;
    else this.status.unrepairable++;
    this.status.recent = [full, ...this.status.recent].slice(0, RECENT_FINDINGS);
    this.onFinding(full);
  }
}
