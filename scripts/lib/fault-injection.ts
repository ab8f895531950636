/**
 * Disk faults made on a copy of a data folder, as an SD card or eMMC returns them
 * (docs/STORAGE.md, "Damage in the log"; docs/RELIABILITY.md, "Disk faults"): a flipped byte, a
 * zeroed 4 KiB page, a lost 4 KiB page (a write that never reached the flash: the page reads as
 * it was before), a file cut short and a missing segment, in the log's segments
 * (`blobs/seg-*.blob`) and in the index (`db/data.mdb`). Where each lands is drawn from a seeded
 * generator, so `npm run disk-faults -- --seed N` makes the same choices on the same layout.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { RecordPage } from './index-pages.js';
import type { FrameMap, SegmentFile } from './log-frames.js';
import type { Random } from './random.js';

/** The faults, in the order the harness runs them. */
export const FAULT_KINDS = [
  'segment: flipped byte', 'segment: zeroed page', 'segment: lost page', 'segment: truncated', 'segment: missing',
  'data.mdb: flipped byte', 'data.mdb: zeroed page', 'data.mdb: lost page', 'data.mdb: truncated',
  'block: flipped byte', 'block: zeroed page', 'block: truncated',
] as const;
export type FaultKind = typeof FAULT_KINDS[number];

/** The size of a flash page as the faults take it (bytes): zeroed and lost pages are 4 KiB, 4 KiB aligned. */
export const PAGE_BYTES = 4096;

/** What the draws of one data folder need to know of it (read once from the undamaged folder). */
export interface FaultLayout {
  /** The log's segment files, ascending, as the undamaged folder holds them. */
  segments: SegmentFile[];
  frames: FrameMap;
  /** The log position the index covers (`edge-events check`): frames after it are replayed at the next start. */
  position: { segment: number; offset: number };
  /** Bytes of each segment at the clean stop, before the writes since (absent: the segment did not exist). */
  segmentBytesAtCleanStop: Map<number, number>;
  /** `db/data.mdb` of the undamaged folder, and as it was at the clean stop (the older content a lost page reverts to). */
  index: Buffer;
  indexAtCleanStop: Buffer;
  /** LMDB's page size, from meta page 0 (bytes). */
  indexPageSize: number;
  /** The leaf pages of the index's `events` database and the records on each (index-pages.ts). */
  recordPages: RecordPage[];
  /** The 4 KiB pages of the block files holding records, and the records on each (block-pages.ts). */
  blockPages: RecordPage[];
}

/**
 * What a fault does to its bytes: `flip` inverts the byte at `offset`, `zero` writes zeros over
 * `length` bytes, `revert` writes `revertTo` there (a lost write: the bytes as they were before),
 * `truncate` cuts the file at `offset`, `remove` deletes the file (or folder: `db/`).
 */
export type FaultAction = 'flip' | 'zero' | 'revert' | 'truncate' | 'remove';

/** One fault: where it is and what it does. Offsets and lengths in bytes. */
export interface Fault {
  /** The row of the harness's table it counts in (a FaultKind, or one of copy-faults.ts). */
  kind: string;
  action: FaultAction;
  /** Where the offset was drawn from, in words. */
  target: string;
  /** The damaged file, relative to the data folder. */
  file: string;
  /** The segment, for the log's faults. */
  segment: number | undefined;
  /** The first damaged byte (a truncation's new length; 0 for a missing segment). */
  offset: number;
  /** Bytes damaged from `offset`: 1 for a flipped byte, the page's for a page, the rest of the file when cut or missing. */
  length: number;
  /** For a lost page: the bytes the page reverts to. */
  revertTo?: Buffer;
}

/** `P_BRANCH` and `P_LEAF` of an LMDB page header's flags (mdb.c; the header as src/store/index/index-file-check.ts reads it). */
const P_BRANCH = 0x01;
const P_LEAF = 0x02;
/** Offset of a page header's flags (u16 LE), after the page number and the txnid (u64 each) and a pad (u16). */
const PAGE_FLAGS_AT = 18;

export const segmentPath = (segment: SegmentFile) => path.join('blobs', path.basename(segment.file));
const INDEX_FILE = path.join('db', 'data.mdb');
export const alignDown = (offset: number) => offset - (offset % PAGE_BYTES);

/** Bytes `from` to `to` (exclusive) of one segment: a place a draw may fall. */
interface Span {
  segment: SegmentFile;
  from: number;
  to: number;
}

/** A byte drawn uniformly over `spans`. @throws Error when the spans hold no byte */
function drawByte(spans: Span[], rng: Random): { segment: SegmentFile; offset: number } {
  const total = spans.reduce((sum, s) => sum + (s.to - s.from), 0);
  if (total <= 0) throw new Error('no byte of the log to draw from');
  let at = rng.int(0, total - 1);
  for (const span of spans) {
    if (at < span.to - span.from) return { segment: span.segment, offset: span.from + at };
    at -= span.to - span.from;
  }
  throw new Error('unreachable');
}

/** The frames' extent of each segment (the zeros written ahead of the last append are no frame), from `after` on. */
function frameSpans(layout: FaultLayout, after: (segment: number) => number): Span[] {
  return layout.segments.map((segment) => {
    const frames = layout.frames.framesOf(segment.segment);
    const end = frames.length === 0 ? 0 : frames[frames.length - 1].end;
    return { segment, from: Math.min(end, after(segment.segment)), to: end };
  }).filter((span) => span.to > span.from);
}

/** Where the replayed part of the log begins in `segment`: after the index's log position. */
function replayedFrom(layout: FaultLayout, segment: number): number {
  if (segment < layout.position.segment) return Infinity;
  return segment === layout.position.segment ? layout.position.offset : 0;
}

/** Where the part written since the clean stop begins in `segment`, at a page boundary (the pages wholly written since). */
function writtenSinceStopFrom(layout: FaultLayout, segment: number): number {
  const atStop = layout.segmentBytesAtCleanStop.get(segment) ?? 0;
  return Math.ceil(atStop / PAGE_BYTES) * PAGE_BYTES;
}

/** A byte of a record frame (header or data) drawn from the frames in `spans`. */
function drawRecordByte(layout: FaultLayout, spans: Span[], rng: Random): { segment: SegmentFile; offset: number } {
  const records = spans.flatMap((span) => layout.frames.framesOf(span.segment.segment)
    .filter((f) => f.kind === 'record' && f.start >= span.from && f.end <= span.to)
    .map((frame) => ({ segment: span.segment, frame })));
  if (records.length === 0) throw new Error('no record frame to draw from');
  const { segment, frame } = rng.pick(records);
  return { segment, offset: rng.int(frame.start, frame.end - 1) };
}

/**
 * Draws where run `run` of fault `kind` lands. The log's byte faults cycle through three
 * targets: any byte of the log's frames, a byte of the part replayed at the next start (after
 * the index's log position), and a byte of a record frame in that part; a lost page is a page
 * written since the clean stop (a write that never reached the flash reads as it was before:
 * zeros, the file's end or the zeros written ahead of it), any or one holding a record frame. A
 * missing segment takes the segments in turn. In data.mdb a flipped byte or zeroed page falls
 * anywhere, on a branch page or on a leaf page (as their headers say: a page LMDB no longer uses
 * may say so too); a lost page is one whose content changed since the clean stop, which it
 * takes back, each such page in turn (`runsOf`); a truncation cuts at any byte.
 * @throws Error when the layout holds nothing the draw needs (no segment, no record frame)
 */
export function drawFault(kind: FaultKind, run: number, layout: FaultLayout, rng: Random): Fault {
  const onSegment = (target: string, { segment, offset }: { segment: SegmentFile; offset: number }, length: number, revertTo?: Buffer): Fault =>
    ({ kind, action: actionOf(kind, revertTo), target, file: segmentPath(segment), segment: segment.segment, offset, length: Math.min(length, segment.bytes - offset), revertTo });
  const byteTargets = [
    { target: 'any byte of the log', draw: () => drawByte(frameSpans(layout, () => 0), rng) },
    { target: 'the replayed part', draw: () => drawByte(frameSpans(layout, (s) => replayedFrom(layout, s)), rng) },
    { target: 'a record frame of the replayed part', draw: () => drawRecordByte(layout, frameSpans(layout, (s) => replayedFrom(layout, s)), rng) },
  ];
  const pageTargets = [
    { target: 'a page written since the clean stop', draw: () => drawByte(frameSpans(layout, (s) => writtenSinceStopFrom(layout, s)), rng) },
    { target: 'a record frame\'s page written since the clean stop', draw: () => drawRecordByte(layout, frameSpans(layout, (s) => writtenSinceStopFrom(layout, s)), rng) },
  ];
  switch (kind) {
    case 'segment: flipped byte': {
      const { target, draw } = byteTargets[run % byteTargets.length];
      return onSegment(target, draw(), 1);
    }
    case 'segment: zeroed page': {
      const { target, draw } = byteTargets[run % byteTargets.length];
      const at = draw();
      return onSegment(target, { segment: at.segment, offset: alignDown(at.offset) }, PAGE_BYTES);
    }
    case 'segment: lost page': {
      const { target, draw } = pageTargets[run % pageTargets.length];
      const at = draw();
      return onSegment(target, { segment: at.segment, offset: alignDown(at.offset) }, PAGE_BYTES, Buffer.alloc(PAGE_BYTES));
    }
    case 'segment: truncated': {
      const { target, draw } = byteTargets[run % byteTargets.length];
      const at = draw();
      return onSegment(target, at, at.segment.bytes - at.offset);
    }
    case 'segment: missing': {
      if (layout.segments.length === 0) throw new Error('the log holds no segment');
      const segment = layout.segments[run % layout.segments.length];
      return { kind, action: 'remove', target: `segment ${segment.segment}, ${run % layout.segments.length + 1} of the ${layout.segments.length} in the log`, file: segmentPath(segment), segment: segment.segment, offset: 0, length: segment.bytes };
    }
    case 'data.mdb: flipped byte':
    case 'data.mdb: zeroed page': {
      const { target, pages } = indexTargets(layout)[run % 3];
      const page = rng.pick(pages);
      const offset = kind === 'data.mdb: flipped byte' ? page * layout.indexPageSize + rng.int(0, layout.indexPageSize - 1) : page * layout.indexPageSize + alignDown(rng.int(0, layout.indexPageSize - 1));
      return onIndex(kind, target, Math.min(offset, layout.index.length - 1), kind === 'data.mdb: flipped byte' ? 1 : PAGE_BYTES, layout);
    }
    case 'data.mdb: lost page': {
      const changed = changedIndexPages(layout);
      if (changed.length === 0) return onIndex(kind, 'no page changed since the clean stop: page 2', 2 * PAGE_BYTES, PAGE_BYTES, layout);
      const offset = changed[run % changed.length];
      return { ...onIndex(kind, `page ${offset / PAGE_BYTES}, ${run % changed.length + 1} of the ${changed.length} 4 KiB pages changed since the clean stop`, offset, PAGE_BYTES, layout), action: 'revert', revertTo: olderPage(layout, offset) };
    }
    case 'data.mdb: truncated': {
      const offset = rng.int(1, layout.index.length - 1);
      return onIndex(kind, 'any byte', offset, layout.index.length - offset, layout);
    }
    case 'block: flipped byte':
    case 'block: zeroed page':
    case 'block: truncated':
      return onBlock(kind, layout, rng);
  }
}

/**
 * A fault in a block file (docs/STORAGE.md, "Blocks"): a flipped byte or a zeroed 4 KiB page
 * anywhere in one (header, records, tables, postings, table of contents), or a cut at any byte.
 * @throws Error when the folder holds no block
 */
function onBlock(kind: FaultKind, layout: FaultLayout, rng: Random): Fault {
  const files = [...new Map(layout.blockPages.map((page) => [page.file!, page.fileBytes!])).entries()];
  if (files.length === 0) throw new Error('the folder holds no block');
  const [file, bytes] = rng.pick(files);
  const offset = rng.int(kind === 'block: truncated' ? 1 : 0, bytes - 1);
  const target = `any byte of ${file}, one of ${files.length} blocks`;
  if (kind === 'block: flipped byte') return { kind, action: 'flip', target, file, segment: undefined, offset, length: 1 };
  if (kind === 'block: truncated') return { kind, action: 'truncate', target, file, segment: undefined, offset, length: bytes - offset };
  const page = alignDown(offset);
  return { kind, action: 'zero', target, file, segment: undefined, offset: page, length: Math.min(PAGE_BYTES, bytes - page) };
}

/** Offsets (bytes) of the 4 KiB pages of data.mdb whose content changed since the clean stop, ascending. */
function changedIndexPages(layout: FaultLayout): number[] {
  const changed: number[] = [];
  for (let at = 0; at < layout.index.length; at += PAGE_BYTES) {
    if (!layout.index.subarray(at, at + PAGE_BYTES).equals(olderPage(layout, at))) changed.push(at);
  }
  return changed;
}

/**
 * How many runs fault `kind` gets: `runs`, but a lost page of data.mdb is made on every page
 * that changed since the clean stop, in turn (a dozen or so: a few drawn at random miss the
 * pages whose loss matters most, as the meta pages and the tree that names the databases).
 */
export function runsOf(kind: FaultKind, layout: FaultLayout, runs: number): number {
  return kind === 'data.mdb: lost page' ? Math.max(1, changedIndexPages(layout).length) : runs;
}

/** What fault `kind` does (a lost page: `revert`, given the bytes it reverts to). */
function actionOf(kind: string, revertTo?: Buffer): FaultAction {
  if (revertTo) return 'revert';
  if (kind.endsWith('flipped byte')) return 'flip';
  if (kind.endsWith('truncated')) return 'truncate';
  if (kind.endsWith('missing')) return 'remove';
  return 'zero';
}

/** A fault in data.mdb at `offset`, its length clipped to the file. */
export function onIndex(kind: string, target: string, offset: number, length: number, layout: FaultLayout): Fault {
  return { kind, action: actionOf(kind), target, file: INDEX_FILE, segment: undefined, offset, length: Math.min(length, layout.index.length - offset) };
}

/** The 4 KiB page at `offset` of data.mdb as it was at the clean stop (zeros past that file's end). */
export function olderPage(layout: FaultLayout, offset: number): Buffer {
  const page = Buffer.alloc(Math.min(PAGE_BYTES, layout.index.length - offset));
  if (offset < layout.indexAtCleanStop.length) layout.indexAtCleanStop.copy(page, 0, offset, Math.min(offset + page.length, layout.indexAtCleanStop.length));
  return page;
}

/** The pages of data.mdb to draw from, for the targets any page, a branch page, a leaf page (page numbers). */
function indexTargets(layout: FaultLayout): { target: string; pages: number[] }[] {
  const count = Math.floor(layout.index.length / layout.indexPageSize);
  const all = Array.from({ length: count }, (_, n) => n);
  const headed = (flag: number) => all.filter((n) => {
    const at = n * layout.indexPageSize;
    return layout.index.readBigUInt64LE(at) === BigInt(n) && (layout.index.readUInt16LE(at + PAGE_FLAGS_AT) & (P_BRANCH | P_LEAF)) === flag;
  });
  const branches = headed(P_BRANCH);
  const leaves = headed(P_LEAF);
  return [
    { target: `any of ${count} pages`, pages: all },
    branches.length > 0 ? { target: `one of ${branches.length} branch pages`, pages: branches } : { target: `any of ${count} pages (no branch page)`, pages: all },
    leaves.length > 0 ? { target: `one of ${leaves.length} leaf pages`, pages: leaves } : { target: `any of ${count} pages (no leaf page)`, pages: all },
  ];
}

/**
 * Makes `fault` in the data folder `dataDir` (a copy: the file is changed in place).
 * @throws the fs error of a failed read or write
 */
export function applyFault(dataDir: string, fault: Fault): void {
  const file = path.join(dataDir, fault.file);
  if (fault.action === 'remove') return fs.rmSync(file, { recursive: true });
  if (fault.action === 'truncate') return fs.truncateSync(file, fault.offset);
  const fd = fs.openSync(file, 'r+');
  try {
    let bytes: Buffer;
    if (fault.action === 'flip') {
      bytes = Buffer.alloc(1);
      fs.readSync(fd, bytes, 0, 1, fault.offset);
      bytes[0] ^= 0xff;
    } else {
      bytes = (fault.action === 'revert' ? fault.revertTo!.subarray(0, fault.length) : undefined) ?? Buffer.alloc(fault.length);
    }
    fs.writeSync(fd, bytes, 0, bytes.length, fault.offset);
  } finally {
    fs.closeSync(fd);
  }
}
