/**
 * The blob segment log (DESIGN.md, "Storage engine invariants"): image, video and file bytes live
 * in append-only segment files under DATA_DIR/blobs/, never in LMDB. Each blob is framed so a
 * segment can be verified on its own:
 *
 *   magic "EEB1" (4) | kind (1) | reserved (3) | file id, uuid bytes (16) | length u64 (8) |
 *   CRC32C of the data (4) | data (length bytes)
 *
 * The active segment takes the images of each group commit and rolls at SEGMENT_ROLL_BYTES.
 * Appends are written, then fdatasync'd, before the LMDB commit that references them; a tail
 * beyond the committed length (a crash between the two) is truncated at start-up.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { crc32c } from '@node-rs/crc32';
import type { FileKind } from './lmdb-env.js';

export const FRAME_HEADER_BYTES = 36;
export const SEGMENT_ROLL_BYTES = 64 * 1024 * 1024;
const MAGIC = Buffer.from('EEB1');
const KIND_CODES: Record<FileKind, number> = { image: 1, video: 2, local_only: 3 };

/** A blob to append: its id, kind and bytes. */
export interface BlobToAppend {
  fileId: string;
  kind: FileKind;
  bytes: Buffer;
}

/** Where an appended blob's data landed. Offsets in bytes. */
export interface AppendedBlob {
  segment: number;
  offset: number;
  length: number;
  crc: number;
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

/** Builds the frame header of a blob. */
export function frameHeader(fileId: string, kind: FileKind, length: number, crc: number): Buffer {
  const header = Buffer.alloc(FRAME_HEADER_BYTES);
  MAGIC.copy(header, 0);
  header.writeUInt8(KIND_CODES[kind], 4);
  Buffer.from(fileId.replaceAll('-', ''), 'hex').copy(header, 8);
  header.writeBigUInt64BE(BigInt(length), 24);
  header.writeUInt32BE(crc >>> 0, 32);
  return header;
}

/** CRC32C of a buffer, chainable with `initial`. */
export function checksum(bytes: Uint8Array, initial = 0): number {
  return crc32c(bytes, initial) >>> 0;
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
   */
  constructor(private readonly blobsDir: string, private readonly allocateSegment: () => number) {}

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
   * Appends blobs and makes them durable (write + fdatasync). Appends run one after another,
   * in call order. On failure the segment is truncated back to where the append began and the
   * error (e.g. ENOSPC) is rethrown.
   * @returns where each blob's data landed, in input order, and the segment's new end
   */
  append(blobs: BlobToAppend[]): Promise<{ placed: AppendedBlob[]; segment: number; end: number }> {
    const result = this.tail.then(() => this.appendNow(blobs));
    this.tail = result.then(() => undefined, () => undefined);
    return result;
  }

  private async appendNow(blobs: BlobToAppend[]): Promise<{ placed: AppendedBlob[]; segment: number; end: number }> {
    if (!this.handle || this.end >= SEGMENT_ROLL_BYTES) await this.roll();
    const handle = this.handle!;
    const start = this.end;
    const buffers: Buffer[] = [];
    const placed: AppendedBlob[] = [];
    let offset = start;
    for (const blob of blobs) {
      const crc = checksum(blob.bytes);
      buffers.push(frameHeader(blob.fileId, blob.kind, blob.bytes.length, crc), blob.bytes);
      placed.push({ segment: this.segment, offset: offset + FRAME_HEADER_BYTES, length: blob.bytes.length, crc });
      offset += FRAME_HEADER_BYTES + blob.bytes.length;
    }
    try {
      await writeAll(handle, buffers, start);
      await handle.datasync();
      this.end = offset;
      return { placed, segment: this.segment, end: offset };
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

async function writeAll(handle: fsp.FileHandle, buffers: Buffer[], position: number): Promise<void> {
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
