/**
 * Faults in the two copies of an event's record (docs/STORAGE.md, "Two copies of every record"):
 * the log's (its record frame or record copy) and the index's (its record in
 * `db/data.mdb`), for the disk-fault harness (scripts/disk-faults.ts; docs/RELIABILITY.md, "Disk
 * faults"). Each kind is drawn on one of the harness's data folders (`FOLDER_OF`):
 *
 * - `log copy: ...`: a flipped byte, a zeroed 4 KiB page or a lost 4 KiB page in record frames the
 *   index has checkpointed (before its log position), in the folder of the older rows; the running
 *   store's scrub must find and mend them from the index;
 * - `index copy after a cleanup: ...`: the same faults in a leaf page of the index's `events`
 *   database holding records of events whose segment a cleanup reclaimed (their log copy is a
 *   record copy the compaction wrote; before record copies the index was their only copy);
 * - `both copies, different events`: the log frame of event A and the index page of event B,
 *   with a flipped byte, a zeroed page and a lost page in turn;
 * - `db/ lost after a cleanup`: the whole index gone, after a cleanup of 16,000 small events.
 *
 * A lost page of the log reads as it was before the write that appended its last frame: the bytes
 * of the frames before it, zeros from that frame's start (the store writes zeros ahead of an
 * append). A lost page of the index reads as it was before the cleanup (`indexAtCleanStop`).
 */
import fs from 'node:fs';
import type { RecordPage } from './index-pages.js';
import { alignDown, olderPage, onIndex, PAGE_BYTES, segmentPath, type Fault, type FaultAction, type FaultLayout } from './fault-injection.js';
import type { LogFrame, SegmentFile } from './log-frames.js';
import type { Random } from './random.js';

export const COPY_FAULT_KINDS = [
  'log copy: flipped byte', 'log copy: zeroed page', 'log copy: lost page',
  'index copy after a cleanup: flipped byte', 'index copy after a cleanup: zeroed page', 'index copy after a cleanup: lost page',
  'both copies, different events',
  'db/ lost after a cleanup',
] as const;
export type CopyFaultKind = typeof COPY_FAULT_KINDS[number];

/** The harness's data folders (scripts/disk-faults.ts): `mixed` the older rows', `reclaimed` and `cleanup` made after a cleanup. */
export type FolderName = 'mixed' | 'reclaimed' | 'cleanup';

export function folderOf(kind: CopyFaultKind): FolderName {
  if (kind.startsWith('log copy')) return 'mixed';
  return kind === 'db/ lost after a cleanup' ? 'cleanup' : 'reclaimed';
}

/** One draw: the faults made together, and the events whose copies they hit. */
export interface CopyFault {
  kind: CopyFaultKind;
  target: string;
  faults: Fault[];
  /** Events with a log frame in the damaged bytes of a segment. */
  logHit: Set<string>;
  /** Events with their index record (its node) in the damaged bytes of data.mdb. */
  indexHit: Set<string>;
  /** Files (images) with bytes of their frame in the damaged bytes of a segment: one copy, so they may be lost (never served wrong). */
  filesHit: Set<string>;
}

const DATA_FRAMES = new Set(['record', 'update', 'copy', 'tombstone']);
const ACTIONS: { action: FaultAction; words: string }[] = [{ action: 'flip', words: 'a flipped byte' }, { action: 'zero', words: 'a zeroed page' }, { action: 'revert', words: 'a lost page' }];
const actionOfKind = (kind: CopyFaultKind, run: number) => (kind.endsWith('flipped byte') ? ACTIONS[0] : kind.endsWith('zeroed page') ? ACTIONS[1] : kind.endsWith('lost page') ? ACTIONS[2] : ACTIONS[run % 3]);

/** Whether the index has checkpointed `frame` (it ends at or before the index's log position). */
function checkpointed(layout: FaultLayout, frame: LogFrame): boolean {
  const { segment, offset } = layout.position;
  return frame.segment < segment || (frame.segment === segment && frame.end <= offset);
}

/** A 4 KiB page of a segment and the frames it overlaps. */
interface LogPage {
  segment: SegmentFile;
  offset: number;
  frames: LogFrame[];
}

/**
 * The 4 KiB pages of the log that hold a byte of a home frame `wanted` accepts and overlap only
 * frames `wanted` accepts; without `files`, only record, update, copy and tombstone frames (no
 * image's bytes: a file has one copy).
 */
function dataPages(layout: FaultLayout, wanted: (frame: LogFrame) => boolean, files = false): LogPage[] {
  const pages: LogPage[] = [];
  for (const segment of layout.segments) {
    const frames = layout.frames.framesOf(segment.segment);
    const seen = new Set<number>();
    for (const home of frames) {
      if (!isHome(home) || !wanted(home)) continue;
      for (let offset = alignDown(home.start); offset < home.end; offset += PAGE_BYTES) {
        if (seen.has(offset)) continue;
        seen.add(offset);
        const on = frames.filter((f) => f.start < offset + PAGE_BYTES && f.end > offset);
        if (on.every((f) => (files || DATA_FRAMES.has(f.kind)) && wanted(f))) pages.push({ segment, offset, frames: on });
      }
    }
  }
  return pages;
}

const isHome = (frame: LogFrame | undefined) => frame?.kind === 'record' || frame?.kind === 'copy';

/** The last frame that begins on `page`: what the page's last write appended. */
function lastAppended(page: LogPage): LogFrame | undefined {
  return page.frames.filter((f) => f.start >= page.offset).sort((a, b) => b.start - a.start)[0];
}

/** Reads bytes `offset` to `offset + length` of the undamaged folder's `segment`. */
function readSegment(segment: SegmentFile, offset: number, length: number): Buffer {
  const bytes = Buffer.alloc(length);
  const fd = fs.openSync(segment.file, 'r');
  try {
    fs.readSync(fd, bytes, 0, length, offset);
  } finally {
    fs.closeSync(fd);
  }
  return bytes;
}

/** `action` on `page` of the log (for `flip`, a byte of a home frame on it). */
function onLogPage(kind: string, action: FaultAction, page: LogPage, layout: FaultLayout, rng: Random): { fault: Fault; hit: Set<string>; files: Set<string>; words: string } {
  const drawn = onLogPageBytes(kind, action, page, layout, rng);
  const { offset, length } = drawn.fault;
  const files = new Set(page.frames.filter((f) => !DATA_FRAMES.has(f.kind) && f.start < offset + length && f.end > offset).map((f) => f.id));
  const hit = new Set([...drawn.hit].filter((id) => page.frames.some((f) => f.id === id && DATA_FRAMES.has(f.kind) && f.start < offset + length && f.end > offset)));
  return { ...drawn, hit, files };
}

/** The bytes `action` damages on `page`, and the events with a frame in them (images' events too). */
function onLogPageBytes(kind: string, action: FaultAction, page: LogPage, layout: FaultLayout, rng: Random): { fault: Fault; hit: Set<string>; words: string } {
  const base = { kind, action, file: segmentPath(page.segment), segment: page.segment.segment };
  const at = `segment ${page.segment.segment}, page at byte ${page.offset.toLocaleString('en-US')}`;
  if (action === 'flip') {
    const home = rng.pick(page.frames.filter((f) => f.kind === 'record' || f.kind === 'copy'));
    const offset = rng.int(Math.max(home.start, page.offset), Math.min(home.end, page.offset + PAGE_BYTES) - 1);
    return { fault: { ...base, target: at, offset, length: 1 }, hit: new Set([home.id]), words: `a byte of ${home.kind === 'copy' ? 'the record copy' : 'the record frame'} of event ${home.id}` };
  }
  if (action === 'zero') {
    return { fault: { ...base, target: at, offset: page.offset, length: PAGE_BYTES }, hit: layout.frames.eventsIn(page.segment.segment, page.offset, page.offset + PAGE_BYTES), words: `a page over ${page.frames.length} frames (${describeFrames(page.frames)})` };
  }
  // A lost write: the page as before its last frame was appended.
  const from = lastAppended(page)?.start ?? page.offset;
  const revertTo = readSegment(page.segment, page.offset, PAGE_BYTES).fill(0, from - page.offset);
  return {
    fault: { ...base, target: at, offset: from, length: page.offset + PAGE_BYTES - from, revertTo: revertTo.subarray(from - page.offset) },
    hit: layout.frames.eventsIn(page.segment.segment, from, page.offset + PAGE_BYTES),
    words: `a page over ${page.frames.length} frames (${describeFrames(page.frames)}) reverting to before its last frame's append (its last ${PAGE_BYTES - (from - page.offset)} bytes back to zeros)`,
  };
}

/** e.g. `3 record, 1 image`. */
function describeFrames(frames: LogFrame[]): string {
  const counts = new Map<string, number>();
  for (const f of frames) counts.set(f.kind, (counts.get(f.kind) ?? 0) + 1);
  return [...counts].map(([kind, count]) => `${count} ${kind}`).join(', ');
}

/** The events whose index records are on `page`, with nodes overlapping bytes `from` to `to` of data.mdb. */
function recordsIn(page: RecordPage, from: number, to: number): Set<string> {
  return new Set(page.nodes.filter((node) => node.event !== undefined && node.from < to && node.to > from).map((node) => node.event!));
}

/**
 * `action` on record page `page` of data.mdb or of a block file: a byte of a record's node, its
 * first 4 KiB, or those 4 KiB as before the cleanup (a block's: the zeros before it was written,
 * since a block is written once).
 */
function onRecordPage(kind: string, action: FaultAction, page: RecordPage, layout: FaultLayout, rng: Random): { fault: Fault; hit: Set<string> } {
  if (page.file) return onBlockPage(kind, action, page, rng);
  const start = page.page * layout.indexPageSize;
  const words = `page ${page.page} of events, holding ${page.events.length} records`;
  if (action === 'flip') {
    const node = rng.pick(page.nodes.filter((nd) => nd.event !== undefined));
    const offset = rng.int(node.from, node.to - 1);
    return { fault: onIndex(kind, `a byte of event ${node.event}'s record on ${words}`, offset, 1, layout), hit: new Set([node.event!]) };
  }
  const fault = onIndex(kind, words, start, PAGE_BYTES, layout);
  if (action === 'revert') {
    fault.action = 'revert';
    fault.revertTo = olderPage(layout, start);
  } else {
    fault.action = 'zero';
  }
  return { fault, hit: recordsIn(page, start, start + PAGE_BYTES) };
}

/** `action` on 4 KiB page `page` of a block file (onRecordPage). */
function onBlockPage(kind: string, action: FaultAction, page: RecordPage, rng: Random): { fault: Fault; hit: Set<string> } {
  const start = page.page * PAGE_BYTES;
  const words = `page ${page.page} of ${page.file}, holding ${page.events.length} records`;
  const length = Math.min(PAGE_BYTES, page.fileBytes! - start);
  const fault: Fault = { kind, action, target: words, file: page.file!, segment: undefined, offset: start, length };
  if (action === 'flip') {
    const node = rng.pick(page.nodes);
    fault.offset = rng.int(Math.max(node.from, start), Math.min(node.to, start + PAGE_BYTES) - 1);
    fault.length = 1;
    fault.target = `a byte of event ${node.event}'s record on ${words}`;
    return { fault, hit: new Set([node.event!]) };
  }
  if (action === 'revert') fault.revertTo = Buffer.alloc(length);
  return { fault, hit: new Set(page.nodes.filter((node) => node.from < start + PAGE_BYTES && node.to > start).map((node) => node.event!)) };
}

/**
 * The record pages holding a record of an event whose home is a record copy (its segment
 * reclaimed), in data.mdb and in the block files; for a lost page of data.mdb, only those changed
 * since before the cleanup.
 */
function reclaimedPages(layout: FaultLayout, changedOnly: boolean): RecordPage[] {
  const pages = [...layout.recordPages, ...layout.blockPages].filter((p) => p.events.some((id) => layout.frames.homeOf(id)?.kind === 'copy'));
  if (!changedOnly) return pages;
  return pages.filter((p) => p.file !== undefined || !layout.index.subarray(p.page * layout.indexPageSize, p.page * layout.indexPageSize + PAGE_BYTES).equals(olderPage(layout, p.page * layout.indexPageSize)));
}

/**
 * Draws where run `run` of `kind` lands on `layout` (the folder `folderOf(kind)` names).
 * @throws Error when the folder holds nothing the draw needs
 */
export function drawCopyFault(kind: CopyFaultKind, run: number, layout: FaultLayout, rng: Random): CopyFault {
  const { action, words } = actionOfKind(kind, run);
  if (kind === 'db/ lost after a cleanup') {
    return { kind, target: 'db/ removed', faults: [{ kind, action: 'remove', target: 'db/', file: 'db', segment: undefined, offset: 0, length: 0 }], logHit: new Set(), indexHit: new Set(), filesHit: new Set() };
  }
  if (kind.startsWith('log copy')) {
    // Images lie between the record frames: a page of them may hold an image's bytes too. A lost
    // page loses its last append: one of a record frame.
    const pages = dataPages(layout, (frame) => checkpointed(layout, frame), true).filter((page) => action !== 'revert' || isHome(lastAppended(page)));
    if (pages.length === 0) throw new Error('no page of checkpointed record frames');
    const drawn = onLogPage(kind, action, rng.pick(pages), layout, rng);
    return { kind, target: `${words}, checkpointed: ${drawn.words} (${drawn.fault.target})`, faults: [drawn.fault], logHit: drawn.hit, indexHit: new Set(), filesHit: drawn.files };
  }
  const pages = reclaimedPages(layout, action === 'revert');
  if (pages.length === 0) throw new Error(`no page of the index holds records of events whose segment was reclaimed${action === 'revert' ? ' and changed since before the cleanup' : ''}`);
  if (kind.startsWith('index copy')) {
    const drawn = onRecordPage(kind, action, rng.pick(pages), layout, rng);
    return { kind, target: `${words}: ${drawn.fault.target}`, faults: [drawn.fault], logHit: new Set(), indexHit: drawn.hit, filesHit: new Set() };
  }
  // Both copies, of different events: event A's log frame, then a record page of events none of which the log's damage hit.
  const logPages = dataPages(layout, () => true);
  if (logPages.length === 0) throw new Error('no page of record frames without a file\'s bytes');
  const log = onLogPage(kind, action, rng.pick(logPages), layout, rng);
  const apart = pages.filter((p) => p.events.every((id) => !log.hit.has(id)));
  if (apart.length === 0) throw new Error('every record page holds an event the log\'s damage hit');
  const index = onRecordPage(kind, action, rng.pick(apart), layout, rng);
  return {
    kind, target: `${words} in each: in the log ${log.words} (${log.fault.target}); in the index ${index.fault.target}`,
    faults: [log.fault, index.fault], logHit: log.hit, indexHit: index.hit, filesHit: log.files,
  };
}

/** How many runs `kind` gets: `runs`, but one for the lost index (it has one draw). */
export function copyRunsOf(kind: CopyFaultKind, runs: number): number {
  return kind === 'db/ lost after a cleanup' ? 1 : runs;
}
