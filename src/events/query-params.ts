/**
 * The query parameters each read route takes (docs/API.md, "Query parameters"). A name the route
 * does not take answers 400 naming it, with the nearest it does take: a misspelled filter
 * (`devce_id`) must not widen the answer to every event. Create bodies stay liberal: their
 * unknown keys are ignored (docs/API.md, "Routes").
 */
import { nearestName } from '../query-language/nearest-name.js';
import { AppError } from '../errors.js';

/** The list's exact-match filters and their comma-separated twins. */
const FIELD_FILTERS = [
  'device_id', 'device_ids', 'event_schema', 'event_schemas', 'workflow_id', 'workflow_ids',
  'external_id', 'external_ids', 'related_event_id',
] as const;

/** Parameters by route. `api_key` is the key on routes that take it in the query. */
export const ROUTE_PARAMS = {
  list: [...FIELD_FILTERS, 'metadata_filter', 'start_time', 'end_time', 'include_drafts', 'sort_direction', 'limit'],
  latest: ['limit', 'include_drafts'],
  count: ['device_id', 'event_schema', 'workflow_id'],
  stream: [...FIELD_FILTERS, 'metadata_filter', 'include_drafts', 'since', 'api_key'],
  search: ['q', 'limit', 'cursor'],
  export: ['q', 'format'],
} as const satisfies Record<string, readonly string[]>;

export type ReadRoute = keyof typeof ROUTE_PARAMS;

/**
 * Refuses a parameter `route` does not take.
 * @throws AppError invalid_query (400) naming the first unknown parameter, the known name it was
 *   likely meant as (nearest-name.ts: `sort_direction` for `sort`, `device_id` for `devce_id`),
 *   and the names the route takes
 */
export function assertKnownParams(params: URLSearchParams, route: ReadRoute): void {
  const known: readonly string[] = ROUTE_PARAMS[route];
  for (const name of params.keys()) {
    if (known.includes(name)) continue;
    const nearest = nearestName(name, known);
    const hint = nearest ? `; did you mean ${nearest}?` : '.';
    throw new AppError('invalid_query', `Unknown query parameter '${name.slice(0, 64)}'${hint} This route takes: ${known.join(', ')}`);
  }
}
