/**
 * Secondary index entries (docs/STORAGE.md, "The index"): composite ordered-binary
 * keys `[field, value, created_at]` with empty values, so every filter is a range scan in
 * created_at order and a query with an indexed filter never scans the whole store.
 *
 * Field codes are one letter to keep keys short (LMDB keys are at most ~1978 bytes):
 *   d device_id, s event_schema, w workflow_id, x external_id (event_data),
 *   r related_event_id (event_data), m custom_metadata (key: [m, name, value, created_at]),
 *   D drafts ([D, created_at]: the auto-finalize sweep walks these),
 *   U finalized events waiting for cloud upload ([U, created_at]; only with cloud upload on),
 *   X events the cloud refused for good ([X, created_at]: dead letters, no longer protected),
 *   F files by age ([F, created_at of the event, file id]: storage cleanup deletes oldest first).
 */
import { createHash } from 'node:crypto';
import type { Key } from 'lmdb';
import type { EventRecord, RecordMetadataValue } from './event-record.js';

/** The exact-match fields the list and count routes filter on, with their index codes. */
export const INDEXED_FIELDS = {
  device_id: 'd',
  event_schema: 's',
  workflow_id: 'w',
  external_id: 'x',
  related_event_id: 'r',
} as const;

export type IndexedField = keyof typeof INDEXED_FIELDS;

const NUMERIC = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/**
 * Longest string (UTF-8 bytes) indexed as itself. LMDB keys hold at most 1978 bytes, and valid
 * values go beyond that (an external_id of 1000 '€' is 3000 bytes): longer ones are indexed as
 * a SHA-256 digest, the same on write and on query; queries check the records' real values.
 */
const MAX_INDEXED_BYTES = 512;

/** How the index form of a long value begins (`indexableString`). */
export const DIGEST_PREFIX = '\u0000sha256:';

/** The form of a string value inside an index key (itself, or its digest when long). */
export function indexableString(value: string): string {
  if (value.length * 3 <= MAX_INDEXED_BYTES || Buffer.byteLength(value) <= MAX_INDEXED_BYTES) return value;
  return `${DIGEST_PREFIX}${createHash('sha256').update(value).digest('hex')}`;
}

/**
 * The comparable form of a metadata value: numbers, and strings that read as numbers, become
 * numbers (so `5`, `"5"` and `"5.0"` are equal); booleans become "true"/"false".
 * `metadata_filter` compares numerically when both sides are numbers (docs/API.md, "Query parameters").
 */
export function comparableMetadataValue(value: RecordMetadataValue): string | number {
  if (typeof value === 'number') return value;
  if (typeof value === 'boolean') return String(value);
  return NUMERIC.test(value.trim()) ? Number(value) : value;
}

/** The form of a metadata value inside an index key. */
export function indexableMetadataValue(value: RecordMetadataValue): string | number {
  const comparable = comparableMetadataValue(value);
  return typeof comparable === 'number' ? comparable : indexableString(comparable);
}

/** The value of an indexed field in a record, or null when the record has none. */
export function indexedValue(record: EventRecord, field: IndexedField): string | null {
  switch (field) {
    case 'external_id':
    case 'related_event_id': {
      const value = record.event_data[field];
      return typeof value === 'string' ? value : null;
    }
    default:
      return record[field];
  }
}

/**
 * Every index key a record owns; put on create, removed on delete.
 * @param trackUploads cloud upload is on: a finalized record waits in the upload queue
 */
export function indexKeysOf(record: EventRecord, trackUploads: boolean): Key[][] {
  const keys: Key[][] = [];
  const ts = record.created_at;
  for (const field of Object.keys(INDEXED_FIELDS) as IndexedField[]) {
    const value = indexedValue(record, field);
    if (value !== null) keys.push([INDEXED_FIELDS[field], indexableString(value), ts]);
  }
  for (const [name, value] of Object.entries(record.custom_metadata)) {
    keys.push(['m', indexableString(name), indexableMetadataValue(value), ts]);
  }
  if (record.draft) keys.push(draftKey(ts));
  else if (trackUploads) keys.push(uploadKey(ts));
  for (const fileId of fileIdsOf(record)) keys.push(fileAgeKey(ts, fileId));
  return keys;
}

/** The ids of every file of a record: images, input images, videos, local-only files. */
export function fileIdsOf(record: EventRecord): string[] {
  const ids: string[] = [];
  for (const image of record.images) {
    if (image.file_id) ids.push(image.file_id);
    if (image.input_file_id) ids.push(image.input_file_id);
  }
  for (const file of [...record.videos, ...record.local_only_files]) ids.push(file.file_id);
  return ids;
}

/** The upload-queue key of a finalized event created at `createdAt` (µs). */
export function uploadKey(createdAt: number): Key[] {
  return ['U', createdAt];
}

/** The files-by-age key of file `fileId` of the event created at `createdAt` (µs). */
export function fileAgeKey(createdAt: number, fileId: string): Key[] {
  return ['F', createdAt, fileId];
}

/** The value of every index entry: the key says it all. */
export const EMPTY = Buffer.alloc(0);

/** The dead-letter key of an event the cloud refused for good, created at `createdAt` (µs). */
export function deadLetterKey(createdAt: number): Key[] {
  return ['X', createdAt];
}

/** The drafts-index key of a draft created at `createdAt` (µs). */
export function draftKey(createdAt: number): Key[] {
  return ['D', createdAt];
}
