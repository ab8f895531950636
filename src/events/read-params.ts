/**
 * The query parameters of the read routes, each declared once (docs/API.md, "Query
 * parameters"): its name, its value's type, bounds and default, and what it does. Each route's
 * allowlist (query-params.ts), the parsing of bounds, defaults and choices (list-query.ts) and
 * the OpenAPI document (src/http/read-param-docs.ts) are derived from here, and docs/API.md is
 * checked against it (test/query-params.test.ts).
 *
 * Adding a parameter: its entry in READ_PARAMS (an exact-match filter on an indexed field: in
 * FIELD_FILTERS, which the list and the stream then take and parse), its route in ROUTE_PARAMS,
 * docs/API.md, and the tests.
 */
import type { IndexedField } from '../store/index.js';
import { EVENT_SCHEMAS } from './types.js';

/** A parameter's value, as OpenAPI's schema object says it. */
export interface ParamSchema {
  type: 'string' | 'integer' | 'boolean' | 'array';
  format?: 'date-time';
  minimum?: number;
  maximum?: number;
  default?: string | number | boolean;
  enum?: readonly string[];
  items?: { type: 'string' };
}

/** One query parameter. */
export interface ReadParam {
  schema: ParamSchema;
  /** What it does, for /openapi.json. */
  description: string;
  /** Given more than once, every value counts (AND). */
  repeatable?: boolean;
  /** Its routes answer 400 without it. */
  required?: boolean;
}

/**
 * The list's exact-match filters on an indexed field (store index-keys.ts): the field, its
 * parameter, and its comma-separated twin (any of), if it has one.
 */
export const FIELD_FILTERS: readonly { field: IndexedField; single: string; multi?: string; description: string }[] = [
  { field: 'device_id', single: 'device_id', multi: 'device_ids', description: 'Exact match.' },
  { field: 'event_schema', single: 'event_schema', multi: 'event_schemas', description: `Exact match: one of ${EVENT_SCHEMAS.join(', ')}.` },
  { field: 'workflow_id', single: 'workflow_id', multi: 'workflow_ids', description: 'Exact match.' },
  { field: 'external_id', single: 'external_id', multi: 'external_ids', description: 'Exact match on event_data.external_id.' },
  { field: 'related_event_id', single: 'related_event_id', description: 'Exact match on event_data.related_event_id (operator_feedback events rating that event).' },
];

const STRING: ParamSchema = { type: 'string' };
const TIME: ParamSchema = { type: 'string', format: 'date-time' };

/** Every field filter's parameters, its twin after it. */
const fieldParams = (): [string, ReadParam][] => FIELD_FILTERS.flatMap(({ single, multi, description }) => [
  [single, { schema: STRING, description }],
  ...(multi === undefined ? [] : [[multi, { schema: STRING, description: `Comma-separated ${single} values (any of).` }] as [string, ReadParam]]),
]);

/** Every query parameter of the read routes, by name. */
export const READ_PARAMS: Readonly<Record<string, ReadParam>> = {
  limit: { schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 }, description: 'Events per page, 1..1000; out of range answers 422.' },
  ...Object.fromEntries(fieldParams()),
  start_time: { schema: TIME, description: 'ISO 8601; lower bound on created_at. Malformed answers 400.' },
  end_time: { schema: TIME, description: 'ISO 8601; upper bound on created_at. Malformed answers 400.' },
  include_drafts: { schema: { type: 'boolean', default: true }, description: 'false returns only finalized events.' },
  sort_direction: { schema: { type: 'string', enum: ['asc', 'desc'], default: 'desc' }, description: 'Order by created_at; anything else answers 400.' },
  metadata_filter: {
    schema: { type: 'array', items: { type: 'string' } },
    repeatable: true,
    description: 'custom_metadata filter, repeatable (AND): key:value or key:op:value, op one of eq, ne, gt, lt, gte, lte. Numbers compare '
      + 'numerically; a filter matches only events carrying the key (ne included). Unparseable answers 400.',
  },
  since: { schema: TIME, description: 'Resume after this created_at (wins over Last-Event-ID). Malformed answers 400.' },
  api_key: { schema: STRING, description: 'The key, for an EventSource, which cannot send X-API-Key (docs/API.md, "Live stream").' },
  q: { schema: STRING, required: true, description: 'A query of the event search (docs/API.md, "Event search"), e.g. class:person>=2 device:cam-1 -has:video.' },
  cursor: { schema: STRING, description: 'next_cursor of the previous page.' },
  format: { schema: { type: 'string', enum: ['coco', 'yolo', 'labelstudio'], default: 'coco' }, description: 'Dataset format.' },
};

const FILTERS = FIELD_FILTERS.flatMap(({ single, multi }) => (multi === undefined ? [single] : [single, multi]));

/** The parameters each read route takes, in the order /openapi.json lists them. */
export const ROUTE_PARAMS = {
  list: ['limit', ...FILTERS, 'start_time', 'end_time', 'include_drafts', 'sort_direction', 'metadata_filter'],
  latest: ['limit', 'include_drafts'],
  count: ['device_id', 'event_schema', 'workflow_id'],
  stream: [...FILTERS, 'include_drafts', 'metadata_filter', 'since', 'api_key'],
  search: ['q', 'limit', 'cursor'],
  export: ['q', 'format'],
} as const satisfies Record<string, readonly string[]>;

/** A read route, by the name ROUTE_PARAMS gives it. */
export type ReadRoute = keyof typeof ROUTE_PARAMS;

/** The default of parameter `name` (READ_PARAMS). */
export function paramDefault<T extends string | number | boolean>(name: string): T {
  return READ_PARAMS[name].schema.default as T;
}
