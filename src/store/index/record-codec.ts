/**
 * Versioned record codec (docs/ARCHITECTURE.md, "How it stores data"): each stored value says its layout, so
 * records written by older releases still decode and are returned by queries. Every layout keeps
 * decoding; `encodeRecord` writes the newest.
 *
 * Layout 3 (current): a layout-2 record followed by the event's presented JSON, the exact bytes
 * `GET /v2/events/{event_id}` answers (docs/API.md, "Routes": stored event), so a list page is a
 * concatenation of stored bytes:
 *   byte 0          0x03 (no msgpack record starts so: layout 2 is an array, layout 1 a map)
 *   bytes 1..4      n, the layout-2 record's length (uint32, little-endian)
 *   bytes 5..5+n    the layout-2 record
 *   bytes 5+n..     the presented JSON (UTF-8), rewritten by every `encodeRecord`
 *
 * Layout 2: a msgpack positional array, compact and fast to encode:
 *   [2, id, created_at µs, solution, workflow_id, workflow_version, inference_timestamp,
 *    device_id, stream_id, image_id, event_schema, event_data, custom_metadata, images,
 *    videos, local_only_files, display_image_position, original_file_count,
 *    current_file_count, draft, finalized_at µs|null, auto_finalized_at µs|null]
 *   images: [file_id, input_file_id, label, object_detections, classifications,
 *            instance_segmentations, keypoints, metadata][]
 *   videos, local_only_files: [file_id, label, content_type, size_bytes][]
 *
 * Layout 1 (the first release): a msgpack map `{v: 1, id, created_at: ISO string, ...snake_case
 * fields, images: [{file_id, input_file_id, label, ...}]}` without drafts, attachments or file
 * counts; every layout-1 event was finalized on creation.
 */
import { Packr } from 'msgpackr';
import type { EventRecord, RecordAttachment, RecordImage, RecordMetadataValue } from '../record/event-record.js';
import { formatMicros, parseIsoMicros } from '../record/timestamps.js';

/**
 * Turns a record into the JSON text the API answers for it (docs/API.md, "Routes": stored
 * event). Supplied by the layer that owns the wire shape (src/events/present.ts): each thread's
 * composition root (serve.ts, the lifecycle worker) gives it to the store it opens
 * (store-view.ts `StoreOptions.present`), which passes it to `encodeRecord` and `storedJson`.
 */
export type RecordPresenter = (record: EventRecord) => string;

const packr = new Packr({ useRecords: false, mapsAsObjects: true, variableMapSize: true });

const LAYOUT_3 = 0x03;
const HEADER_BYTES = 5;

type Tuple = unknown[];

const encodeAttachment = (a: RecordAttachment): Tuple => [a.file_id, a.label, a.content_type, a.size_bytes];
const decodeAttachment = (t: Tuple): RecordAttachment => ({
  file_id: t[0] as string,
  label: t[1] as string,
  content_type: t[2] as string,
  size_bytes: t[3] as number,
});

function encodeLayout2(r: EventRecord): Buffer {
  return packr.pack([
    2, r.id, r.created_at, r.solution, r.workflow_id, r.workflow_version,
    r.inference_timestamp, r.device_id, r.stream_id, r.image_id, r.event_schema, r.event_data,
    r.custom_metadata,
    r.images.map((i) => [i.file_id, i.input_file_id, i.label, i.object_detections, i.classifications,
      i.instance_segmentations, i.keypoints, i.metadata]),
    r.videos.map(encodeAttachment), r.local_only_files.map(encodeAttachment),
    r.display_image_position, r.original_file_count, r.current_file_count, r.draft,
    r.finalized_at, r.auto_finalized_at,
  ]);
}

/**
 * Encodes a record in the current layout (3): its layout-2 form and its presented JSON. The JSON
 * is byte-identical to presenting `decodeRecord` of the stored value. msgpack gives a record
 * back as it was, except that it replaces a lone surrogate with U+FFFD characters and reads a
 * `__proto__` key back as `__proto_` (msgpackr's unpack.js): a record with either is presented
 * as it decodes, any other as it is, without that round trip (about 3 of the 42 KB a small
 * create allocates: native-bench/PROFILE.md, "The paced bench warms up at the pace").
 * @param present the store's presenter (StoreOptions.present)
 */
export function encodeRecord(r: EventRecord, present: RecordPresenter): Buffer {
  const record = encodeLayout2(r);
  return layout3Value(record, decodesUnchanged(r) ? r : decodeLayout2(packr.unpack(record) as Tuple), present);
}

/**
 * A record's layout-3 value encoded before its created_at is known, and where the created_at
 * goes in it: the write path encodes each create as it is submitted, one per turn of the event
 * loop, and its batch's commit only writes the time in (`stampValue`), so a batch of large
 * creates does not hold the HTTP thread for all their encodes at once (docs/STORAGE.md,
 * "Creates").
 */
export interface UnstampedValue {
  value: Buffer;
  /** Byte offsets in `value` of created_at's msgpack number and of its JSON text. */
  createdAt: [number, number];
  /** Likewise for finalized_at, which a create that is no draft is stamped with too; undefined for a draft. */
  finalizedAt: [number, number] | undefined;
}

/**
 * What an unstamped value holds where its times go: a µs time (2001-09-09) as wide as any from
 * 2^32 µs (1970-01-01T01:11:34Z) on, in msgpack (a float64) and in its ISO text (`formatMicros`).
 */
const UNSTAMPED_MICROS = 1e15;
const UNSTAMPED_PACKED = Buffer.from(packr.pack(UNSTAMPED_MICROS));
const UNSTAMPED_TEXT = Buffer.from(formatMicros(UNSTAMPED_MICROS));
/** A layout-2 record is an array of 22: msgpack's array 16 header (3 bytes), then the layout number 2 (1 byte). */
const LAYOUT_2_ID_OFFSET = 4;

/**
 * Encodes a create's record as `encodeRecord` does, with placeholder times where created_at (and,
 * unless it is a draft, finalized_at) go. Sets `r.created_at` (and `r.finalized_at`) to the
 * placeholder; the commit sets them and calls `stampValue`.
 * @returns the value and the times' offsets, or undefined when they cannot be told, and the
 *   commit must call `encodeRecord` itself
 */
export function encodeUnstamped(r: EventRecord, present: RecordPresenter): UnstampedValue | undefined {
  r.created_at = UNSTAMPED_MICROS;
  if (!r.draft) r.finalized_at = UNSTAMPED_MICROS;
  const value = encodeRecord(r, present);
  const recordEnd = HEADER_BYTES + layout3Record(value)!.length;
  const createdAt: [number, number] = [
    HEADER_BYTES + LAYOUT_2_ID_OFFSET + packr.pack(r.id).length,
    // The stored-event JSON ends with created_at and the fields after it, none of them the producer's.
    value.lastIndexOf('"created_at":"') + '"created_at":"'.length,
  ];
  // The msgpack record ends with finalized_at and auto_finalized_at (null, one byte).
  const finalizedAt: [number, number] | undefined = r.draft ? undefined : [
    recordEnd - 1 - UNSTAMPED_PACKED.length,
    value.lastIndexOf('"finalized_at":"') + '"finalized_at":"'.length,
  ];
  const holds = ([record, json]: [number, number]): boolean => record >= HEADER_BYTES && json > recordEnd &&
    value.subarray(record, record + UNSTAMPED_PACKED.length).equals(UNSTAMPED_PACKED) &&
    value.subarray(json, json + UNSTAMPED_TEXT.length).equals(UNSTAMPED_TEXT);
  if (!holds(createdAt) || (finalizedAt && !holds(finalizedAt))) return undefined;
  return { value, createdAt, finalizedAt };
}

/**
 * Writes a created_at into a value from `encodeUnstamped` (in place), and into its finalized_at
 * unless it is a draft: the value is then byte for byte `encodeRecord` of the stamped record. A
 * time the placeholder is not as wide as (before 2^32 µs, in 1970) is encoded again whole, from
 * the value's own record.
 * @param createdAt µs since the epoch
 * @param present the store's presenter, as `encodeUnstamped` was given it
 */
export function stampValue(unstamped: UnstampedValue, createdAt: number, present: RecordPresenter): Buffer {
  const packed = packr.pack(createdAt);
  const text = formatMicros(createdAt);
  const { value } = unstamped;
  if (packed.length !== UNSTAMPED_PACKED.length || text.length !== UNSTAMPED_TEXT.length) {
    const record = decodeRecord(value);
    record.created_at = createdAt;
    if (unstamped.finalizedAt) record.finalized_at = createdAt;
    return encodeRecord(record, present);
  }
  for (const [record, json] of unstamped.finalizedAt ? [unstamped.createdAt, unstamped.finalizedAt] : [unstamped.createdAt]) {
    value.set(packed, record);
    value.write(text, json, 'latin1');
  }
  return value;
}

/**
 * Whether msgpack gives `value` back unchanged: no string or key with a lone surrogate, and no
 * `__proto__` key, at any depth. The values are what JSON.parse and the create path build
 * (strings, numbers, booleans, null, arrays, plain objects).
 */
function decodesUnchanged(value: unknown): boolean {
  if (typeof value === 'string') return value.isWellFormed();
  if (typeof value !== 'object' || value === null) return true;
  if (Array.isArray(value)) return value.every(decodesUnchanged);
  for (const key in value) {
    if (key === '__proto__' || !key.isWellFormed() || !decodesUnchanged((value as Record<string, unknown>)[key])) return false;
  }
  return true;
}

/** The layout-3 value of a layout-2 record's bytes and the record they decode to. */
function layout3Value(record: Uint8Array, decoded: EventRecord, present: RecordPresenter): Buffer {
  const json = Buffer.from(present(decoded));
  const value = Buffer.allocUnsafe(HEADER_BYTES + record.length + json.length);
  value[0] = LAYOUT_3;
  value.writeUInt32LE(record.length, 1);
  value.set(record, HEADER_BYTES);
  json.copy(value, HEADER_BYTES + record.length);
  return value;
}

/**
 * The layout-2 record inside a layout-3 value (a view into `value`, no copy): what a record frame
 * keeps of a create (record-frame.ts; docs/STORAGE.md, "The segment log"). Its presented JSON,
 * about two thirds of a small event's value, is rendered again when the frame is replayed
 * (`recordFromFrame`).
 * @throws Error when `value` is not a well-formed layout-3 value
 */
export function frameRecordBytes(value: Buffer): Buffer {
  const record = layout3Record(value);
  if (!record) throw new Error('not a layout-3 record');
  return Buffer.from(record.buffer, record.byteOffset, record.byteLength);
}

/**
 * The layout-2 record bytes of a stored value of any layout (docs/STORAGE.md, "Two copies of every
 * record"): `frameRecordBytes` of a layout-3 value; a record of an older layout, which stores of
 * older releases keep, encoded again first. What a record copy keeps of an event.
 * @throws Error when `value` does not decode as a record
 */
export function recordCopyBytes(value: Buffer, present: RecordPresenter): Buffer {
  return frameRecordBytes(layout3Record(value) ? value : encodeRecord(decodeRecord(value), present));
}

/**
 * The record of a record frame's bytes and the value the `events` database stores for it: a
 * layout-2 record (`frameRecordBytes`) completed with its presented JSON by `present`, the store's
 * presenter; or a whole layout-3 value, as frames written before layout-2 frames carry
 * (docs/STORAGE.md, "The segment log"), kept as it is.
 * @throws Error on an unknown layout or malformed bytes
 */
export function recordFromFrame(bytes: Buffer, present: RecordPresenter): { record: EventRecord; value: Buffer } {
  const record = decodeRecord(bytes);
  return { record, value: bytes[0] === LAYOUT_3 ? bytes : layout3Value(bytes, record, present) };
}

function decodeLayout2(t: Tuple): EventRecord {
  return {
    id: t[1] as string,
    created_at: t[2] as number,
    solution: t[3] as string | null,
    workflow_id: t[4] as string | null,
    workflow_version: t[5] as string | null,
    inference_timestamp: t[6] as string,
    device_id: t[7] as string | null,
    stream_id: t[8] as string | null,
    image_id: t[9] as string | null,
    event_schema: t[10] as string,
    event_data: t[11] as Record<string, unknown>,
    custom_metadata: t[12] as Record<string, RecordMetadataValue>,
    images: (t[13] as Tuple[]).map((i): RecordImage => ({
      file_id: i[0] as string | null,
      input_file_id: i[1] as string | null,
      label: i[2] as string | null,
      object_detections: i[3] as unknown[],
      classifications: i[4] as unknown[],
      instance_segmentations: i[5] as unknown[],
      keypoints: i[6] as unknown[],
      metadata: i[7] as Record<string, unknown>,
    })),
    videos: (t[14] as Tuple[]).map(decodeAttachment),
    local_only_files: (t[15] as Tuple[]).map(decodeAttachment),
    display_image_position: t[16] as number | null,
    original_file_count: t[17] as number,
    current_file_count: t[18] as number,
    draft: t[19] as boolean,
    finalized_at: t[20] as number | null,
    auto_finalized_at: t[21] as number | null,
  };
}

function decodeLayout1(m: Record<string, unknown>): EventRecord {
  const createdAt = parseIsoMicros(String(m.created_at));
  if (createdAt === undefined) throw new Error(`layout-1 record ${String(m.id)} has a bad created_at`);
  const images = ((m.images ?? []) as Record<string, unknown>[]).map((i): RecordImage => ({
    file_id: (i.file_id ?? null) as string | null,
    input_file_id: (i.input_file_id ?? null) as string | null,
    label: (i.label ?? null) as string | null,
    object_detections: (i.object_detections ?? []) as unknown[],
    classifications: (i.classifications ?? []) as unknown[],
    instance_segmentations: (i.instance_segmentations ?? []) as unknown[],
    keypoints: (i.keypoints ?? []) as unknown[],
    metadata: (i.metadata ?? {}) as Record<string, unknown>,
  }));
  const fileCount = images.reduce((n, i) => n + (i.file_id ? 1 : 0) + (i.input_file_id ? 1 : 0), 0);
  return {
    id: String(m.id),
    created_at: createdAt,
    solution: (m.solution ?? null) as string | null,
    workflow_id: (m.workflow_id ?? null) as string | null,
    workflow_version: (m.workflow_version ?? null) as string | null,
    inference_timestamp: String(m.inference_timestamp),
    device_id: (m.device_id ?? null) as string | null,
    stream_id: (m.stream_id ?? null) as string | null,
    image_id: (m.image_id ?? null) as string | null,
    event_schema: String(m.event_schema),
    event_data: (m.event_data ?? {}) as Record<string, unknown>,
    custom_metadata: (m.custom_metadata ?? {}) as Record<string, RecordMetadataValue>,
    images,
    videos: [],
    local_only_files: [],
    display_image_position: (m.display_image_position ?? null) as number | null,
    original_file_count: fileCount,
    current_file_count: fileCount,
    draft: false,
    finalized_at: createdAt,
    auto_finalized_at: null,
  };
}

/** The record part of a layout-3 value (a view, no copy), or undefined for older layouts. */
function layout3Record(value: Uint8Array): Uint8Array | undefined {
  if (value[0] !== LAYOUT_3) return undefined;
  if (value.length < HEADER_BYTES) throw new Error('layout-3 record shorter than its header');
  const length = value[1] | (value[2] << 8) | (value[3] << 16) | (value[4] * 0x1000000);
  if (HEADER_BYTES + length > value.length) throw new Error('layout-3 record longer than its stored value');
  return value.subarray(HEADER_BYTES, HEADER_BYTES + length);
}

/**
 * Decodes a stored value of any layout (1, 2, 3) to its record.
 * @throws Error on an unknown layout version or a malformed value
 */
export function decodeRecord(value: Uint8Array): EventRecord {
  const decoded = packr.unpack(layout3Record(value) ?? value) as unknown;
  if (Array.isArray(decoded) && decoded[0] === 2) return decodeLayout2(decoded);
  if (decoded && typeof decoded === 'object' && (decoded as { v?: unknown }).v === 1) {
    return decodeLayout1(decoded as Record<string, unknown>);
  }
  throw new Error('record of an unknown layout');
}

/**
 * The bytes of a stored value that `decodeRecord` reads and decodes alike: the record part of
 * layout 3 (a view into `value`, no copy), the whole value of older layouts.
 * @throws Error on a malformed layout-3 value
 */
export function recordBytes(value: Uint8Array): Uint8Array {
  return layout3Record(value) ?? value;
}

/**
 * The bytes of a stored value that `decodeRecord` reads (bytes): the record part of layout 3,
 * the whole value of older layouts. What a filter check on the decoded record costs to read.
 * @throws Error on a malformed layout-3 value
 */
export function recordByteLength(value: Uint8Array): number {
  return (layout3Record(value) ?? value).length;
}

/**
 * The presented JSON of a stored value (UTF-8 bytes, docs/API.md "Routes": stored event): for
 * layout 3 a view into `value` (no copy: valid as long as `value` is), for older layouts the
 * decoded record presented by `present`, the store's presenter (StoreOptions.present).
 * @throws Error on an unknown layout or a malformed value
 */
export function storedJson(value: Buffer, present: RecordPresenter): Buffer {
  const record = layout3Record(value);
  return record ? value.subarray(HEADER_BYTES + record.length, value.length) : Buffer.from(present(decodeRecord(value)));
}

/**
 * The record a stored value holds, when it reads back whole: its record decodes and, for layout
 * 3, the presented JSON it keeps is that record's as `present` renders it. The two halves say the
 * same thing twice, so a changed byte in either makes them disagree (the scrub and `edge-events
 * check`: docs/STORAGE.md, "The scrub"). Never throws: a value that does not decode gives undefined.
 */
export function wholeRecord(value: Buffer, present: RecordPresenter): EventRecord | undefined {
  try {
    const record = decodeRecord(value);
    const layout3 = layout3Record(value);
    return !layout3 || value.subarray(HEADER_BYTES + layout3.length).equals(Buffer.from(present(record))) ? record : undefined;
  } catch {
    return undefined;
  }
}
