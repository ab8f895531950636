/**
 * The frame format of segment files (docs/STORAGE.md, "The segment log"). A segment is a
 * sequence of frames; each frame can be verified on its own:
 *
 *   magic "EEB1" (4) | kind (1) | segment tag (3) | id, uuid bytes (16) | length u64 BE (8) |
 *   CRC32C of the data u32 BE (4) | data (length bytes)
 *
 * The segment tag is the low 24 bits of the number of the segment the frame was appended to
 * (`segmentTag`), or 0 for a frame written before tags, or by an upload before its segment had
 * a number. A recycled segment file still holds its former life's frames past the new ones
 * (docs/STORAGE.md, "Recycled segments"); their tag is another segment's, so a scan stops there.
 *
 * Kinds: 1 image, 2 video, 3 local-only file (blob frames: the id is the file id, the data the
 * file's bytes), 16 record (the id is the event id, the data a record frame, see
 * record-frame.ts), 17 update (the id is the updated event's id, the data an update to it, see
 * record-update.ts), 18 record copy (the id is the event id, the data the event's whole record
 * and where its files are, see record-copy-frame.ts) and 19 tombstone (the id is a deleted
 * event's id, see record-copy-frame.ts): docs/STORAGE.md, "Two copies of every record". A frame whose header or CRC does not check is torn: `scanFrames` stops
 * there; `scanSegment` tells damage in the middle of a segment (whole frames after it) from the
 * torn tail of the last append (none after it), docs/STORAGE.md "Damage in the log".
 */
import fsp from 'node:fs/promises';
import { crc32c } from '@node-rs/crc32';
import type { FileKind } from './log-entries.js';

export const FRAME_HEADER_BYTES = 36;
const MAGIC = 0x45454231; // "EEB1"
/** Largest record frame a scan accepts (bytes): records are bounded by MAX_RECORD_SIZE_BYTES. */
const MAX_RECORD_FRAME_BYTES = 64 * 1024 * 1024;

/**
 * What a frame holds: a blob of one of the file kinds, an event's record as created, an update to
 * an event, a copy of an event's whole record, or an event's deletion.
 */
export type FrameKind = FileKind | 'record' | 'update' | 'copy' | 'tombstone';

const KIND_CODES: Record<FrameKind, number> = { image: 1, video: 2, local_only: 3, record: 16, update: 17, copy: 18, tombstone: 19 };

/** Frames whose data a scan reads and checks: the small ones replay decodes. */
export function isDataFrame(kind: FrameKind): boolean {
  return kind === 'record' || kind === 'update' || kind === 'copy' || kind === 'tombstone';
}
const KINDS_BY_CODE = new Map<number, FrameKind>(Object.entries(KIND_CODES).map(([kind, code]) => [code, kind as FrameKind]));

/** CRC32C of a buffer, chainable with `initial`. */
export function checksum(bytes: Uint8Array, initial = 0): number {
  return crc32c(bytes, initial) >>> 0;
}

/** The tag of segment `segment`'s frames: its number's low 24 bits (0 stands for "untagged"). */
export function segmentTag(segment: number): number {
  return segment % 0x1000000;
}

/**
 * Builds the header of a frame whose data is `length` bytes with CRC32C `crc`.
 * @param tag `segmentTag` of the segment it is appended to; 0 for an upload, staged before its
 *   segment has a number
 */
export function frameHeader(id: string, kind: FrameKind, length: number, crc: number, tag: number): Buffer {
  const header = Buffer.alloc(FRAME_HEADER_BYTES);
  header.writeUInt32BE(MAGIC, 0);
  header.writeUInt8(KIND_CODES[kind], 4);
  header.writeUIntBE(tag, 5, 3);
  header.write(id.replaceAll('-', ''), 8, 16, 'hex');
  header.writeBigUInt64BE(BigInt(length), 24);
  header.writeUInt32BE(crc >>> 0, 32);
  return header;
}

/** A frame found by a scan. Offsets in bytes from the start of the segment file. */
export interface ScannedFrame {
  kind: FrameKind;
  /** The file id (blob frames) or event id (record and update frames), as a uuid string. */
  id: string;
  /** Offset of the first data byte. */
  offset: number;
  length: number;
  crc: number;
  /** The data, for record and update frames only (blob data is not read, only checked). */
  data: Buffer | undefined;
}

function uuidOf(bytes: Buffer): string {
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Reads exactly `length` bytes at `position`, or fewer at the end of the file. */
async function readAt(handle: fsp.FileHandle, target: Buffer, position: number): Promise<number> {
  let done = 0;
  while (done < target.length) {
    const { bytesRead } = await handle.read(target, done, target.length - done, position + done);
    if (bytesRead === 0) break;
    done += bytesRead;
  }
  return done;
}

/**
 * Bytes read ahead by a scan: each read of the thread pool costs a round trip (about 0.1 ms on a
 * 2-core box), and a replay reads thousands of small frames after a crash at full ingest.
 */
const SCAN_WINDOW_BYTES = 256 * 1024;

/** Sequential reads of one file through a read-ahead window. */
class ReadAhead {
  private readonly window = Buffer.allocUnsafe(SCAN_WINDOW_BYTES);
  private start = 0;
  private length = 0;

  constructor(private readonly handle: fsp.FileHandle) {}

  /**
   * The `length` bytes at `position`, or undefined when the file ends before them. A view of the
   * window, valid until the next call, when it fits the window; its own buffer otherwise.
   */
  async bytesAt(position: number, length: number): Promise<Buffer | undefined> {
    if (position >= this.start && position + length <= this.start + this.length) {
      return this.window.subarray(position - this.start, position - this.start + length);
    }
    if (length > SCAN_WINDOW_BYTES) {
      const own = Buffer.allocUnsafe(length);
      return (await readAt(this.handle, own, position)) < length ? undefined : own;
    }
    this.start = position;
    this.length = await readAt(this.handle, this.window, position);
    return this.length < length ? undefined : this.window.subarray(0, length);
  }

  /** `bytes` from `bytesAt` as a buffer the caller may keep: a copy of a view of the window, else itself. */
  owned(bytes: Buffer): Buffer {
    return bytes.buffer === this.window.buffer ? Buffer.from(bytes) : bytes;
  }
}

/** Whether `tag` may be a frame of segment tag `ownTag`'s: its own, or 0 (an upload's, or written before tags). */
function tagBelongs(tag: number, ownTag: number): boolean {
  return tag === 0 || tag === ownTag;
}

/**
 * The frame whose header starts at `at` (bytes), or undefined when it is torn: a header that does
 * not check (magic, kind, a tag `tagBelongs` refuses, a length past `size`, an empty data frame)
 * or, for a record or update frame, data that fails its CRC. A blob frame's data is not read.
 */
async function frameAt(reader: ReadAhead, at: number, size: number, ownTag: number): Promise<ScannedFrame | undefined> {
  const header = await reader.bytesAt(at, FRAME_HEADER_BYTES);
  if (!header || header.readUInt32BE(0) !== MAGIC || !tagBelongs(header.readUIntBE(5, 3), ownTag)) return undefined;
  const kind = KINDS_BY_CODE.get(header.readUInt8(4));
  const length = Number(header.readBigUInt64BE(24));
  const crc = header.readUInt32BE(32);
  const id = uuidOf(header.subarray(8, 24));
  const offset = at + FRAME_HEADER_BYTES;
  // No data frame is empty: a header whose length and CRC read 0 (a zeroed page from its seventh
  // byte on) is damage, not a frame.
  if (!kind || offset + length > size || (isDataFrame(kind) && (length === 0 || length > MAX_RECORD_FRAME_BYTES))) return undefined;
  let data: Buffer | undefined;
  if (isDataFrame(kind)) {
    const read = await reader.bytesAt(offset, length);
    if (!read || checksum(read) !== crc) return undefined;
    data = reader.owned(read); // the window's bytes are overwritten at its next read
  }
  return { kind, id, offset, length, crc, data };
}

/**
 * Walks the frames of segment `segment`'s open file from `start` (bytes). Each header is checked
 * (magic, kind, length, and a tag of 0 or the segment's own: a frame of another segment is the
 * former life of a recycled file, docs/STORAGE.md "Recycled segments") and a
 * record or update frame's data read (into a buffer of its own) and checked against its CRC; a
 * blob frame's data is not checked (a segment may hold gigabytes of video): `blobCrcMatches`
 * checks it when it matters. Reads go through a 256 KiB read-ahead window. Stops at the end of
 * the file or at the first torn frame (`scanSegment` looks past it).
 * @throws the fs error of a failed read
 */
export async function* scanFrames(handle: fsp.FileHandle, start: number, segment: number): AsyncGenerator<ScannedFrame, void, void> {
  const size = (await handle.stat()).size;
  const reader = new ReadAhead(handle);
  const ownTag = segmentTag(segment);
  for (let at = start; at + FRAME_HEADER_BYTES <= size;) {
    const frame = await frameAt(reader, at, size, ownTag);
    if (!frame) return;
    yield frame;
    at = frame.offset + frame.length;
  }
}

/**
 * Bytes of a segment that hold no frame that checks, with whole frames after them
 * (docs/STORAGE.md, "Damage in the log"). Offsets in bytes from the start of the segment file.
 */
export interface DamagedBytes {
  kind: 'damaged';
  /** Offset of the first byte that is not a whole frame. */
  offset: number;
  /** Offset of the next whole frame's header. */
  end: number;
  /**
   * The frame whose header starts the damage, when its header still checks and only its data
   * fails the CRC: its kind and id (the event id of a record or update frame) are known.
   */
  frame: { kind: FrameKind; id: string } | undefined;
}

/**
 * Like `scanFrames`, but a torn frame followed by whole frames of the same segment is reported as
 * `DamagedBytes` and the walk goes on at the next whole frame; a torn frame with none after it is
 * the log's torn tail, where the walk ends, as `scanFrames`'s does (docs/STORAGE.md, "Damage in
 * the log"). A whole frame found past damage is one `resyncAt` accepts: its header checks with
 * the segment's own tag, and its data, blob or not, matches its CRC.
 * @throws the fs error of a failed read
 */
export async function* scanSegment(handle: fsp.FileHandle, start: number, segment: number): AsyncGenerator<ScannedFrame | DamagedBytes, void, void> {
  const size = (await handle.stat()).size;
  const reader = new ReadAhead(handle);
  const ownTag = segmentTag(segment);
  for (let at = start; at + FRAME_HEADER_BYTES <= size;) {
    const frame = await frameAt(reader, at, size, ownTag);
    if (frame) {
      yield frame;
      at = frame.offset + frame.length;
      continue;
    }
    const next = await resyncAt(handle, at + 1, size, ownTag);
    if (next === undefined) return; // the torn tail
    yield { kind: 'damaged', offset: at, end: next, frame: await damagedFrameHeader(handle, at, next) };
    at = next;
  }
}

/**
 * The kind and id of the frame at `at` when its header checks and its data ends exactly at
 * `next` (only the data was damaged), else undefined.
 */
async function damagedFrameHeader(handle: fsp.FileHandle, at: number, next: number): Promise<DamagedBytes['frame']> {
  const header = await readFrameHeader(handle, at);
  return header && at + FRAME_HEADER_BYTES + header.length === next ? { kind: header.kind, id: header.id } : undefined;
}

/** What a frame header says of its frame; its data is not read. */
export interface FrameHeader {
  kind: FrameKind;
  id: string;
  /** The segment tag (`segmentTag`), 0 when untagged. */
  tag: number;
  /** Bytes of data after the header. */
  length: number;
}

/**
 * The header at `at` (bytes) of an open segment file when it has the magic and a known kind,
 * else undefined. Nothing else is checked.
 * @throws the fs error of a failed read
 */
export async function readFrameHeader(handle: fsp.FileHandle, at: number): Promise<FrameHeader | undefined> {
  const header = Buffer.alloc(FRAME_HEADER_BYTES);
  if ((await readAt(handle, header, at)) < FRAME_HEADER_BYTES || header.readUInt32BE(0) !== MAGIC) return undefined;
  const kind = KINDS_BY_CODE.get(header.readUInt8(4));
  if (!kind) return undefined;
  return { kind, id: uuidOf(header.subarray(8, 24)), tag: header.readUIntBE(5, 3), length: Number(header.readBigUInt64BE(24)) };
}

const MAGIC_BYTES = Buffer.from([0x45, 0x45, 0x42, 0x31]);

/**
 * The offset (bytes) of the first whole frame of the segment whose tag is `ownTag` at or after
 * `from`, or undefined when none is left before `size`: a header that checks with `ownTag`
 * itself (a frame tagged 0 or another segment's is not taken as proof: zeros and a recycled
 * file's former frames are not the log), and data, blob or not, that matches its CRC. The search
 * ends at the first header of another segment's frame: a recycled file's former frames follow the
 * last append, so a start-up after a crash does not read a recycled file's 64 MiB. Frames of an
 * untagged segment (`ownTag` 0) are never looked for past damage.
 * @throws the fs error of a failed read
 */
export async function resyncAt(handle: fsp.FileHandle, from: number, size: number, ownTag: number): Promise<number | undefined> {
  if (ownTag === 0) return undefined;
  const window = Buffer.allocUnsafe(SCAN_WINDOW_BYTES);
  for (let base = from; base + FRAME_HEADER_BYTES <= size; base += SCAN_WINDOW_BYTES - MAGIC_BYTES.length + 1) {
    const read = await readAt(handle, window, base);
    for (let i = window.subarray(0, read).indexOf(MAGIC_BYTES); i >= 0 && i < read; i = window.subarray(0, read).indexOf(MAGIC_BYTES, i + 1)) {
      if (await isWholeFrame(handle, base + i, size, ownTag)) return base + i;
      // A recycled file's former frames begin where this segment's appends ended: none of its own follows.
      if (await isFormerFrame(handle, base + i, size, ownTag)) return undefined;
    }
  }
  return undefined;
}

/** Whether a header of another segment's frame (a recycled file's former life) starts at `at`, its data inside the file. */
async function isFormerFrame(handle: fsp.FileHandle, at: number, size: number, ownTag: number): Promise<boolean> {
  const header = await readFrameHeader(handle, at);
  return header !== undefined && header.tag !== 0 && header.tag !== ownTag && at + FRAME_HEADER_BYTES + header.length <= size;
}

/** Whether a frame tagged `ownTag` whose data matches its CRC starts at `at`. */
async function isWholeFrame(handle: fsp.FileHandle, at: number, size: number, ownTag: number): Promise<boolean> {
  const reader = new ReadAhead(handle);
  const frame = await frameAt(reader, at, size, ownTag);
  if (!frame) return false;
  const header = await reader.bytesAt(at, FRAME_HEADER_BYTES);
  if (header?.readUIntBE(5, 3) !== ownTag) return false;
  return frame.data !== undefined || await blobCrcMatches(handle, frame);
}

/**
 * The tag of the first frame of an open segment file (`segmentTag`), or undefined when the file
 * does not start with a frame header.
 * @throws the fs error of a failed read
 */
export async function firstFrameTag(handle: fsp.FileHandle): Promise<number | undefined> {
  const header = Buffer.alloc(FRAME_HEADER_BYTES);
  if ((await readAt(handle, header, 0)) < FRAME_HEADER_BYTES || header.readUInt32BE(0) !== MAGIC) return undefined;
  return header.readUIntBE(5, 3);
}

/**
 * Whether a blob frame's data matches its CRC, read in 1 MiB chunks.
 * @throws the fs error of a failed read
 */
export async function blobCrcMatches(handle: fsp.FileHandle, frame: ScannedFrame): Promise<boolean> {
  const chunk = Buffer.allocUnsafe(Math.min(frame.length, 1024 * 1024));
  let crc = 0;
  for (let done = 0; done < frame.length;) {
    const part = chunk.subarray(0, Math.min(chunk.length, frame.length - done));
    if ((await readAt(handle, part, frame.offset + done)) < part.length) return false;
    crc = checksum(part, crc);
    done += part.length;
  }
  return crc === frame.crc;
}
