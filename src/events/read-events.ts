/**
 * The read routes of spec B: list (`GET /v2/events`), latest (`GET /v2/events/latest/query`),
 * one event (`GET /v2/events/{event_id}`) and count statistics (`GET /events/count/stats`).
 */
import { AppError } from '../errors.js';
import { countEvents, listEvents } from '../store/event-query.js';
import type { EventStore } from '../store/event-store.js';
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

function page(store: EventStore, query: ReturnType<typeof parseListQuery>): EventListResponse {
  const { records, next } = listEvents(store, query);
  return { events: records.map(presentEvent), count: records.length, next_timestamp: formatMicrosOrNull(next) };
}

/**
 * Lists events with the filters of the query string.
 * @throws AppError invalid_query (400, E5), validation_failed (422, E6)
 */
export function listEventsResponse(store: EventStore, params: URLSearchParams): EventListResponse {
  return page(store, parseListQuery(params));
}

/** The most recent events first (`limit`, `include_drafts`). @throws AppError (422, E6) */
export function latestEventsResponse(store: EventStore, params: URLSearchParams): EventListResponse {
  return page(store, parseLatestQuery(params));
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
