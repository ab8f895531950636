/**
 * The layout of a block file (docs/STORAGE.md, "Blocks"): the records of one stretch of
 * created_at, written once, in created_at order, with the index a query plan reads over them.
 * All integers little-endian; created_at values (µs) and byte offsets are float64, exact below
 * 2^53. Each section is followed by the CRC32C of its bytes, as each section of a Prometheus TSDB
 * index is (prometheus/prometheus `tsdb/docs/format/index.md`):
 *
 *   header           magic "EEBLOCK\n", version u32
 *   records          the layout-2 records (record-codec.ts `frameRecordBytes`), without their
 *                    presented JSON, which is rendered at read time
 *   locations        one row per event, in created_at order: created_at f64, record offset f64
 *                    (from the start of the records section), record length u32, record CRC32C
 *                    u32; the row number is the event's row, and the table is the time index
 *   ids              one row per event, sorted by id: the id's 16 bytes, row u32
 *   postings         for each index key prefix (index-keys.ts: every key whose last part is the
 *                    created_at), its rows ascending: u16 each when the block has at most 65,536
 *                    rows, else u32
 *   postings offsets one entry per prefix, sorted by key bytes: key length u16, the key (the
 *                    prefix's JSON, UTF-8), postings offset f64 (from the start of the postings
 *                    section), count u32, CRC32C u32 of the list
 *   table of contents (fixed size, the file's last TOC_BYTES, its CRC32C included): rows u32,
 *                    oldest and newest created_at f64, the log position the block covers
 *                    (segment u32, offset f64), then offset f64 and length f64 of each section
 *
 * A reader reads the table of contents first, then the sections it keeps; a record's CRC is
 * checked at each read, a postings list's at each read, every section's by the scrub.
 */
import { checksum } from '../log/segment-frames.js';

/** The first 8 bytes of a block file. */
export const BLOCK_MAGIC = Buffer.from('EEBLOCK\n', 'latin1');

/** The layout version this release writes and reads. */
export const BLOCK_VERSION = 1;

/** Bytes of the header section (magic, version), its CRC excluded. */
export const HEADER_BYTES = BLOCK_MAGIC.length + 4;

/** Bytes of one row of the locations section. */
export const LOCATION_ROW_BYTES = 24;

/** Bytes of one row of the ids section. */
export const ID_ROW_BYTES = 20;

/** Bytes of a CRC32C after each section. */
export const CRC_BYTES = 4;

/** The sections a table of contents places, in file order. */
export const SECTIONS = ['records', 'locations', 'ids', 'postings', 'postingsOffsets'] as const;
export type SectionName = (typeof SECTIONS)[number];

/** Bytes of the table of contents, its CRC included. */
export const TOC_BYTES = 4 + 8 + 8 + 4 + 8 + SECTIONS.length * 16 + CRC_BYTES;

/** Most rows whose postings are u16 each. */
export const U16_POSTINGS_ROWS = 65_536;

/** One event of a block. */
export interface BlockRow {
  /** created_at (µs); rows come in ascending, unique created_at. */
  createdAt: number;
  /** A canonical UUID (ids.ts `isCanonicalId`). */
  id: string;
  /** Its layout-2 record (record-codec.ts `frameRecordBytes`). */
  record: Buffer;
  /** The index key prefixes a plan finds it under (index-keys.ts `plannedPrefixKeys`). */
  prefixes: readonly string[];
}

/** Where a section lies in the file (bytes), its CRC excluded. */
export interface SectionPlace {
  offset: number;
  length: number;
}

/** The table of contents of a block file. */
export interface BlockToc {
  rows: number;
  /** created_at (µs) of the first and last row. */
  oldest: number;
  newest: number;
  /** The log position (segment, byte offset) the block's records come from up to. */
  covers: { segment: number; offset: number };
  sections: Record<SectionName, SectionPlace>;
}

/** Bytes of one posting in a block of `rows` rows. */
export function postingBytes(rows: number): 2 | 4 {
  return rows <= U16_POSTINGS_ROWS ? 2 : 4;
}

/** A block file that does not read back as written: its path, and what is wrong. */
export class BlockDamaged extends Error {
  constructor(readonly file: string, what: string, options?: ErrorOptions) {
    super(`block ${file}: ${what}`, options);
    this.name = 'BlockDamaged';
  }
}

/** `bytes` followed by their CRC32C. */
export function withCrc(bytes: Buffer): Buffer[] {
  const crc = Buffer.alloc(CRC_BYTES);
  crc.writeUInt32LE(checksum(bytes));
  return [bytes, crc];
}

/**
 * True when the CRC32C stored just after `bytes` (at `crc`) is theirs.
 * @param crc the 4 bytes read after the section
 */
export function crcMatches(bytes: Uint8Array, crc: Buffer): boolean {
  return crc.length === CRC_BYTES && crc.readUInt32LE(0) === checksum(bytes);
}

/** The header section's bytes. */
export function encodeHeader(): Buffer {
  const header = Buffer.alloc(HEADER_BYTES);
  BLOCK_MAGIC.copy(header);
  header.writeUInt32LE(BLOCK_VERSION, BLOCK_MAGIC.length);
  return header;
}

/** The table of contents' bytes, its CRC32C last. */
export function encodeToc(toc: BlockToc): Buffer {
  const bytes = Buffer.alloc(TOC_BYTES);
  let at = bytes.writeUInt32LE(toc.rows, 0);
  at = bytes.writeDoubleLE(toc.oldest, at);
  at = bytes.writeDoubleLE(toc.newest, at);
  at = bytes.writeUInt32LE(toc.covers.segment, at);
  at = bytes.writeDoubleLE(toc.covers.offset, at);
  for (const name of SECTIONS) {
    at = bytes.writeDoubleLE(toc.sections[name].offset, at);
    at = bytes.writeDoubleLE(toc.sections[name].length, at);
  }
  bytes.writeUInt32LE(checksum(bytes.subarray(0, at)), at);
  return bytes;
}

/**
 * Reads a table of contents.
 * @param file the block's path, for the error
 * @throws BlockDamaged when its CRC does not match or it places a section outside `fileBytes`
 */
export function decodeToc(bytes: Buffer, fileBytes: number, file: string): BlockToc {
  const body = bytes.subarray(0, TOC_BYTES - CRC_BYTES);
  if (bytes.length !== TOC_BYTES || !crcMatches(body, bytes.subarray(TOC_BYTES - CRC_BYTES))) throw new BlockDamaged(file, 'its table of contents fails its CRC');
  let at = 0;
  const u32 = (): number => { at += 4; return bytes.readUInt32LE(at - 4); };
  const f64 = (): number => { at += 8; return bytes.readDoubleLE(at - 8); };
  const rows = u32();
  const oldest = f64();
  const newest = f64();
  const covers = { segment: u32(), offset: f64() };
  const sections = {} as Record<SectionName, SectionPlace>;
  for (const name of SECTIONS) {
    const place = { offset: f64(), length: f64() };
    if (place.offset < HEADER_BYTES || place.offset + place.length + CRC_BYTES > fileBytes - TOC_BYTES) throw new BlockDamaged(file, `its table of contents places ${name} outside the file`);
    sections[name] = place;
  }
  return { rows, oldest, newest, covers, sections };
}

/** A canonical UUID's 16 bytes (ids.ts `isCanonicalId`). */
export function idBytes(id: string): Buffer {
  return Buffer.from(id.replaceAll('-', ''), 'hex');
}

/** The canonical UUID of 16 id bytes. */
export function idOfBytes(bytes: Uint8Array): string {
  const hex = Buffer.from(bytes.buffer, bytes.byteOffset, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
