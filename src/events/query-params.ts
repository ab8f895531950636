/**
 * The check that a read route takes each query parameter given (docs/API.md, "Query
 * parameters"; each route's parameters are read-params.ts's). A name the route does not take
 * answers 400 naming it, with the nearest it does take: a misspelled filter (`devce_id`) must not
 * widen the answer to every event. Create bodies stay liberal: their unknown keys are ignored
 * (docs/API.md, "Routes").
 */
import { nearestName } from '../query-language/nearest-name.js';
import { AppError } from '../errors.js';
import { ROUTE_PARAMS, type ReadRoute } from './read-params.js';

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
