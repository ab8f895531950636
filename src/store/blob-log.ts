/**
 * The segment log's appender (docs/STORAGE.md, "The segment log"): image, video and file bytes
 * and the events' records are framed (segment-frames.ts) into append-only segment files under
 * DATA_DIR/blobs/, never into LMDB. The active segment takes the frames of each group commit and
 * rolls at SEGMENT_ROLL_BYTES. An append is one `writev` and one fdatasync: the durability point
 * of a create.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { checksum, FRAME_HEADER_BYTES, frameHeader, type FrameKind } from './segment-frames.js';

export const SEGMENT_ROLL_BYTES = 64 * 1024 * 1024;

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

/** File name of segment `n` inside blobs/. */
export function segmentFileName(n: number): string {
  return `seg-${String(n).padStart(8, '0')}.blob`;
}

/** Segment number of a blobs/ file name, or undefined for any other name. */
export function segmentNumberOf(fileName: string): number | undefined {
  const match = /^seg-(\d{8})\.blob$/.exec(fileName);
  return match ? Number(match[1]) : undefined;
}

/**
 * Appender of the active segment. Appends are serialised: each starts when the previous ended.
 */
export class SegmentAppender {
  private handle: fsp.FileHandle | undefined;
  private segment = 0;
  private end = 0;
  /** The append under way; the next one starts after it. */
  private tail: Promise<void> = Promise.resolve();

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
    this.handle = await fsp.open(path.join(this.blobsDir, segmentFileName(segment)), 'r+');
    this.end = committed;
  }

  /**
   * Appends frames and makes them durable (one writev + fdatasync). Appends run one after
   * another, in call order. On failure the segment is truncated back to where the append began
   * and the error (e.g. ENOSPC) is rethrown.
   */
  append(frames: FrameToAppend[]): Promise<Appended> {
    const result = this.tail.then(() => this.appendNow(frames));
    this.tail = result.then(() => undefined, () => undefined);
    return result;
  }

  private async appendNow(frames: FrameToAppend[]): Promise<Appended> {
    if (!this.handle || this.end >= this.rollBytes) await this.roll();
    const handle = this.handle!;
    const start = this.end;
    const buffers: Buffer[] = [];
    const placed: AppendedFrame[] = [];
    let offset = start;
    for (const frame of frames) {
      const crc = checksum(frame.bytes);
      buffers.push(frameHeader(frame.id, frame.kind, frame.bytes.length, crc), frame.bytes);
      placed.push({ segment: this.segment, offset: offset + FRAME_HEADER_BYTES, length: frame.bytes.length, crc });
      offset += FRAME_HEADER_BYTES + frame.bytes.length;
    }
    try {
      await writeAll(handle, buffers, start);
      await handle.datasync();
      this.end = offset;
      return { placed, segment: this.segment, start, end: offset };
    } catch (err) {
      await handle.truncate(start).catch(() => undefined);
      throw err;
    }
  }

  /** The segment appended to now (0 when none is open: the next append opens a new one). */
  get currentSegment(): number {
    return this.handle ? this.segment : 0;
  }

  /** Closes the active segment file, after the append under way. */
  async close(): Promise<void> {
    await this.tail;
    await this.closeHandle();
  }

  private async closeHandle(): Promise<void> {
    await this.handle?.close();
    this.handle = undefined;
  }

  private async roll(): Promise<void> {
    await this.closeHandle();
    this.segment = this.allocateSegment();
    this.handle = await fsp.open(path.join(this.blobsDir, segmentFileName(this.segment)), 'w+');
    this.end = 0;
    await syncDirectory(this.blobsDir);
  }
}

/** Writes `buffers` at `position` (bytes) with as many writevs as it takes (exported for its test). */
export async function writeAll(handle: fsp.FileHandle, buffers: Buffer[], position: number): Promise<void> {
  let pending = buffers;
  let at = position;
  while (pending.length > 0) {
    // writev takes at most IOV_MAX (1024) buffers and may write partially.
    const chunk = pending.slice(0, 1024);
    let { bytesWritten } = await handle.writev(chunk, at);
    at += bytesWritten;
    let consumed = 0;
    while (consumed < chunk.length && bytesWritten >= chunk[consumed].length) {
      bytesWritten -= chunk[consumed].length;
      consumed++;
    }
    const rest = consumed < chunk.length ? [chunk[consumed].subarray(bytesWritten), ...chunk.slice(consumed + 1)] : [];
    pending = [...rest, ...pending.slice(chunk.length)];
  }
}

/** fsyncs a directory so a created or renamed file in it survives a crash. */
export async function syncDirectory(dir: string): Promise<void> {
  const handle = await fsp.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Ensures DATA_DIR/blobs and DATA_DIR/staging exist; returns their paths. */
export function ensureBlobDirs(dataDir: string): { blobsDir: string; stagingDir: string } {
  const blobsDir = path.join(dataDir, 'blobs');
  const stagingDir = path.join(dataDir, 'staging');
  fs.mkdirSync(blobsDir, { recursive: true });
  fs.mkdirSync(stagingDir, { recursive: true });
  return { blobsDir, stagingDir };
}
