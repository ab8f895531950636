/**
 * The segment log's appender (docs/STORAGE.md, "The segment log"): image, video and file bytes
 * and the events' records are framed (segment-frames.ts) into append-only segment files under
 * DATA_DIR/blobs/, never into LMDB. The active segment takes the frames of each group commit and
 * rolls at SEGMENT_ROLL_BYTES. An append is one `writev` to a file opened with O_DSYNC, which
 * returns once the data is durable (open(2): "as though each write(2) was followed by a call to
 * fdatasync(2)"): the durability point of a create, in one system call instead of two in turn
 * (writev, then fdatasync). A small append into zeros written ahead is made on the calling thread
 * while such appends are fast (append-pace.ts); any other goes to the thread pool. A new segment
 * takes a recycled file when one is kept (segment-files.ts), so its appends overwrite too.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { AppendPace } from './append-pace.js';
import { kernelPageBytes } from './kernel-page.js';
import { checksum, FRAME_HEADER_BYTES, frameHeader, segmentTag, type FrameKind } from './segment-frames.js';
import { segmentFileName, syncDirectory, takeRecycledSegment } from './segment-files.js';
import { writeAll, writeAllSync } from './write-all.js';

export const SEGMENT_ROLL_BYTES = 64 * 1024 * 1024;

/**
 * Zeros written past the log's end in one go, when appends are small (docs/STORAGE.md, "The
 * segment log"): appends then overwrite blocks the file already has, so their sync
 * writes the data alone, not the file's new size and blocks through the file system's journal.
 */
export const ZERO_AHEAD_BYTES = 1024 * 1024;

/**
 * Appends smaller than this on average (bytes; an exponential mean) get zeros ahead of them. A
 * larger one grows the file and commits the file system's journal instead, which costs less than
 * writing every byte twice: on a journaled ext4 an image event's append (about 42 KB) commits 20 to
 * 23 KiB of journal, where zeros would add 41 KiB (native-bench/PROFILE.md, "A journaled ext4").
 * An append up to this size that only overwrites zeros may be made on the calling thread
 * (append-pace.ts).
 */
const SMALL_APPEND_BYTES = 16 * 1024;

/**
 * After a write or sync of the log fails other than for space, appends are refused for this long
 * (ms) before the next one tries a new segment (`SegmentAppender.abandon`).
 */
export const IO_RETRY_MS = 1000;

/** Whether a failed write ran out of space (ENOSPC, EDQUOT): the segment is sound, and appends go on in it once there is room. */
function isOutOfSpace(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOSPC' || code === 'EDQUOT';
}

/**
 * The zeros go to the file one kernel page per write (bytes; 4 KiB, or 16 KiB on a Raspberry Pi
 * 5: kernel-page.ts). Linux caches a write in a folio as large as the write (ext4 with large
 * folios, e.g. kernel 6.18), and counts every later write that dirties a folio as the whole folio
 * in `write_bytes` (/proc/<pid>/io): zeros written in one 1 MiB write made each small append
 * count as 1 MiB written, in /stats too, though the device received only its dirty blocks
 * (docs/STORAGE.md, "The segment log").
 */
const ZERO_WRITE_BYTES = kernelPageBytes();
const ZERO_PAGE = Buffer.alloc(ZERO_WRITE_BYTES);

/** A frame to append: its id (file id or event id), kind and data. */
export interface FrameToAppend {
  id: string;
  kind: FrameKind;
  bytes: Buffer;
}

/** Where an appended frame's data landed. Offsets in bytes. */
export interface AppendedFrame {
  segment: number;
  offset: number;
  length: number;
  crc: number;
}

/** What one append wrote: each frame's place, in input order, and the segment's span. */
export interface Appended {
  placed: AppendedFrame[];
  segment: number;
  /** Offset where the append began. */
  start: number;
  /** The segment's new end. */
  end: number;
}

/**
 * Appender of the active segment. Appends are serialised: each starts when the previous ended.
 */
export class SegmentAppender {
  /** The active segment, opened with O_DSYNC: a write returns once its data is durable. */
  private handle: fsp.FileHandle | undefined;
  /**
   * The same file opened without O_DSYNC, for the zeros written ahead: written a page at a time,
   * then made durable by one fdatasync, not one sync per page.
   */
  private zeroHandle: fsp.FileHandle | undefined;
  private segment = 0;
  private end = 0;
  /**
   * Bytes of the active segment's file: its frames, then zeros written ahead, or a recycled
   * file's former frames.
   */
  private fileBytes = 0;
  /** Exponential mean of the bytes of recent appends (bytes). */
  private meanAppend = SMALL_APPEND_BYTES;
  /** Whether small overwrites are fast enough to make on the calling thread. */
  private readonly pace = new AppendPace();
  /** The append under way; the next one starts after it. */
  private tail: Promise<void> = Promise.resolve();
  /** When an append last failed other than for space (`performance.now()`, ms); -Infinity: never. */
  private failedAt = -Infinity;
  /** Segments given up after a failed write or sync (`abandon`), since the store opened. */
  abandoned = 0;

  /**
   * @param blobsDir DATA_DIR/blobs
   * @param allocateSegment returns a fresh segment number (persisted by the caller)
   * @param rollBytes size (bytes) past which the next append opens a new segment
   */
  constructor(
    private readonly blobsDir: string,
    private readonly allocateSegment: () => number,
    private readonly rollBytes = SEGMENT_ROLL_BYTES,
  ) {}

  /**
   * Resumes appending to segment `segment` at its committed length `committed` (bytes).
   */
  async resume(segment: number, committed: number): Promise<void> {
    await this.close(); // before any append: nothing under way
    this.segment = segment;
    const handle = await this.open(segment, fs.constants.O_RDWR);
    this.end = committed;
    this.fileBytes = (await handle.stat()).size;
  }

  /**
   * Appends frames and makes them durable (one O_DSYNC writev). Appends run one after
   * another, in call order. When appends are small, ZERO_AHEAD_BYTES of zeros are written past
   * the frames, and synced, whenever they reach the end of the file, so the appends after it only
   * overwrite. An append of at most SMALL_APPEND_BYTES that only overwrites zeros is written on
   * the calling thread while `AppendPace` allows it (docs/STORAGE.md, "Small appends on the
   * calling thread"); others on the thread pool. On failure the segment is truncated back to
   * where the append began and the error (e.g. ENOSPC) is rethrown; after a failure other than
   * for space (EIO) the segment takes no more appends (`abandon`).
   * @throws the fs error of the write or sync; an EIO error while appends are refused after one
   */
  append(frames: FrameToAppend[]): Promise<Appended> {
    const result = this.tail.then(() => this.appendNow(frames));
    this.tail = result.then(() => undefined, () => undefined);
    return result;
  }

  private async appendNow(frames: FrameToAppend[]): Promise<Appended> {
    if (!this.handle && performance.now() - this.failedAt < IO_RETRY_MS) {
      throw Object.assign(new Error(`the segment log's last write failed with an I/O error less than ${IO_RETRY_MS} ms ago`), { code: 'EIO' });
    }
    if (!this.handle || this.end >= this.rollBytes) await this.roll();
    const handle = this.handle!;
    const start = this.end;
    const buffers: Buffer[] = [];
    const placed: AppendedFrame[] = [];
    let offset = start;
    const tag = segmentTag(this.segment);
    for (const frame of frames) {
      const crc = checksum(frame.bytes);
      buffers.push(frameHeader(frame.id, frame.kind, frame.bytes.length, crc, tag), frame.bytes);
      placed.push({ segment: this.segment, offset: offset + FRAME_HEADER_BYTES, length: frame.bytes.length, crc });
      offset += FRAME_HEADER_BYTES + frame.bytes.length;
    }
    this.meanAppend += ((offset - start) - this.meanAppend) / 8;
    // A replay stops at the zeros (no frame starts with them) and at a recycled file's former
    // frames (their tag is another segment's): segment-frames.ts.
    const zeroAhead = offset > this.fileBytes && this.meanAppend < SMALL_APPEND_BYTES ? Math.max(0, Math.min(ZERO_AHEAD_BYTES, this.rollBytes - offset)) : 0;
    // An overwrite of zeros or of a recycled file's blocks syncs its data blocks alone, nothing
    // of the file system's: the cheapest write the device does, and the only kind the pace times.
    const smallOverwrite = offset <= this.fileBytes && offset - start <= SMALL_APPEND_BYTES;
    try {
      if (smallOverwrite) await this.pace.write(() => writeAllSync(handle.fd, buffers, start), () => writeAll(handle, buffers, start));
      else await Promise.all([writeAll(handle, buffers, start), zeroAhead > 0 ? this.writeZerosAhead(offset, zeroAhead) : undefined]);
      this.end = offset;
      this.fileBytes = Math.max(this.fileBytes, offset + zeroAhead);
      return { placed, segment: this.segment, start, end: offset };
    } catch (err) {
      await handle.truncate(start).catch(() => undefined);
      this.fileBytes = Math.min(this.fileBytes, start);
      if (!isOutOfSpace(err)) await this.abandon();
      throw err;
    }
  }

  /**
   * Stops appending to the active segment after a write or sync of it failed other than for
   * space (EIO from a bad flash page, say): what the file and the kernel's cache of it hold is
   * unknown after such a failure (PostgreSQL's handling of fsync failures since 2018), so no
   * later append may land on its pages. The next append rolls to a new segment; until
   * IO_RETRY_MS has passed it is refused at once with the failure's error instead, so a device
   * that fails every write does not leave a new file per create (docs/STORAGE.md, "An I/O error
   * in the log").
   */
  private async abandon(): Promise<void> {
    this.failedAt = performance.now();
    this.abandoned++;
    await this.closeHandle().catch(() => undefined);
  }

  /** The segment appended to now (0 when none is open: the next append opens a new one). */
  get currentSegment(): number {
    return this.handle ? this.segment : 0;
  }

  /**
   * Closes the active segment file, after the append under way, cutting the zeros written ahead
   * of its end: a segment left by a clean stop ends with its last frame.
   */
  async close(): Promise<void> {
    await this.tail;
    if (this.handle && this.fileBytes > this.end) {
      await this.handle.truncate(this.end);
      this.fileBytes = this.end;
    }
    await this.closeHandle();
  }

  private async closeHandle(): Promise<void> {
    await this.handle?.close();
    await this.zeroHandle?.close();
    this.handle = undefined;
    this.zeroHandle = undefined;
  }

  /**
   * Opens segment `segment` twice: with O_DSYNC for frames, without for zeros.
   * @param flags O_RDWR, plus O_CREAT and O_TRUNC for a new segment
   * @returns the O_DSYNC handle
   */
  private async open(segment: number, flags: number): Promise<fsp.FileHandle> {
    const file = path.join(this.blobsDir, segmentFileName(segment));
    this.handle = await fsp.open(file, flags | fs.constants.O_DSYNC);
    this.zeroHandle = await fsp.open(file, fs.constants.O_RDWR);
    return this.handle;
  }

  /** Writes `bytes` of zeros at `position` (bytes) and makes them durable with one fdatasync. */
  private async writeZerosAhead(position: number, bytes: number): Promise<void> {
    await writeZeros(this.zeroHandle!, position, bytes);
    await this.zeroHandle!.datasync();
  }

  /**
   * Opens a new segment: a recycled file when one is kept, whose blocks the appends then
   * overwrite (docs/STORAGE.md, "Recycled segments"), else a new empty file.
   */
  private async roll(): Promise<void> {
    await this.closeHandle();
    this.segment = this.allocateSegment();
    const recycled = await takeRecycledSegment(this.blobsDir, this.segment);
    const handle = await this.open(this.segment, fs.constants.O_RDWR | (recycled ? 0 : fs.constants.O_CREAT | fs.constants.O_TRUNC));
    this.end = 0;
    this.fileBytes = recycled ? (await handle.stat()).size : 0;
    await syncDirectory(this.blobsDir);
  }
}

/**
 * Writes `bytes` of zeros at `position` (bytes), one write per page: up to the next multiple of
 * ZERO_WRITE_BYTES, then a page at a time; all issued at once.
 */
async function writeZeros(handle: fsp.FileHandle, position: number, bytes: number): Promise<void> {
  const writes: Promise<unknown>[] = [];
  const end = position + bytes;
  for (let at = position; at < end;) {
    const next = Math.min(end, (Math.floor(at / ZERO_WRITE_BYTES) + 1) * ZERO_WRITE_BYTES);
    writes.push(handle.write(ZERO_PAGE, 0, next - at, at));
    at = next;
  }
  await Promise.all(writes);
}
