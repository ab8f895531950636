/**
 * The data of a record frame (docs/STORAGE.md, "The segment log"): everything replay needs to
 * re-derive a create's LMDB entries. msgpack of
 *
 *   [record (bytes), [[file id, content type], ...]]
 *
 * The record is its layout-2 bytes (record-codec.ts `frameRecordBytes`), whose presented JSON a
 * replay renders again (`recordFromFrame`); frames written before that carry the whole layout-3
 * value, as the `events` database holds it, and still replay.
 *
 * The files' bytes are the blob frames just before the record frame in the same segment (one
 * create's frames are appended together, in one writev); their places come from the scan.
 */
import { Packr } from 'msgpackr';

const packr = new Packr({ useRecords: false, mapsAsObjects: true });

/** A file of a create: its id and sniffed content type. */
export interface RecordFrameFile {
  fileId: string;
  contentType: string;
}

/** A decoded record frame. */
export interface RecordFrame {
  /** The record's bytes (record-codec.ts `frameRecordBytes`, or a whole layout-3 value). */
  record: Buffer;
  files: RecordFrameFile[];
}

/** Encodes the data of a record frame. */
export function encodeRecordFrame(frame: RecordFrame): Buffer {
  return packr.pack([frame.record, frame.files.map((f) => [f.fileId, f.contentType])]);
}

/**
 * Decodes the data of a record frame.
 * @throws Error when the bytes are not a record frame (a CRC-checked frame never is)
 */
export function decodeRecordFrame(data: Buffer): RecordFrame {
  const decoded = packr.unpack(data) as unknown;
  if (!Array.isArray(decoded) || !(decoded[0] instanceof Uint8Array) || !Array.isArray(decoded[1])) {
    throw new Error('not a record frame');
  }
  return {
    record: Buffer.from(decoded[0].buffer, decoded[0].byteOffset, decoded[0].byteLength),
    files: (decoded[1] as [string, string][]).map(([fileId, contentType]) => ({ fileId, contentType })),
  };
}
