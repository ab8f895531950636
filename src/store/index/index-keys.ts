/**
 * Secondary index entries (docs/STORAGE.md, "The index"): composite ordered-binary
 * keys `[field, value, created_at]` with empty values, so every filter is a range scan in
 * created_at order and a query with an indexed filter never scans the whole store.
 *
 * Field codes are one letter to keep keys short (LMDB keys are at most ~1978 bytes):
 *   d device_id, s event_schema, w workflow_id, x external_id (event_data),
 *   r related_event_id (event_data), t stream_id, o solution,
 *   m custom_metadata (key: [m, name, value, created_at]),
 *   c prediction classes ([c, class, created_at]: one entry per class the event's images predict),
 *   D drafts ([D, created_at]: the auto-finalize sweep walks these),
 *   Q the shipping ledger ([Q, seq, created_at]; only with sinks configured; sink-ledger.ts),
 *   U finalized events some sink has not shipped ([U, created_at]: cleanup keeps them),
 *   X events a sink refused for good ([X, created_at, sink]: dead letters),
 *   F files by age ([F, created_at of the event, file id]: storage cleanup deletes oldest first).
 */
import { createHash } from 'node:crypto';
import type { Key } from 'lmdb';
import type { EventRecord, RecordMetadataValue } from '../record/event-record.js';

/** The exact-match fields the list, count and search routes filter on, with their index codes. */
export const INDEXED_FIELDS = {
  device_id: 'd',
  event_schema: 's',
  workflow_id: 'w',
  external_id: 'x',
  related_event_id: 'r',
  stream_id: 't',
  solution: 'o',
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
 * Every index key a record owns by its fields; put on create, removed on delete. (Ledger
 * entries are put by sink-ledger.ts.)
 */
export function indexKeysOf(record: EventRecord): Key[][] {
  const keys: Key[][] = [];
  const ts = record.created_at;
  for (const field of FIELDS_BEFORE_SEARCH) {
    const value = indexedValue(record, field);
    if (value !== null) keys.push(fieldEntry(field, value, ts));
  }
  const metadata = record.custom_metadata;
  for (const name of Object.keys(metadata)) keys.push(metadataEntry(name, metadata[name], ts));
  addSearchIndexKeys(record, keys);
  if (record.draft) keys.push(draftKey(ts));
  for (const fileId of fileIdsOf(record)) keys.push(fileAgeKey(ts, fileId));
  return keys;
}

/** The map key of an index key prefix: its JSON (prefix parts are strings and numbers). */
export const prefixKey = (prefix: readonly Key[]): string => JSON.stringify(prefix);

/**
 * The `prefixKey`s of a record's index keys whose last part is its created_at: every key a query
 * plan reads (index-source.ts), which the head's index and a block's postings hold.
 */
export function plannedPrefixKeys(record: EventRecord): string[] {
  const keys: string[] = [];
  for (const key of indexKeysOf(record)) {
    if (key[key.length - 1] === record.created_at) keys.push(prefixKey(key.slice(0, -1)));
  }
  return keys;
}

/**
 * Fields whose entries came with the search index (search-index.ts backfills them, with the
 * classes, into stores written before).
 */
export const SEARCH_INDEX_FIELDS: readonly IndexedField[] = ['stream_id', 'solution'];

/** The indexed fields whose entries every create has had, the search index's aside. */
const FIELDS_BEFORE_SEARCH = (Object.keys(INDEXED_FIELDS) as IndexedField[]).filter((field) => !SEARCH_INDEX_FIELDS.includes(field));

/** The entries of a record that came with the search index: its stream, solution and classes. */
export function searchIndexKeysOf(record: EventRecord): Key[][] {
  const keys: Key[][] = [];
  addSearchIndexKeys(record, keys);
  return keys;
}

/** Adds the entries of `record` that came with the search index to `keys`. */
function addSearchIndexKeys(record: EventRecord, keys: Key[][]): void {
  const ts = record.created_at;
  for (const field of SEARCH_INDEX_FIELDS) {
    const value = indexedValue(record, field);
    if (value !== null) keys.push(fieldEntry(field, value, ts));
  }
  for (const className of predictedClasses(record)) keys.push(classEntry(className, ts));
}

/**
 * The prefix of the index entries of records whose `field` holds `value`: `[code, value]`; an
 * entry is the prefix and the record's created_at (µs), `fieldEntry`.
 */
export function fieldPrefix(field: IndexedField, value: string): Key[] {
  return [INDEXED_FIELDS[field], indexableString(value)];
}

/** The index entry of the record created at `createdAt` (µs) whose `field` holds `value`: `fieldPrefix` and the created_at. */
function fieldEntry(field: IndexedField, value: string, createdAt: number): Key[] {
  return [INDEXED_FIELDS[field], indexableString(value), createdAt];
}

/**
 * The prefix of the index entries of records whose custom_metadata `name` holds `value`
 * (compared as `comparableMetadataValue`): `['m', name, value]`; an entry is the prefix and the
 * record's created_at (µs), `metadataEntry`.
 */
export function metadataPrefix(name: string, value: RecordMetadataValue): Key[] {
  return ['m', indexableString(name), indexableMetadataValue(value)];
}

/** The index entry of the record created at `createdAt` (µs) whose custom_metadata `name` holds `value`: `metadataPrefix` and the created_at. */
function metadataEntry(name: string, value: RecordMetadataValue, createdAt: number): Key[] {
  return ['m', indexableString(name), indexableMetadataValue(value), createdAt];
}

/**
 * The prefix of the index entries of records some of whose images predict `className` (an object
 * detection, classification, instance segmentation or keypoint group of that class): `['c', class]`;
 * an entry is the prefix and the record's created_at (µs), `classEntry`.
 */
export function classPrefix(className: string): Key[] {
  return ['c', indexableString(className)];
}

/** The index entry of the record created at `createdAt` (µs) some of whose images predict `className`: `classPrefix` and the created_at. */
function classEntry(className: string, createdAt: number): Key[] {
  return ['c', indexableString(className), createdAt];
}

/** A prediction of any kind, as far as the index and search look at it. */
interface Prediction {
  class: string;
  confidence: number;
}

/** Every prediction of a record's images: object detections, classifications, segmentations, keypoint groups. */
export function* predictionsOf(record: EventRecord): Generator<Prediction> {
  for (const image of record.images) for (const list of predictionLists(image)) yield* list;
}

/** The predictions of one image, by kind: object detections, classifications, segmentations, keypoint groups. */
function predictionLists(image: EventRecord['images'][number]): Prediction[][] {
  return [image.object_detections, image.classifications, image.instance_segmentations, image.keypoints] as Prediction[][];
}

/** The distinct classes a record's images predict. */
export function predictedClasses(record: EventRecord): Set<string> {
  const classes = new Set<string>();
  for (const image of record.images) for (const list of predictionLists(image)) for (const prediction of list) classes.add(prediction.class);
  return classes;
}

/** The ids of every file of a record: images, input images, videos, local-only files. */
export function fileIdsOf(record: EventRecord): string[] {
  const ids: string[] = [];
  for (const image of record.images) {
    if (image.file_id) ids.push(image.file_id);
    if (image.input_file_id) ids.push(image.input_file_id);
  }
  for (const file of record.videos) ids.push(file.file_id);
  for (const file of record.local_only_files) ids.push(file.file_id);
  return ids;
}

/** The key saying some sink has not shipped the finalized event created at `createdAt` (µs). */
export function pendingKey(createdAt: number): Key[] {
  return ['U', createdAt];
}

/** The files-by-age key of file `fileId` of the event created at `createdAt` (µs). */
export function fileAgeKey(createdAt: number, fileId: string): Key[] {
  return ['F', createdAt, fileId];
}

/** The value of every index entry: the key says it all. */
export const EMPTY = Buffer.alloc(0);

/** The dead-letter key of an event created at `createdAt` (µs) that `sink` refused for good. */
export function deadLetterKey(createdAt: number, sink: string): Key[] {
  return ['X', createdAt, sink];
}

/** Every dead-letter entry of the event created at `createdAt` (µs), whichever sink refused it. */
export function deadLetterRange(createdAt: number): IndexRange {
  return { start: ['X', createdAt], end: ['X', createdAt + 1] };
}

/** The ledger key of the event created at `createdAt` (µs), finalized as number `seq`. */
export function ledgerKey(seq: number, createdAt: number): Key[] {
  return ['Q', seq, createdAt];
}

/** The ledger entries from seq `from` (inclusive) to `before` (exclusive; default: the end). */
export function ledgerRange(from: number, before = Infinity): IndexRange {
  return { start: ['Q', from], end: ['Q', before] };
}

/** The prefix of every drafts-index key. */
export const DRAFTS_PREFIX: readonly Key[] = ['D'];

/** The drafts-index key of a draft created at `createdAt` (µs). */
export function draftKey(createdAt: number): Key[] {
  return [...DRAFTS_PREFIX, createdAt];
}

/**
 * Bounds of a scan over index entries, as lmdb-js range options take them: `start` inclusive,
 * `end` exclusive.
 */
export interface IndexRange {
  start: Key[];
  end: Key[];
}

/** The drafts-index entries of drafts created before `before` (µs, exclusive; default: every draft). */
export function draftRange(before = Infinity): IndexRange {
  return { start: draftKey(-Infinity), end: draftKey(before) };
}

/**
 * The files-by-age entries of the files of events created before `before` (µs, exclusive;
 * default: every file): `['F', created_at, file id]` sorts after `['F', created_at]`, so
 * `['F', before]` as the end leaves out every file of an event created at `before`.
 */
export function fileAgeRange(before = Infinity): IndexRange {
  return { start: ['F', -Infinity], end: ['F', before] };
}

/**
 * The created_at (µs) of an index entry of any kind but files-by-age: its last element (a field,
 * metadata, draft or pending entry).
 */
export function createdAtOfKey(key: Key): number {
  const parts = key as Key[];
  return parts[parts.length - 1] as number;
}

/** The event's created_at (µs) and the file's id of a files-by-age entry (`fileAgeKey`). */
export function fileOfAgeKey(key: Key): { createdAt: number; fileId: string } {
  const [, createdAt, fileId] = key as [string, number, string];
  return { createdAt, fileId };
}
