/**
 * Query planning and execution for the list and count routes (docs/API.md, "Query parameters";
 * `GET /v2/events`, `GET /events/count/stats`). Exact-match filters and `eq` metadata filters
 * are indexed conditions: the sparsest one (estimated from a sample of its index range) drives
 * the scan and the others are probed by point lookups, over LMDB and over the head's own index
 * alike (index-source.ts), so a query with an indexed filter never
 * scans the whole store; only a query with no indexed filter walks the primary key range.
 * `include_drafts=false` is probed on the drafts index. Other metadata operators, and values
 * indexed as a digest, are checked on the decoded records the plan yields, within a budget of
 * records read per request (`scanEvents`): a page that spends it ends early with `next` set, so
 * such a filter never reads the whole store in one request. Events are handed over as their
 * stored JSON (record-codec.ts `storedJson`), decoded only for such a check.
 */
import type { Key } from 'lmdb';
import { performance } from 'node:perf_hooks';
import { NO_VALUES, ProbeCursor, UnionCursor, type CreatedAtCursor, type Direction } from '../index/created-at-cursors.js';
import type { IndexSource } from '../index/index-source.js';
import { storeHandles, type StoreView } from './store-view.js';
import {
  comparableMetadataValue, DIGEST_PREFIX, DRAFTS_PREFIX, fieldPrefix, indexableMetadataValue, indexableString, indexedValue,
  metadataPrefix, type IndexedField,
} from '../index/index-keys.js';
import type { EventRecord, RecordMetadataValue } from '../record/event-record.js';
import { decodeRecord, recordByteLength, recordBytes, storedJson } from '../index/record-codec.js';

export type MetadataOperator = 'eq' | 'ne' | 'gt' | 'lt' | 'gte' | 'lte';

/** One `metadata_filter`: `key:op:value` (docs/API.md, "Query parameters"). */
export interface MetadataCondition {
  key: string;
  op: MetadataOperator;
  value: string;
}

/** A list or count query. Times are µs, both bounds inclusive. */
export interface EventQuery {
  /** Per field, the accepted values (one for `device_id`, several for `device_ids`). */
  fields: Partial<Record<IndexedField, string[]>>;
  metadata: MetadataCondition[];
  startTime: number | undefined;
  endTime: number | undefined;
  includeDrafts: boolean;
  direction: Direction;
  limit: number;
}

/** Count statistics of a query; timestamps in µs. */
export interface EventCounts {
  total: number;
  filtered: number;
  oldest: number | null;
  newest: number | null;
}

/**
 * True when the record carries custom_metadata `condition.key` and its value passes the
 * comparison (numeric when both sides read as numbers; docs/API.md, "Query parameters").
 */
export function metadataMatches(record: EventRecord, condition: MetadataCondition): boolean {
  // A filter on a key matches only events that carry that key (`ne` included); own keys only (a
  // filter on `toString` must not find Object.prototype's).
  return Object.hasOwn(record.custom_metadata, condition.key) && compareMetadata(record.custom_metadata[condition.key], condition);
}

function compareMetadata(stored: RecordMetadataValue, condition: MetadataCondition): boolean {
  const left = comparableMetadataValue(stored);
  const right = comparableMetadataValue(condition.value);
  const numeric = typeof left === 'number' && typeof right === 'number';
  const a = numeric ? left : String(left);
  const b = numeric ? right : String(right);
  switch (condition.op) {
    case 'eq': return a === b;
    case 'ne': return a !== b;
    case 'gt': return a > b;
    case 'lt': return a < b;
    case 'gte': return a >= b;
    case 'lte': return a <= b;
  }
}

/** True when a record passes every condition of the query (time bounds aside). */
export function matchesQuery(record: EventRecord, query: EventQuery): boolean {
  if (!query.includeDrafts && record.draft) return false;
  for (const [field, values] of Object.entries(query.fields) as [IndexedField, string[]][]) {
    const value = indexedValue(record, field);
    if (value === null || !values.includes(value)) return false;
  }
  return query.metadata.every((condition) => metadataMatches(record, condition));
}

/** An indexed condition: the key prefixes of its accepted values (an entry under any matches). */
type IndexedCondition = Key[][];

function indexedConditions(query: EventQuery): IndexedCondition[] {
  const conditions: IndexedCondition[] = [];
  for (const [field, values] of Object.entries(query.fields) as [IndexedField, string[]][]) {
    conditions.push(values.map((value) => fieldPrefix(field, value)));
  }
  for (const condition of query.metadata) {
    if (condition.op === 'eq') conditions.push([metadataPrefix(condition.key, condition.value)]);
  }
  return conditions;
}

/**
 * True when `value` is its own index form and no digest form can equal it: an index entry under
 * it then belongs to a record holding exactly that value. A long value is indexed as its digest
 * (index-keys.ts `indexableString`), which a record's other value may share, and a short value
 * written as a digest (`\u0000sha256:...`) meets the digests of long ones.
 */
export function indexedAsItself(value: string): boolean {
  return indexableString(value) === value && !value.startsWith(DIGEST_PREFIX);
}

/**
 * True when the plan's index entries decide the query alone, so every record the plan yields
 * matches and none need be decoded: no metadata operator but `eq`, and every indexed value and
 * metadata key indexed as itself. Time bounds and `include_drafts=false` are always exact.
 */
export function planIsExact(query: EventQuery): boolean {
  for (const values of Object.values(query.fields)) if (!values.every(indexedAsItself)) return false;
  return query.metadata.every(metadataIndexedExactly);
}

/** True when the index entries of an `eq` metadata condition decide it alone (`planIsExact`). */
export function metadataIndexedExactly(condition: MetadataCondition): boolean {
  if (condition.op !== 'eq' || !indexedAsItself(condition.key)) return false;
  const value = indexableMetadataValue(condition.value);
  return typeof value === 'number' || indexedAsItself(value);
}

/** The plan of a list over LMDB and over the head's own index, merged (store-view.ts `withHead`). */
function planCursor(store: StoreView, query: EventQuery, direction: Direction): CreatedAtCursor {
  const lo = query.startTime ?? -Infinity;
  const hi = query.endTime ?? Infinity;
  return store.withHead((source) => planIndexCursor(source, query, direction), lo, hi, direction, (record) => matchesQuery(record, query));
}

function planIndexCursor(source: IndexSource, query: EventQuery, direction: Direction): CreatedAtCursor {
  const cursor = planIndexedCursor(source, query, direction);
  if (query.includeDrafts) return cursor;
  // include_drafts=false is answered from the drafts index ([D, created_at]), without reading records.
  return new ProbeCursor(cursor, [(ts: number) => !source.has(DRAFTS_PREFIX, ts)], direction);
}

/** The plan of a list's conditions over one index source: the sparsest condition drives, the others probe. */
function planIndexedCursor(source: IndexSource, query: EventQuery, direction: Direction): CreatedAtCursor {
  const bounds = source.bounds();
  if (!bounds) return NO_VALUES;
  const lo = Math.max(query.startTime ?? -Infinity, bounds.oldest);
  const hi = Math.min(query.endTime ?? Infinity, bounds.newest);
  const conditions = indexedConditions(query);
  if (conditions.length === 0) return source.eventRange(lo, hi, direction);

  const cursorOf = (prefixes: IndexedCondition): CreatedAtCursor => {
    const cursors = prefixes.map((prefix) => source.keyRange(prefix, lo, hi, direction));
    return cursors.length === 1 ? cursors[0] : new UnionCursor(cursors, direction);
  };
  if (conditions.length === 1) return cursorOf(conditions[0]);
  const estimates = conditions.map((prefixes) => source.estimate(prefixes, lo, hi));
  const driver = estimates.indexOf(Math.min(...estimates));
  const probes = conditions
    .filter((_, i) => i !== driver)
    .map((prefixes) => (ts: number) => prefixes.some((prefix) => source.has(prefix, ts)));
  return new ProbeCursor(cursorOf(conditions[driver]), probes, direction);
}

const origin = (direction: Direction): number => (direction === 'asc' ? -Infinity : Infinity);
const step = (ts: number, direction: Direction): number => (direction === 'asc' ? ts + 1 : ts - 1);

/** How much one list request may read: it stops early, with a `next`, once either is spent. */
export interface ScanBudget {
  /** Records read, matching or not (at least one is always read). */
  records: number;
  /**
   * Stored bytes read: the record part of each record decoded for a filter check
   * (record-codec.ts `recordByteLength`) and the JSON of each event handed over.
   */
  bytes: number;
}

/** Where a scan puts the events it found; it decides when a page is full. */
export interface PageSink {
  /**
   * Takes the presented JSON of a matching event (UTF-8 bytes, docs/API.md "Routes": stored
   * event) and its created_at (µs), the JSON valid only during the call: copy what must be kept.
   * False when it did not fit; that event then starts the next page.
   */
  add(json: Uint8Array, createdAt: number): boolean;
}

/**
 * What a scan walks: the created_at values of a plan's cursor, each one's record checked with
 * `matches` unless the plan is exact (its index entries decide every condition).
 */
export interface ScanPlan {
  cursor: CreatedAtCursor;
  /** Every value the cursor yields matches: no record is decoded to check it. */
  exact: boolean;
  /** True when a decoded record passes every condition (asked only when not `exact`). */
  matches(record: EventRecord): boolean;
  /**
   * The same check of a record's bytes (record-codec.ts `recordBytes`, a copy moved to it) off the
   * HTTP thread (record-checker.ts), for a record of RECORD_CHECK_OFF_THREAD_BYTES or more: when
   * given, `scanPlan` pauses at such a record (`ScanProgress.away`) instead of decoding it.
   */
  checkAway?: (record: Uint8Array) => Promise<boolean>;
}

/**
 * What a scan did so far, across the slices of one request (scan-turns.ts `scanInTurns`):
 * `paused`, the last slice stopped at its deadline or (`away`) at a large record to check off
 * the HTTP thread; `decided`, that check's answer, taken when the next slice reads the record.
 */
export interface ScanProgress {
  taken: number;
  records: number;
  bytes: number;
  paused: boolean;
  away?: { ts: number; record: Uint8Array };
  decided?: { ts: number; matches: boolean };
}

export const newScanProgress = (): ScanProgress => ({ taken: 0, records: 0, bytes: 0, paused: false });

/** The plan of a list query, bounded at `bound` when given (its next record: `start_time` ascending, `end_time` descending). */
export function listPlan(store: StoreView, query: EventQuery, bound?: number): ScanPlan {
  const bounded = bound === undefined ? query : { ...query, [query.direction === 'asc' ? 'startTime' : 'endTime']: bound };
  return { cursor: planCursor(store, bounded, query.direction), exact: planIsExact(query), matches: (record) => matchesQuery(record, query) };
}

/**
 * Walks the records of `query` in created_at order and hands the stored JSON of up to
 * `query.limit` matching ones to `sink` (`scanPlan` over the list's plan), in one pass: for a
 * caller that bounds the page itself and yields between pages (the live stream's catch-up).
 * @returns as `scanPlan`
 * @throws as `scanPlan`
 */
export function scanEvents(store: StoreView, query: EventQuery, budget: ScanBudget, sink: PageSink): number | null {
  return scanPlan(store, listPlan(store, query), query.direction, query.limit, budget, sink);
}

/**
 * Walks the records `plan` yields, in `direction`, and hands the stored JSON of up to `limit`
 * matching ones to `sink`, reading each record once. A record is decoded only when the plan is
 * not exact, to check it, within `budget`, so a filter that matches little never reads the whole
 * store in one request: the page then ends early, possibly empty, with the next value set.
 * The plan's cursor is closed on return.
 * @param progress what the walk did in earlier slices (`scanInTurns`), updated
 * @param deadline `performance.now()` (ms) past which the slice stops, once it read a record,
 *   with `progress.paused` set; the value returned is then where the next slice starts
 * @returns the created_at (µs) of the first record not handed over (the page ended at the
 *   limit, when the sink was full, or when the budget was spent), or null when nothing follows;
 *   passed back as the inclusive bound (`start_time` ascending, `end_time` descending) it
 *   continues without skipping or repeating an event
 * @throws Error from the record codec for a record it cannot decode
 */
export function scanPlan(
  store: StoreView, plan: ScanPlan, direction: Direction, limit: number, budget: ScanBudget, sink: PageSink,
  progress: ScanProgress = newScanProgress(), deadline = Infinity,
): number | null {
  const { cursor, exact } = plan;
  let readNow = 0;
  try {
    for (let ts = cursor.seek(origin(direction)); ts !== undefined; ts = cursor.seek(step(ts, direction))) {
      if (readNow > 0 && performance.now() >= deadline) {
        progress.paused = true;
        return ts;
      }
      readNow++;
      // Once the page is full, `next` is the first matching record after it (null when none).
      const full = progress.taken === limit;
      if (full && exact) return ts;
      // Valid until the next LMDB read: checked, and copied by the sink, before the cursor moves.
      const value = store.eventValue(ts);
      if (!value) continue;
      if (progress.records > 0 && (progress.records >= budget.records || progress.bytes >= budget.bytes)) return ts;
      if (!exact && sendAway(plan, progress, ts, value)) return ts;
      progress.records++;
      if (!exact) {
        progress.bytes += recordByteLength(value);
        const decided = progress.decided?.ts === ts ? progress.decided.matches : undefined;
        if (!(decided ?? plan.matches(decodeRecord(value)))) continue;
        if (full) return ts;
      }
      const json = storedJson(value, store.present);
      if (!sink.add(json, ts)) return ts;
      progress.bytes += json.length;
      progress.taken++;
    }
    return null;
  } finally {
    cursor.close();
  }
}

/**
 * Records whose bytes (`recordBytes`) are at least this many are checked off the HTTP thread when
 * the plan can (`ScanPlan.checkAway`; record-checker.ts): 1 MiB of msgpack is 15,000 to 20,000
 * detections, some 10 ms to decode.
 */
export const RECORD_CHECK_OFF_THREAD_BYTES = 1024 * 1024;

/**
 * Pauses the scan at a large record to check off the thread (`ScanPlan.checkAway`): sets
 * `progress.away` to a copy of its record bytes and answers true, unless its check was decided.
 */
function sendAway(plan: ScanPlan, progress: ScanProgress, ts: number, value: Buffer): boolean {
  if (!plan.checkAway || progress.decided?.ts === ts) return false;
  const record = recordBytes(value);
  if (record.length < RECORD_CHECK_OFF_THREAD_BYTES) return false;
  progress.away = { ts, record: new Uint8Array(record) };
  progress.paused = true;
  return true;
}

/**
 * Counts the records a query matches, with the oldest and newest created_at among them, in one
 * pass. Cost is proportional to the matching index entries, not to the store.
 */
export function countEvents(store: StoreView, query: EventQuery): EventCounts {
  const counts = startCounts(store, query);
  if (counts.filtered === 0) countSlice(store, query, counts, Infinity);
  return counts;
}

/** The whole counts of an unfiltered query (from the counters), else the total with nothing counted yet. */
export function startCounts(store: StoreView, query: EventQuery): EventCounts {
  const total = store.counters().events;
  const unfiltered = Object.keys(query.fields).length === 0 && query.metadata.length === 0
    && query.includeDrafts && query.startTime === undefined && query.endTime === undefined;
  if (!unfiltered || total === 0) return { total, filtered: 0, oldest: null, newest: null };
  const { oldest, newest } = oldestAndNewest(store);
  return { total, filtered: total, oldest, newest };
}

/**
 * Counts the matching records of `query` (ascending) into `counts` until `deadline`
 * (`performance.now()`, ms; one record at least).
 * @returns the created_at (µs) to go on from, or undefined when every record was counted
 */
export function countSlice(store: StoreView, query: EventQuery, counts: EventCounts, deadline: number): number | undefined {
  const needsRecords = !planIsExact(query);
  const cursor = planCursor(store, query, 'asc');
  try {
    for (let ts = cursor.seek(-Infinity), seen = 0; ts !== undefined; ts = cursor.seek(ts + 1), seen++) {
      if (seen > 0 && performance.now() >= deadline) return ts;
      if (needsRecords) {
        const record = store.getRecord(ts);
        if (!record || !matchesQuery(record, query)) continue;
      }
      counts.filtered++;
      counts.oldest ??= ts;
      counts.newest = ts;
    }
    return undefined;
  } finally {
    cursor.close();
  }
}

/**
 * created_at of the oldest and of the newest record, each null when the store is empty; the
 * head's creates (head.ts) are newer than every record checkpointed.
 */
export function oldestAndNewest(store: StoreView): { oldest: number | null; newest: number | null } {
  const { stored } = store[storeHandles];
  const [oldest] = stored.createdAts({ limit: 1 });
  const [newest] = stored.createdAts({ limit: 1, reverse: true });
  const head = store.headBounds();
  return { oldest: oldest ?? head?.oldest ?? null, newest: head?.newest ?? newest ?? null };
}
