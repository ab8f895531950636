/**
 * The read routes of spec B: list (`GET /v2/events`), latest (`GET /v2/events/latest/query`),
 * one event (`GET /v2/events/{event_id}`) and count statistics (`GET /events/count/stats`).
 */
import { AppError } from '../errors.js';
import { countEvents, scanEvents, type EventQuery, type PageSink } from '../store/event-query.js';
import type { EventStore } from '../store/event-store.js';
import type { EventRecord } from '../store/record-codec.js';
import { formatMicrosOrNull } from '../store/timestamps.js';
import { parseCountQuery, parseLatestQuery, parseListQuery } from './list-query.js';
import { presentEvent } from './present.js';
import type { StoredEvent } from './types.js';

/** Event list (spec B, "Other response shapes"); `next_timestamp` null when nothing follows. */
export interface EventListResponse {
  events: StoredEvent[];
  count: number;
  next_timestamp: string | null;
}

/** Count statistics (spec B, "Other response shapes"). */
export interface CountStatsResponse {
  total_count: number;
  filtered_count: number;
  oldest_timestamp: string | null;
  newest_timestamp: string | null;
}

/** How large a list page may grow and how much one list request may read. */
export interface ListLimits {
  /** Bytes of the JSON body; the page stops adding events before passing it (MAX_LIST_RESPONSE_BYTES). */
  maxResponseBytes: number;
  /** Records read per request, matching or not (MAX_LIST_SCAN_RECORDS). */
  maxScanRecords: number;
}

const OPEN = Buffer.from('{"events":[');
const COMMA = Buffer.from(',');
/**
 * Bytes kept for the tail `],"count":N,"next_timestamp":"<ISO µs>"}`: 62 at most (a count of
 * four digits, a 27-character timestamp).
 */
const TAIL_RESERVE = 64;
/**
 * A stored record's JSON is at least a third of its stored size: msgpack never spends more than
 * three times the bytes of the JSON text of a value (the worst is a float such as 0.5, 9 bytes
 * against 3), and the presented event adds names and ISO timestamps. So a record whose stored
 * size / 3 cannot fit ends the page without being decoded; were the bound ever wrong, the page
 * would only end one event early, and that event opens the next page.
 */
const MIN_JSON_PER_STORED_BYTE = 1 / 3;

/** Collects presented events as bounded JSON chunks, refusing one that would pass the limit. */
class JsonPage implements PageSink {
  readonly chunks: Buffer[] = [OPEN];
  count = 0;
  private bytes = OPEN.length + TAIL_RESERVE;

  constructor(private readonly maxBytes: number) {}

  mayFit(storedBytes: number): boolean {
    return this.bytes + 1 + Math.ceil(storedBytes * MIN_JSON_PER_STORED_BYTE) <= this.maxBytes;
  }

  add(record: EventRecord): boolean {
    const json = Buffer.from(JSON.stringify(presentEvent(record)));
    const added = json.length + (this.count > 0 ? COMMA.length : 0);
    if (this.count > 0 && this.bytes + added > this.maxBytes) return false;
    if (this.count > 0) this.chunks.push(COMMA);
    this.chunks.push(json);
    this.bytes += added;
    this.count++;
    return true;
  }

  /** The whole body, `{"events": [...], "count": N, "next_timestamp": ...}`. */
  finish(next: number | null): Buffer {
    const tail = `],"count":${this.count},"next_timestamp":${JSON.stringify(formatMicrosOrNull(next))}}`;
    return Buffer.concat([...this.chunks, Buffer.from(tail)]);
  }
}

/**
 * One page of `query` as the JSON body of an event list (`EventListResponse`), built from one
 * chunk per event without ever holding the page as one string or its records decoded at once.
 */
function page(store: EventStore, query: EventQuery, limits: ListLimits): Buffer {
  const sink = new JsonPage(limits.maxResponseBytes);
  const next = scanEvents(store, query, { records: limits.maxScanRecords, bytes: limits.maxResponseBytes }, sink);
  return sink.finish(next);
}

/**
 * Lists events with the filters of the query string, as the JSON body of an `EventListResponse`.
 * The page holds up to `limit` events, fewer (at least one, when any matches) when more would
 * take the body past `limits.maxResponseBytes`, and fewer still, possibly none, when a filter no
 * index covers used up the request's read budget; in every such case `next_timestamp` is set
 * and continues the listing (as `end_time` descending, `start_time` ascending).
 * @returns the body, UTF-8 JSON (bytes)
 * @throws AppError invalid_query (400, E5), validation_failed (422, E6)
 */
export function listEventsBody(store: EventStore, params: URLSearchParams, limits: ListLimits): Buffer {
  return page(store, parseListQuery(params), limits);
}

/**
 * The most recent events first (`limit`, `include_drafts`), as the JSON body of an
 * `EventListResponse`, bounded as `listEventsBody`; `next_timestamp` continues with
 * `GET /v2/events?end_time=<next_timestamp>` and the same `limit` and `include_drafts`.
 * @returns the body, UTF-8 JSON (bytes)
 * @throws AppError validation_failed (422, E6)
 */
export function latestEventsBody(store: EventStore, params: URLSearchParams, limits: ListLimits): Buffer {
  return page(store, parseLatestQuery(params), limits);
}

/** One event by id. @throws AppError event_not_found (404) */
export function getEventResponse(store: EventStore, id: string): StoredEvent {
  const record = store.getEvent(id);
  if (!record) throw new AppError('event_not_found', `Event ${id} not found`);
  return presentEvent(record);
}

/** Total and filtered counts with the oldest and newest created_at of the filtered events. */
export function countStatsResponse(store: EventStore, params: URLSearchParams): CountStatsResponse {
  const counts = countEvents(store, parseCountQuery(params));
  return {
    total_count: counts.total,
    filtered_count: counts.filtered,
    oldest_timestamp: formatMicrosOrNull(counts.oldest),
    newest_timestamp: formatMicrosOrNull(counts.newest),
  };
}
