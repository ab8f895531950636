/**
 * Updates to existing events as the segment log holds them (docs/STORAGE.md, "Updates to
 * events"): a finalize (by the producer or the auto-finalize sweep) and an attach (a video or a
 * local-only file, uploaded to a segment of its own). An update is made durable by its frame in
 * the log, like a create, and reaches LMDB with the next checkpoint; the head applies it
 * to every read meanwhile, and replay applies it again after an unclean stop.
 *
 * The data of an update frame is msgpack of an array:
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
export interface FinalizeUpdate {
  type: 'finalize';
  createdAt: number;
  at: number;
  auto: boolean;
}

/** A file listed on a draft; its bytes are the blob frame of segment `segment` (docs/API.md, "Drafts and attachments"). */
export interface AttachUpdate {
  type: 'attach';
  createdAt: number;
  kind: 'video' | 'local_only';
  file: RecordAttachment;
  segment: number;
  /** CRC32C of the file's bytes. */
  crc: number;
}

export type RecordUpdate = FinalizeUpdate | AttachUpdate;

const FINALIZE = 1;
const ATTACH = 2;
const KIND_CODES = { video: 2, local_only: 3 } as const;

/** Encodes the data of an update frame (see the module comment). */
export function encodeUpdate(update: RecordUpdate): Buffer {
  if (update.type === 'finalize') return packr.pack([FINALIZE, update.createdAt, update.at, update.auto ? 1 : 0]);
  const { file } = update;
  return packr.pack([ATTACH, update.createdAt, KIND_CODES[update.kind], file.file_id, file.label, file.content_type, file.size_bytes, update.segment, update.crc]);
}

/**
 * Decodes the data of an update frame.
 * @throws Error when the bytes are not an update (a CRC-checked frame never is)
 */
export function decodeUpdate(data: Buffer): RecordUpdate {
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
  throw new Error('not an update frame');
}

/**
 * Applies `update` to `record` in place, as docs/API.md ("Drafts and attachments") defines it.
 * @returns false, leaving the record as it was, when the update no longer applies: a finalize of
 *   an event already finalized, an attach to one finalized (each refused or reported before its
 *   frame is written, so only a concurrent writer elsewhere makes it so)
 */
export function applyUpdate(record: EventRecord, update: RecordUpdate): boolean {
  if (record.finalized_at !== null) return false;
  if (update.type === 'finalize') {
    record.draft = false;
    record.finalized_at = update.at;
    if (update.auto) record.auto_finalized_at = update.at;
    return true;
  }
  (update.kind === 'video' ? record.videos : record.local_only_files).push({ ...update.file });
  record.original_file_count++;
  record.current_file_count++;
  return true;
}

/**
 * What an applied update adds to the counters (lmdb-env.ts `Counters`).
 * @param shipping sinks are configured: a finalized event enters the shipping ledger
 */
export function updateCounts(update: RecordUpdate, shipping: boolean): Partial<Counters> {
  if (update.type === 'finalize') return shipping ? { drafts: -1, uploadsPending: 1 } : { drafts: -1 };
  return { files: 1, liveBlobBytes: update.file.size_bytes };
}

/** Where an attached file lives: the one blob frame of its own segment, right after the header. */
export function attachedFile(update: AttachUpdate): FileEntry {
  const { file } = update;
  return {
    segment: update.segment, offset: FRAME_HEADER_BYTES, length: file.size_bytes, kind: update.kind,
    contentType: file.content_type, event: update.createdAt, crc: update.crc,
  };
}
