/**
 * The data of the frames that keep the log a whole copy of every live event (docs/STORAGE.md,
 * "Two copies of every record"):
 *
 * - a **record copy** (kind 18) is an event's whole record as the index holds it then, its
 *   updates applied, written when compaction moves the event forward or an upgrade writes back
 *   a record only the index had. msgpack of
 *
 *     [record (bytes), [[file id, content type, kind, segment, offset, length, CRC32C], ...]]
 *
 *   The record is its layout-2 bytes (record-codec.ts `frameRecordBytes`), as in a record frame.
 *   Its files are where the index placed them then: their blob frames may be in any segment.
 *   A copy supersedes every frame of its event before it in the log.
 * - a **tombstone** (kind 19) says an event was deleted: msgpack of `[created_at]` (µs). It
 *   supersedes every frame of its event before it, so a rebuild does not bring the event back.
 */
import { Packr } from 'msgpackr';
import type { FileKind } from './log-entries.js';

const packr = new Packr({ useRecords: false, mapsAsObjects: true });

/** A file of a copied record and where its blob frame is (offset of the first data byte; bytes). */
export interface CopiedFile {
  fileId: string;
  contentType: string;
  kind: FileKind;
  segment: number;
  offset: number;
  length: number;
  crc: number;
}

/** A decoded record copy. */
export interface RecordCopy {
  /** The record's bytes (record-codec.ts `frameRecordBytes`). */
  record: Buffer;
  files: CopiedFile[];
}

/** Encodes the data of a record copy frame. */
export function encodeRecordCopy(copy: RecordCopy): Buffer {
  return packr.pack([copy.record, copy.files.map((f) => [f.fileId, f.contentType, f.kind, f.segment, f.offset, f.length, f.crc])]);
}

/**
 * Decodes the data of a record copy frame.
 * @throws Error when the bytes are not a record copy (a CRC-checked frame of kind 18 never is)
 */
export function decodeRecordCopy(data: Buffer): RecordCopy {
  const decoded = packr.unpack(data) as unknown;
  if (!Array.isArray(decoded) || !(decoded[0] instanceof Uint8Array) || !Array.isArray(decoded[1])) throw new Error('not a record copy frame');
  const files = (decoded[1] as [string, string, FileKind, number, number, number, number][]).map(([fileId, contentType, kind, segment, offset, length, crc]) => ({
    fileId, contentType, kind, segment, offset, length, crc,
  }));
  return { record: Buffer.from(decoded[0].buffer, decoded[0].byteOffset, decoded[0].byteLength), files };
}

/** Encodes the data of a tombstone frame for the event created at `createdAt` (µs). */
export function encodeTombstone(createdAt: number): Buffer {
  return packr.pack([createdAt]);
}

/**
 * The created_at (µs) a tombstone frame's data names.
 * @throws Error when the bytes are not a tombstone
 */
export function decodeTombstone(data: Buffer): number {
  const decoded = packr.unpack(data) as unknown;
  if (!Array.isArray(decoded) || typeof decoded[0] !== 'number') throw new Error('not a tombstone frame');
  return decoded[0];
}
