/**
 * Reads a block file (docs/STORAGE.md, "Blocks"; block-format.ts for the layout) as a query plan
 * reads an index (index-source.ts): the same four questions the head's index and LMDB answer, so
 * a plan seeks in a block as in either. Reads are synchronous, as LMDB's are, so a plan's scan
 * runs in one turn (event-query.ts).
 *
 * Kept in memory per block: the created_at of every row (8 bytes a row), the locations and ids
 * sections (44 bytes a row) and the postings offsets (the prefix's JSON and 14 bytes a distinct
 * prefix). A postings list and a record are read from the file when asked for, and checked
 * against their CRC32C then; the postings lists read last are kept, as their rows' created_at
 * (8 bytes an entry, POSTINGS_CACHE_ENTRIES a block at most), since a plan's probes ask the same
 * list once a row.
 */
import fs from 'node:fs';
import type { Key } from 'lmdb';
import { firstAtLeast, NO_VALUES, SortedValuesCursor, type CreatedAtCursor, type Direction } from '../index/created-at-cursors.js';
import { prefixKey } from '../index/index-keys.js';
import type { IndexSource } from '../index/index-source.js';
import { checksum } from '../log/segment-frames.js';
import {
  BLOCK_MAGIC, BLOCK_VERSION, BlockDamaged, CRC_BYTES, crcMatches, decodeToc, HEADER_BYTES, ID_ROW_BYTES, idBytes,
  idOfBytes, LOCATION_ROW_BYTES, postingBytes, SECTIONS, TOC_BYTES, type BlockRow, type BlockToc, type SectionName,
} from './block-format.js';

/** Where one prefix's postings lie in the postings section. */
interface PostingsPlace {
  offset: number;
  count: number;
  crc: number;
}

/** Entries of postings lists a block keeps read (8 bytes each: 2 MiB a block). */
const POSTINGS_CACHE_ENTRIES = 1 << 18;

/** A prefix the block has no postings for, as the cache keeps it. */
const NOT_POSTED = new Float64Array(0);

/** An open block file. Close it when done with it. */
export class BlockReader implements IndexSource {
  /** The created_at (µs) of the rows of the postings lists read last, by prefix key, least recently used first. */
  private readonly postings = new Map<string, Float64Array>();
  private postingsEntries = 0;

  private constructor(
    readonly file: string,
    private readonly fd: number,
    readonly toc: BlockToc,
    /** created_at (µs) of each row, ascending. */
    private readonly createdAts: Float64Array,
    private readonly locations: Buffer,
    private readonly ids: Buffer,
    private readonly offsets: Buffer,
    /** Where each entry of `offsets` begins (bytes), in key order. */
    private readonly offsetEntries: Uint32Array,
  ) {}

  /**
   * Opens a block file: its header and table of contents, then the locations, ids and postings
   * offsets, each checked against its CRC32C.
   * @throws BlockDamaged when a part read does not match its CRC, the magic or version is not this
   *   release's, or the sections disagree on the rows; the fs error when the file cannot be read
   */
  static open(file: string): BlockReader {
    const fd = fs.openSync(file, 'r');
    try {
      const { size } = fs.fstatSync(fd);
      if (size < HEADER_BYTES + CRC_BYTES + TOC_BYTES) throw new BlockDamaged(file, `it is ${size} bytes, shorter than any block`);
      const header = readAt(fd, 0, HEADER_BYTES + CRC_BYTES);
      if (!header.subarray(0, BLOCK_MAGIC.length).equals(BLOCK_MAGIC) || !crcMatches(header.subarray(0, HEADER_BYTES), header.subarray(HEADER_BYTES))) {
        throw new BlockDamaged(file, 'its header is not a block\'s');
      }
      const version = header.readUInt32LE(BLOCK_MAGIC.length);
      if (version !== BLOCK_VERSION) throw new BlockDamaged(file, `its layout version ${version} is not ${BLOCK_VERSION}`);
      const toc = decodeToc(readAt(fd, size - TOC_BYTES, TOC_BYTES), size, file);
      const section = (name: SectionName): Buffer => readSection(fd, toc, name, file);
      const locations = section('locations');
      const ids = section('ids');
      const offsets = section('postingsOffsets');
      if (locations.length !== toc.rows * LOCATION_ROW_BYTES || ids.length !== toc.rows * ID_ROW_BYTES) throw new BlockDamaged(file, `its tables do not hold ${toc.rows} rows`);
      const createdAts = new Float64Array(toc.rows);
      for (let row = 0; row < toc.rows; row++) createdAts[row] = locations.readDoubleLE(row * LOCATION_ROW_BYTES);
      return new BlockReader(file, fd, toc, createdAts, locations, ids, offsets, entryStarts(offsets, file));
    } catch (err) {
      fs.closeSync(fd);
      throw err;
    }
  }

  /** Closes the file. */
  close(): void {
    if (recordWindow.reader === this) recordWindow.reader = undefined;
    fs.closeSync(this.fd);
  }

  /**
   * `length` bytes of the records section at `position` (bytes from the file's start): from the
   * window of this thread's last read when they are in it; else, when they are near it (the reads
   * walk the section), read with the RECORD_WINDOW_BYTES around them (after them, or before when
   * the reads go backward, as a newest-first list's do), within the section; else alone. A list
   * page reads neighbouring rows, which lie side by side: one read serves dozens. A record larger
   * than half a window is read alone, into a buffer of its own.
   */
  private recordBytes(position: number, length: number): Buffer {
    const window = recordWindow;
    if (window.reader === this && position >= window.start && position + length <= window.start + window.length) {
      return window.bytes.subarray(position - window.start, position - window.start + length);
    }
    if (length * 2 > RECORD_WINDOW_BYTES) return readInto(recordBuffer(length), this.fd, position);
    const { offset: first, length: size } = this.toc.sections.records;
    // Read ahead only where the reads walk the section: a scattered row (a sparse posting) is read alone.
    const near = window.reader === this && position + length >= window.start - RECORD_WINDOW_BYTES && position <= window.start + window.length + RECORD_WINDOW_BYTES;
    const backward = near && position < window.start;
    const start = backward ? Math.max(first, position + length - RECORD_WINDOW_BYTES) : position;
    const end = near ? Math.min(first + size, start + RECORD_WINDOW_BYTES) : position + length;
    window.reader = undefined; // until the read below has filled it
    readInto(window.bytes.subarray(0, end - start), this.fd, start);
    Object.assign(window, { reader: this, start, length: end - start });
    return window.bytes.subarray(position - start, position - start + length);
  }

  /** Rows (events) the block holds. */
  get rows(): number {
    return this.toc.rows;
  }

  /** How many rows were created before `createdAt` (µs), hidden ones included: a binary search of the time index. */
  rowsBefore(createdAt: number): number {
    return firstAtLeast(this.createdAts, createdAt);
  }

  bounds(): { oldest: number; newest: number } {
    return { oldest: this.toc.oldest, newest: this.toc.newest };
  }

  keyRange(prefix: readonly Key[], lo: number, hi: number, direction: Direction): CreatedAtCursor {
    const values = this.posted(prefix);
    return values.length === 0 ? NO_VALUES : new SortedValuesCursor(values, lo, hi, direction);
  }

  eventRange(lo: number, hi: number, direction: Direction): CreatedAtCursor {
    return new SortedValuesCursor(this.createdAts, lo, hi, direction);
  }

  has(prefix: readonly Key[], createdAt: number): boolean {
    return this.count(prefix, createdAt, createdAt) === 1;
  }

  /** Exact: the entries under `prefixes` within [lo, hi]. */
  estimate(prefixes: readonly (readonly Key[])[], lo: number, hi: number): number {
    return prefixes.reduce((total, prefix) => total + this.count(prefix, lo, hi), 0);
  }

  /** The block has a row created at `createdAt` (µs). */
  holds(createdAt: number): boolean {
    return this.rowOf(createdAt) !== undefined;
  }

  /**
   * The layout-2 record (record-codec.ts) of the event created at `createdAt` (µs), or undefined
   * when the block holds none: a view valid until the next record read from any block on this
   * thread, as an LMDB value is until the next LMDB read (lmdb-env.ts `readEventValue`), so that
   * a walk over records neither allocates nor reads once per record (`recordBytes`).
   * @throws BlockDamaged when the record read does not match its CRC32C
   */
  record(createdAt: number): Buffer | undefined {
    const row = this.rowOf(createdAt);
    if (row === undefined) return undefined;
    const at = row * LOCATION_ROW_BYTES;
    const offset = this.locations.readDoubleLE(at + 8);
    const length = this.locations.readUInt32LE(at + 16);
    const bytes = this.recordBytes(this.toc.sections.records.offset + offset, length);
    if (checksum(bytes) !== this.locations.readUInt32LE(at + 20)) throw new BlockDamaged(this.file, `the record of row ${row} fails its CRC`);
    return bytes;
  }

  /** The created_at (µs) of the event `id` (a canonical UUID), or undefined when the block holds none. */
  createdAtOf(id: string): number | undefined {
    const wanted = idBytes(id);
    let lo = 0;
    let hi = this.toc.rows;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.ids.compare(wanted, 0, 16, mid * ID_ROW_BYTES, mid * ID_ROW_BYTES + 16) < 0) lo = mid + 1;
      else hi = mid;
    }
    if (lo === this.toc.rows || this.ids.compare(wanted, 0, 16, lo * ID_ROW_BYTES, lo * ID_ROW_BYTES + 16) !== 0) return undefined;
    return this.createdAts[this.ids.readUInt32LE(lo * ID_ROW_BYTES + 16)];
  }

  /**
   * Reads `sections` whole (default all) and checks each against its CRC32C (the scrub:
   * docs/STORAGE.md, "The scrub"), in pieces of `chunkBytes`.
   * @returns the sections whose bytes do not match their CRC (none when the block reads back whole)
   */
  damagedSections(chunkBytes = 1 << 20, sections: readonly SectionName[] = SECTIONS): SectionName[] {
    const damaged: SectionName[] = [];
    for (const name of sections) {
      const { offset, length } = this.toc.sections[name];
      let crc = 0;
      for (let at = 0; at < length; at += chunkBytes) crc = checksum(readAt(this.fd, offset + at, Math.min(chunkBytes, length - at)), crc);
      if (readAt(this.fd, offset + length, CRC_BYTES).readUInt32LE(0) !== crc) damaged.push(name);
    }
    return damaged;
  }

  /**
   * Every row of the block, in created_at order, with its id, record and the prefixes it is
   * posted under: what a merge reads (block-merge.ts). The records and postings sections are
   * read whole and checked against their CRC32C.
   * @throws BlockDamaged when a section read fails its CRC
   */
  allRows(): BlockRow[] {
    const records = readSection(this.fd, this.toc, 'records', this.file);
    const postings = readSection(this.fd, this.toc, 'postings', this.file);
    const rows: BlockRow[] = [];
    for (let row = 0; row < this.toc.rows; row++) {
      const at = row * LOCATION_ROW_BYTES;
      const offset = this.locations.readDoubleLE(at + 8);
      rows.push({ createdAt: this.createdAts[row], id: '', record: records.subarray(offset, offset + this.locations.readUInt32LE(at + 16)), prefixes: [] });
    }
    for (let i = 0; i < this.toc.rows; i++) rows[this.ids.readUInt32LE(i * ID_ROW_BYTES + 16)].id = idOfBytes(this.ids.subarray(i * ID_ROW_BYTES, i * ID_ROW_BYTES + 16));
    const width = postingBytes(this.toc.rows);
    for (const start of this.offsetEntries) {
      const keyEnd = start + 2 + this.offsets.readUInt16LE(start);
      const key = this.offsets.toString('utf8', start + 2, keyEnd);
      const offset = this.offsets.readDoubleLE(keyEnd);
      const count = this.offsets.readUInt32LE(keyEnd + 8);
      for (let i = 0; i < count; i++) {
        const row = width === 2 ? postings.readUInt16LE(offset + i * 2) : postings.readUInt32LE(offset + i * 4);
        (rows[row].prefixes as string[]).push(key);
      }
    }
    return rows;
  }

  /** Where the record of the row created at `createdAt` (µs) lies in the file (bytes from its start), or undefined. */
  recordPlace(createdAt: number): { offset: number; length: number } | undefined {
    const row = this.rowOf(createdAt);
    if (row === undefined) return undefined;
    const at = row * LOCATION_ROW_BYTES;
    return { offset: this.toc.sections.records.offset + this.locations.readDoubleLE(at + 8), length: this.locations.readUInt32LE(at + 16) };
  }

  /** Every row's created_at (µs), ascending. */
  createdAtColumn(): Float64Array {
    return this.createdAts;
  }

  /** Every row's id and created_at (µs), in id order, from the ids table kept in memory. */
  *idEntries(): Generator<{ id: string; createdAt: number }> {
    for (let i = 0; i < this.toc.rows; i++) {
      const at = i * ID_ROW_BYTES;
      yield { id: idOfBytes(this.ids.subarray(at, at + 16)), createdAt: this.createdAts[this.ids.readUInt32LE(at + 16)] };
    }
  }

  /** The row of the event created at `createdAt` (µs), or undefined. */
  private rowOf(createdAt: number): number | undefined {
    const row = firstAtLeast(this.createdAts, createdAt);
    return this.createdAts[row] === createdAt ? row : undefined;
  }

  /** How many rows posted under `prefix` lie within [lo, hi] (µs). */
  private count(prefix: readonly Key[], lo: number, hi: number): number {
    const values = this.posted(prefix);
    return values.length === 0 ? 0 : firstAtLeast(values, hi + 1) - firstAtLeast(values, lo);
  }

  /**
   * The created_at (µs) of the rows posted under `prefix`, ascending (empty when none): from the
   * cache, or read, checked and kept.
   * @throws BlockDamaged when the postings list read does not match its CRC32C
   */
  private posted(prefix: readonly Key[]): Float64Array {
    const key = prefixKey(prefix);
    const kept = this.postings.get(key);
    if (kept) {
      this.postings.delete(key); // to the end: the most recently used
      this.postings.set(key, kept);
      return kept;
    }
    const place = this.postingsPlace(key);
    const values = place ? this.readPostings(key, place) : NOT_POSTED;
    this.postings.set(key, values);
    this.postingsEntries += values.length;
    for (const [oldest, list] of this.postings) {
      if (this.postingsEntries <= POSTINGS_CACHE_ENTRIES || oldest === key) break;
      this.postings.delete(oldest);
      this.postingsEntries -= list.length;
    }
    return values;
  }

  /**
   * The postings list at `place`, read and checked, as its rows' created_at (µs).
   * @throws BlockDamaged when it does not match its CRC32C
   */
  private readPostings(key: string, place: PostingsPlace): Float64Array {
    const width = postingBytes(this.toc.rows);
    const list = readAt(this.fd, this.toc.sections.postings.offset + place.offset, place.count * width);
    if (checksum(list) !== place.crc) throw new BlockDamaged(this.file, `the postings of ${key} fail their CRC`);
    const values = new Float64Array(place.count);
    for (let i = 0; i < place.count; i++) values[i] = this.createdAts[width === 2 ? list.readUInt16LE(i * 2) : list.readUInt32LE(i * 4)];
    return values;
  }

  /** Where the postings of the prefix whose key is `key` lie, or undefined when none has it. */
  private postingsPlace(key: string): PostingsPlace | undefined {
    const wanted = Buffer.from(key);
    const { offsets, offsetEntries } = this;
    const keyAt = (i: number): [number, number] => {
      const start = offsetEntries[i];
      return [start + 2, start + 2 + offsets.readUInt16LE(start)];
    };
    const i = firstIndex(offsetEntries.length, (j) => offsets.compare(wanted, 0, wanted.length, ...keyAt(j)) >= 0);
    if (i === offsetEntries.length) return undefined;
    const [keyStart, keyEnd] = keyAt(i);
    if (offsets.compare(wanted, 0, wanted.length, keyStart, keyEnd) !== 0) return undefined;
    return { offset: offsets.readDoubleLE(keyEnd), count: offsets.readUInt32LE(keyEnd + 8), crc: offsets.readUInt32LE(keyEnd + 12) };
  }
}

/** The first i in [0, n) for which `holds(i)` is true, `holds` being false then true; n when never. */
function firstIndex(n: number, holds: (i: number) => boolean): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (holds(mid)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** Where each entry of a postings offsets section begins (bytes). */
function entryStarts(offsets: Buffer, file: string): Uint32Array {
  const starts: number[] = [];
  for (let at = 0; at < offsets.length;) {
    starts.push(at);
    if (at + 2 > offsets.length) throw new BlockDamaged(file, 'its postings offsets end inside an entry');
    at += 2 + offsets.readUInt16LE(at) + 16;
    if (at > offsets.length) throw new BlockDamaged(file, 'its postings offsets end inside an entry');
  }
  return Uint32Array.from(starts);
}

/** A section's bytes, checked against the CRC32C after them. */
function readSection(fd: number, toc: BlockToc, name: SectionName, file: string): Buffer {
  const { offset, length } = toc.sections[name];
  const bytes = readAt(fd, offset, length + CRC_BYTES);
  const section = bytes.subarray(0, length);
  if (!crcMatches(section, bytes.subarray(length))) throw new BlockDamaged(file, `its ${name} fail their CRC`);
  return section;
}

/** Bytes of the records section one read takes in (`BlockReader.recordBytes`). */
const RECORD_WINDOW_BYTES = 64 * 1024;

/** The records this thread read last: which block, and where in its file (bytes). */
const recordWindow: { reader: BlockReader | undefined; start: number; length: number; bytes: Buffer } = {
  reader: undefined, start: 0, length: 0, bytes: Buffer.allocUnsafeSlow(RECORD_WINDOW_BYTES),
};

/** Largest record buffer kept between reads (bytes); a larger record is read into its own. */
const KEPT_RECORD_BUFFER_BYTES = 4 * 1024 * 1024;

/** The buffer `BlockReader.record` reads into, shared by every block on this thread. */
let keptRecordBuffer = Buffer.allocUnsafeSlow(64 * 1024);

/** A buffer of `length` bytes for one record read: a view of the kept one, or its own past KEPT_RECORD_BUFFER_BYTES. */
function recordBuffer(length: number): Buffer {
  if (length > KEPT_RECORD_BUFFER_BYTES) return Buffer.allocUnsafe(length);
  if (keptRecordBuffer.length < length) keptRecordBuffer = Buffer.allocUnsafeSlow(Math.min(KEPT_RECORD_BUFFER_BYTES, Math.max(length, keptRecordBuffer.length * 2)));
  return keptRecordBuffer.subarray(0, length);
}

/**
 * `length` bytes of `fd` from `position`.
 * @throws Error when the file ends before them
 */
function readAt(fd: number, position: number, length: number): Buffer {
  return readInto(Buffer.allocUnsafe(length), fd, position);
}

/**
 * Fills `bytes` from `fd` at `position`.
 * @returns `bytes`
 * @throws Error when the file ends before they are filled
 */
function readInto(bytes: Buffer, fd: number, position: number): Buffer {
  for (let read = 0; read < bytes.length;) {
    const n = fs.readSync(fd, bytes, read, bytes.length - read, position + read);
    if (n === 0) throw new Error(`the file ends ${bytes.length - read} bytes short of a read at ${position}`);
    read += n;
  }
  return bytes;
}
