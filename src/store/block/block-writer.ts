/**
 * Writes a block file (docs/STORAGE.md, "Blocks"; block-format.ts for the layout): the records of
 * a stretch of created_at and their index, in one sequential write, made durable before the file
 * has its name, as Prometheus's TSDB writes a block to a temporary folder and renames it.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { plannedPrefixKeys } from '../index/index-keys.js';
import type { EventRecord } from '../record/event-record.js';
import { checksum } from '../log/segment-frames.js';
import { syncDirectory } from '../log/segment-files.js';
import { writeAll } from '../log/write-all.js';
import {
  encodeHeader, encodeToc, HEADER_BYTES, ID_ROW_BYTES, idBytes, LOCATION_ROW_BYTES, postingBytes, SECTIONS,
  type BlockRow, type BlockToc, type SectionName, type SectionPlace, withCrc, CRC_BYTES,
} from './block-format.js';

export type { BlockRow } from './block-format.js';

/**
 * The block row of a record and its layout-2 bytes.
 * @param prefixes the record's `plannedPrefixKeys` when known already (made here otherwise)
 */
export function blockRowOf(record: EventRecord, recordBytes: Buffer, prefixes: readonly string[] = plannedPrefixKeys(record)): BlockRow {
  return { createdAt: record.created_at, id: record.id, record: recordBytes, prefixes };
}

/**
 * The bytes of a block file of `rows`, in file order (block-format.ts).
 * @param rows at least one, in ascending created_at
 * @param covers the log position (segment, byte offset) the rows come from up to
 * @throws Error when `rows` is empty or not in ascending created_at
 */
export function encodeBlock(rows: readonly BlockRow[], covers: BlockToc['covers']): Buffer[] {
  if (rows.length === 0) throw new Error('a block holds at least one event');
  for (let i = 1; i < rows.length; i++) {
    if (!(rows[i].createdAt > rows[i - 1].createdAt)) throw new Error('block rows must come in ascending created_at');
  }
  const sections: Record<SectionName, Buffer> = {
    records: Buffer.concat(rows.map((row) => row.record)),
    locations: locationsOf(rows),
    ids: idsOf(rows),
    ...postingsOf(rows),
  };
  const buffers: Buffer[] = withCrc(encodeHeader());
  const places = {} as Record<SectionName, SectionPlace>;
  let offset = HEADER_BYTES + CRC_BYTES;
  for (const name of SECTIONS) {
    places[name] = { offset, length: sections[name].length };
    buffers.push(...withCrc(sections[name]));
    offset += sections[name].length + CRC_BYTES;
  }
  buffers.push(encodeToc({ rows: rows.length, oldest: rows[0].createdAt, newest: rows[rows.length - 1].createdAt, covers, sections: places }));
  return buffers;
}

/** The locations section: created_at, record offset, length and CRC32C of each row. */
function locationsOf(rows: readonly BlockRow[]): Buffer {
  const table = Buffer.alloc(rows.length * LOCATION_ROW_BYTES);
  let recordOffset = 0;
  rows.forEach((row, i) => {
    let at = table.writeDoubleLE(row.createdAt, i * LOCATION_ROW_BYTES);
    at = table.writeDoubleLE(recordOffset, at);
    at = table.writeUInt32LE(row.record.length, at);
    table.writeUInt32LE(checksum(row.record), at);
    recordOffset += row.record.length;
  });
  return table;
}

/** The ids section: each row's id bytes and row number, sorted by id. */
function idsOf(rows: readonly BlockRow[]): Buffer {
  const entries = rows.map((row, i) => ({ id: idBytes(row.id), row: i })).sort((a, b) => Buffer.compare(a.id, b.id));
  const table = Buffer.alloc(rows.length * ID_ROW_BYTES);
  entries.forEach(({ id, row }, i) => {
    id.copy(table, i * ID_ROW_BYTES);
    table.writeUInt32LE(row, i * ID_ROW_BYTES + 16);
  });
  return table;
}

/** The postings and postings offsets sections. */
function postingsOf(rows: readonly BlockRow[]): { postings: Buffer; postingsOffsets: Buffer } {
  const byPrefix = new Map<string, number[]>();
  rows.forEach((row, i) => {
    for (const prefix of row.prefixes) {
      const list = byPrefix.get(prefix);
      if (list) list.push(i);
      else byPrefix.set(prefix, [i]);
    }
  });
  const width = postingBytes(rows.length);
  const keyed = [...byPrefix].map(([prefix, list]) => ({ key: Buffer.from(prefix), list })).sort((a, b) => Buffer.compare(a.key, b.key));
  const postings = Buffer.alloc(keyed.reduce((n, { list }) => n + list.length * width, 0));
  const offsets = Buffer.alloc(keyed.reduce((n, { key }) => n + 2 + key.length + 16, 0));
  let postingsAt = 0;
  let offsetsAt = 0;
  for (const { key, list } of keyed) {
    const start = postingsAt;
    for (const row of list) postingsAt = width === 2 ? postings.writeUInt16LE(row, postingsAt) : postings.writeUInt32LE(row, postingsAt);
    offsetsAt = offsets.writeUInt16LE(key.length, offsetsAt);
    offsetsAt += key.copy(offsets, offsetsAt);
    offsetsAt = offsets.writeDoubleLE(start, offsetsAt);
    offsetsAt = offsets.writeUInt32LE(list.length, offsetsAt);
    offsetsAt = offsets.writeUInt32LE(checksum(postings.subarray(start, postingsAt)), offsetsAt);
  }
  return { postings, postingsOffsets: offsets };
}

/**
 * Writes a block file durably: its bytes to `<name>.tmp` in `dir`, fdatasync'd, renamed to
 * `name`, the folder fsync'd, so the name never stands for a file not wholly on the device. A
 * temporary file left by a crash is the start's to remove.
 * @returns the file's path and size (bytes)
 * @throws the fs error of the write, sync or rename (the temporary file is removed)
 */
export async function writeBlockFile(dir: string, name: string, buffers: Buffer[]): Promise<{ file: string; bytes: number }> {
  const file = path.join(dir, name);
  const temporary = `${file}.tmp`;
  const handle = await fs.open(temporary, 'w');
  try {
    await writeAll(handle, buffers, 0);
    await handle.datasync();
  } catch (err) {
    await handle.close();
    await fs.rm(temporary, { force: true });
    throw err;
  }
  await handle.close();
  await fs.rename(temporary, file);
  await syncDirectory(dir);
  return { file, bytes: buffers.reduce((n, b) => n + b.length, 0) };
}
