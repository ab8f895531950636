/**
 * The read routes (docs/API.md, "Routes"): list (`GET /v2/events`), latest
 * (`GET /v2/events/latest/query`), search (`GET /v2/events/search`), one event
 * (`GET /v2/events/{event_id}`) and count statistics (`GET /events/count/stats`). Events are
 * answered with their stored JSON (record-codec.ts). A page or a count is read in slices of a few
 * milliseconds with a turn of the event loop between, and a large record a filter checks is
 * checked on a worker meanwhile (store/read/scan-turns.ts, record-checker.ts), so no read holds
 * the HTTP thread for long (docs/API.md, "Requests share the store").
 */
import { AppError } from '../errors.js';
import { countEventsInTurns, type EventQuery, type EventStore, formatMicrosOrNull, type PageSink, planSearch, scanEventsInTurns, scanInTurns } from '../store/index.js';
import { parseCountQuery, parseLatestQuery, parseLimit, parseListQuery } from './list-query.js';
import { compileEventQuery } from './search-conditions.js';
import { parseSearchCursor, requiredQuery, searchCursor } from './search-cursor.js';
import { assertKnownParams } from './query-params.js';

/** Count statistics (schemas/responses/count-stats.json). */
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
const COMMA = 0x2c;
/**
 * Bytes kept for the tail `],"count":N,"next_timestamp":"<ISO µs>"}`: 62 at most (a count of
 * four digits, a 27-character timestamp); `"next_cursor"` with its cursor is shorter.
 */
const TAIL_RESERVE = 64;
/** First size of a page's buffer (bytes); it doubles as events are added. */
const INITIAL_PAGE_BYTES = 64 * 1024;

/**
 * Builds a list body in one growing buffer from each event's stored JSON (one copy per event),
 * refusing an event that would take the body past the limit: every event's size is known exactly
 * before it is added.
 */
class JsonPage implements PageSink {
  count = 0;
  private buffer: Buffer;
  private length = 0;

  constructor(private readonly maxBytes: number) {
    this.buffer = Buffer.allocUnsafe(INITIAL_PAGE_BYTES);
    this.append(OPEN);
  }

  add(json: Uint8Array): boolean {
    const added = json.length + (this.count > 0 ? 1 : 0);
    if (this.count > 0 && this.length + added + TAIL_RESERVE > this.maxBytes) return false;
    this.reserve(added);
    if (this.count > 0) this.buffer[this.length++] = COMMA;
    this.append(json);
    this.count++;
    return true;
  }

  /**
   * The whole body, `{"events": [...], "count": N, "<nextName>": next}`.
   * @param next the continuation, a string of at most 40 characters, or null
   */
  finish(nextName: 'next_timestamp' | 'next_cursor', next: string | null): Buffer {
    this.append(Buffer.from(`],"count":${this.count},"${nextName}":${JSON.stringify(next)}}`));
    return this.buffer.subarray(0, this.length);
  }

  private append(bytes: Uint8Array): void {
    this.reserve(bytes.length);
    this.buffer.set(bytes, this.length);
    this.length += bytes.length;
  }

  private reserve(bytes: number): void {
    if (this.length + bytes <= this.buffer.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.length + bytes, this.buffer.length * 2));
    this.buffer.copy(grown, 0, 0, this.length);
    this.buffer = grown;
  }
}

/**
 * One page of `query` as the JSON body of an event list (schemas/responses/event-list.json;
 * `next_timestamp` null when nothing follows), concatenated from the events' stored JSON without
 * ever holding the page as one string.
 */
async function page(store: EventStore, query: EventQuery, limits: ListLimits): Promise<Buffer> {
  const sink = new JsonPage(limits.maxResponseBytes);
  const checkAway = (record: Uint8Array) => store.records.check(record, { kind: 'query', query });
  const next = await scanEventsInTurns(store, query, { records: limits.maxScanRecords, bytes: limits.maxResponseBytes }, sink, checkAway);
  return sink.finish('next_timestamp', formatMicrosOrNull(next));
}

/**
 * Lists events with the filters of the query string, as the JSON body of an event list (schemas/responses/event-list.json).
 * The page holds up to `limit` events, fewer (at least one, when any matches) when more would
 * take the body past `limits.maxResponseBytes`, and fewer still, possibly none, when a filter no
 * index covers used up the request's read budget; in every such case `next_timestamp` is set
 * and continues the listing (as `end_time` descending, `start_time` ascending).
 * @returns the body, UTF-8 JSON (bytes)
 * @throws AppError invalid_query (400), validation_failed (422)
 */
export function listEventsBody(store: EventStore, params: URLSearchParams, limits: ListLimits): Promise<Buffer> {
  return page(store, parseListQuery(params), limits);
}

/**
 * The most recent events first (`limit`, `include_drafts`), as the JSON body of an event list
 * (schemas/responses/event-list.json), bounded as `listEventsBody`; `next_timestamp` continues
 * with `GET /v2/events?end_time=<next_timestamp>` and the same `limit` and `include_drafts`.
 * @returns the body, UTF-8 JSON (bytes)
 * @throws AppError validation_failed (422)
 */
export function latestEventsBody(store: EventStore, params: URLSearchParams, limits: ListLimits): Promise<Buffer> {
  return page(store, parseLatestQuery(params), limits);
}

/**
 * One event by id, as the JSON body of a stored event (docs/API.md, "Routes"): its stored bytes.
 * @returns the body, UTF-8 JSON (bytes)
 * @throws AppError event_not_found (404)
 */
export function getEventBody(store: EventStore, id: string): Buffer {
  const json = store.getEventJson(id);
  if (!json) throw new AppError('event_not_found', `Event ${id} not found`);
  return json;
}

/**
 * Events matching a query of the query language, newest first (docs/API.md, "Event search"), as
 * the JSON body `{"events": [...], "count": n, "next_cursor": string | null}`, bounded as
 * `listEventsBody`; `next_cursor` passed back as `cursor` continues without skipping or repeating.
 * @param params `q`, `limit` (1..1000, default 100), `cursor`
 * @returns the body, UTF-8 JSON (bytes)
 * @throws AppError invalid_search_query (400) for a query that does not parse, invalid_query
 *   (400) for a malformed cursor or a parameter the route does not take (query-params.ts), validation_failed (422) for `limit` or a missing `q`
 */
export async function searchEventsBody(store: EventStore, params: URLSearchParams, limits: ListLimits): Promise<Buffer> {
  assertKnownParams(params, 'search');
  const condition = compileEventQuery(requiredQuery(params));
  const limit = parseLimit(params);
  const cursor = parseSearchCursor(params.get('cursor'));
  const checkAway = (record: Uint8Array) => store.records.check(record, { kind: 'search', condition });
  const plan = (bound: number | undefined) => ({
    ...planSearch(store, condition, { before: bound ?? cursor, searchIndexReady: store.searchIndexReady, direction: 'desc' }),
    checkAway,
  });
  const sink = new JsonPage(limits.maxResponseBytes);
  const next = await scanInTurns(store, plan, 'desc', limit, { records: limits.maxScanRecords, bytes: limits.maxResponseBytes }, sink);
  return sink.finish('next_cursor', next === null ? null : searchCursor(next));
}

/** Total and filtered counts with the oldest and newest created_at of the filtered events. */
export async function countStatsResponse(store: EventStore, params: URLSearchParams): Promise<CountStatsResponse> {
  const counts = await countEventsInTurns(store, parseCountQuery(params));
  return {
    total_count: counts.total,
    filtered_count: counts.filtered,
    oldest_timestamp: formatMicrosOrNull(counts.oldest),
    newest_timestamp: formatMicrosOrNull(counts.newest),
  };
}
