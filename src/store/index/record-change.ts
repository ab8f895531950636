/**
 * Changes to existing events as the segment log holds them (docs/STORAGE.md, "Changes to
 * events"): a finalize (by the producer or the auto-finalize sweep) and an attach (a video or a
 * local-only file, uploaded to a segment of its own). A change is made durable by its frame in
 * the log, like a create, and reaches LMDB with the next checkpoint; the head applies it
 * to every read meanwhile, and replay applies it again after an unclean stop.
 *
 * The data of a change frame is msgpack of an array:
 *
 *   finalize: [1, created_at, finalized_at, auto (0 or 1)]
 *   attach:   [2, created_at, kind (2 video, 3 local-only file), file id, label, content type,
 *              size, segment, CRC32C]
 *
 * Timestamps in µs, sizes in bytes. The attached file's bytes are the one blob frame of
 * `segment`, right after its header.
 */
import { Packr } from 'msgpackr';
import type { EventRecord, RecordAttachment } from '../record/event-record.js';
import type { Counters } from './lmdb-env.js';
import type { FileEntry } from '../log/log-entries.js';
import { FRAME_HEADER_BYTES } from '../log/segment-frames.js';

const packr = new Packr({ useRecords: false, mapsAsObjects: true });

/** A draft closed: `at` is its finalized_at (µs); `auto` sets auto_finalized_at too. */
export interface FinalizeChange {
  type: 'finalize';
  createdAt: number;
  at: number;
  auto: boolean;
}

/** A file listed on a draft; its bytes are the blob frame of segment `segment` (docs/API.md, "Drafts and attachments"). */
export interface AttachChange {
  type: 'attach';
  createdAt: number;
  kind: 'video' | 'local_only';
  file: RecordAttachment;
  segment: number;
  /** CRC32C of the file's bytes. */
  crc: number;
}

export type RecordChange = FinalizeChange | AttachChange;

const FINALIZE = 1;
const ATTACH = 2;
const KIND_CODES = { video: 2, local_only: 3 } as const;

/** Encodes the data of a change frame (see the module comment). */
export function encodeChange(change: RecordChange): Buffer {
  if (change.type === 'finalize') return packr.pack([FINALIZE, change.createdAt, change.at, change.auto ? 1 : 0]);
  const { file } = change;
  return packr.pack([ATTACH, change.createdAt, KIND_CODES[change.kind], file.file_id, file.label, file.content_type, file.size_bytes, change.segment, change.crc]);
}

/**
 * Decodes the data of a change frame.
 * @throws Error when the bytes are not a change (a CRC-checked frame never is)
 */
export function decodeChange(data: Buffer): RecordChange {
  const decoded = packr.unpack(data) as unknown[];
  if (Array.isArray(decoded) && decoded[0] === FINALIZE && decoded.length === 4) {
    const [, createdAt, at, auto] = decoded as [number, number, number, number];
    return { type: 'finalize', createdAt, at, auto: auto === 1 };
  }
  if (Array.isArray(decoded) && decoded[0] === ATTACH && decoded.length === 9) {
    const [, createdAt, kind, fileId, label, contentType, size, segment, crc] = decoded as [number, number, number, string, string, string, number, number, number];
    return {
      type: 'attach', createdAt, kind: kind === KIND_CODES.video ? 'video' : 'local_only',
      file: { file_id: fileId, label, content_type: contentType, size_bytes: size }, segment, crc,
    };
  }
  throw new Error('not a change frame');
}

/**
 * Applies `change` to `record` in place, as docs/API.md ("Drafts and attachments") defines it.
 * @returns false, leaving the record as it was, when the change no longer applies: a finalize of
 *   an event already finalized, an attach to one finalized (each refused or reported before its
 *   frame is written, so only a concurrent writer elsewhere makes it so)
 */
export function applyChange(record: EventRecord, change: RecordChange): boolean {
  if (record.finalized_at !== null) return false;
  if (change.type === 'finalize') {
    record.draft = false;
    record.finalized_at = change.at;
    if (change.auto) record.auto_finalized_at = change.at;
    return true;
  }
  (change.kind === 'video' ? record.videos : record.local_only_files).push({ ...change.file });
  record.original_file_count++;
  record.current_file_count++;
  return true;
}

/**
 * What an applied change adds to the counters (lmdb-env.ts `Counters`).
 * @param shipping sinks are configured: a finalized event enters the shipping ledger
 */
export function changeCounts(change: RecordChange, shipping: boolean): Partial<Counters> {
  if (change.type === 'finalize') return shipping ? { drafts: -1, uploadsPending: 1 } : { drafts: -1 };
  return { files: 1, liveBlobBytes: change.file.size_bytes };
}

/** Where an attached file lives: the one blob frame of its own segment, right after the header. */
export function attachedFile(change: AttachChange): FileEntry {
  const { file } = change;
  return {
    segment: change.segment, offset: FRAME_HEADER_BYTES, length: file.size_bytes, kind: change.kind,
    contentType: file.content_type, event: change.createdAt, crc: change.crc,
  };
}
