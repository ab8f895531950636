/**
 * Query-string parsing of the list, latest, count and stream routes (docs/API.md, "Query
 * parameters"). Errors: `invalid_query` (400) for a parameter the route does not take, an `event_schema` that
 * is none of the five, a malformed timestamp, `sort_direction` or `metadata_filter`; `validation_failed` (422)
 * for `limit` and booleans.
 */
import { AppError, validationError } from '../errors.js';
import { type EventQuery, type MetadataCondition, type MetadataOperator, parseIsoMicros } from '../store/index.js';
import { assertKnownParams } from './query-params.js';
import { FIELD_FILTERS, paramDefault, READ_PARAMS } from './read-params.js';
import { expectedTimestamp } from './timestamp-hint.js';
import { EVENT_SCHEMAS } from './types.js';

const OPERATORS = new Set<MetadataOperator>(['eq', 'ne', 'gt', 'lt', 'gte', 'lte']);
const LIMIT = READ_PARAMS.limit.schema;
const DIRECTIONS = READ_PARAMS.sort_direction.schema.enum!;
const isDirection = (value: string): value is EventQuery['direction'] => DIRECTIONS.includes(value);

/**
 * Middle parts of `key:X:value` that are meant as an operator but are none: other languages'
 * spellings (`ge`, `neq`, `>=`) and the valid ones in other case (`GT`). Any other middle part
 * belongs to the value (`time:10:30` is `time` eq `10:30`).
 */
const OPERATOR_LOOKALIKES = /^(?:eq|ne|gt|lt|gte|lte|ge|le|neq|nq|geq|leq|gteq|lteq|=|==|!=|<>|>|<|>=|<=)$/i;

/**
 * Parses one `metadata_filter`: `key:value` (eq) or `key:op:value` (docs/API.md, "Query
 * parameters").
 * @throws AppError invalid_query (400) when it has no key or no value, or when its middle part
 *   looks like an operator but is not one of eq, ne, gt, lt, gte, lte (`temperature:ge:30`)
 */
export function parseMetadataFilter(text: string): MetadataCondition {
  const first = text.indexOf(':');
  if (first <= 0) throw new AppError('invalid_query', `Invalid metadata_filter '${text}': expected key:value or key:op:value`);
  const key = text.slice(0, first);
  const rest = text.slice(first + 1);
  const second = rest.indexOf(':');
  const op = second > 0 ? rest.slice(0, second) : '';
  if (!OPERATORS.has(op as MetadataOperator) && OPERATOR_LOOKALIKES.test(op)) {
    throw new AppError('invalid_query', `Invalid metadata_filter '${text}': unknown operator '${op}'; expected one of ${[...OPERATORS].join(', ')}`);
  }
  const condition: MetadataCondition = OPERATORS.has(op as MetadataOperator)
    ? { key, op: op as MetadataOperator, value: rest.slice(second + 1) }
    : { key, op: 'eq', value: rest };
  if (condition.value === '') throw new AppError('invalid_query', `Invalid metadata_filter '${text}': empty value`);
  return condition;
}

/**
 * `limit`: within READ_PARAMS' bounds (1..1000), its default when absent (100; docs/API.md,
 * "Query parameters").
 * @throws AppError validation_failed (422) otherwise
 */
export function parseLimit(params: URLSearchParams): number {
  const raw = params.get('limit');
  if (raw === null) return paramDefault<number>('limit');
  // Decimal digits only: Number() would also take 0x10, 1e3, ' 5' and '5.0'.
  const limit = /^[0-9]{1,4}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isInteger(limit) || limit < LIMIT.minimum! || limit > LIMIT.maximum!) {
    throw validationError(['query', 'limit'], `limit must be an integer from ${LIMIT.minimum} to ${LIMIT.maximum}`, 'value_error.number');
  }
  return limit;
}

/** A boolean parameter: true, 1, yes, on or their opposites; its READ_PARAMS default when absent. */
function parseBoolean(params: URLSearchParams, name: string): boolean {
  const raw = params.get(name);
  if (raw === null) return paramDefault<boolean>(name);
  const value = raw.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(value)) return true;
  if (['false', '0', 'no', 'off'].includes(value)) return false;
  throw validationError(['query', name], 'value could not be parsed to a boolean', 'type_error.bool');
}

function parseTime(params: URLSearchParams, name: string): number | undefined {
  const raw = params.get(name);
  if (raw === null) return undefined;
  const micros = parseIsoMicros(raw);
  if (micros === undefined) throw new AppError('invalid_query', `Invalid ${name} '${raw}': ${expectedTimestamp(raw)}`);
  return micros;
}

/**
 * Refuses an `event_schema` (or one of `event_schemas`) that is none of the five: it could
 * match nothing, and a typo must not look like an empty store (the search's `schema:` likewise).
 * @throws AppError invalid_query (400)
 */
function assertKnownSchemas(name: string, values: string[]): void {
  const unknown = values.find((value) => !(EVENT_SCHEMAS as readonly string[]).includes(value));
  if (unknown !== undefined) throw new AppError('invalid_query', `Invalid ${name} '${unknown.slice(0, 64)}': expected one of ${EVENT_SCHEMAS.join(', ')}`);
}

function parseFields(params: URLSearchParams): EventQuery['fields'] {
  const fields: EventQuery['fields'] = {};
  for (const { field, single, multi } of FIELD_FILTERS) {
    const one = params.get(single);
    const many = multi === undefined ? null : params.get(multi);
    const listed = many === null ? undefined : many.split(',').map((v) => v.trim()).filter((v) => v !== '');
    if (field === 'event_schema') {
      if (one !== null) assertKnownSchemas(single, [one]);
      if (listed !== undefined) assertKnownSchemas(multi!, listed);
    }
    if (one !== null) fields[field] = listed === undefined || listed.includes(one) ? [one] : [];
    else if (listed !== undefined && listed.length > 0) fields[field] = listed;
  }
  return fields;
}

/**
 * Parses the query of `GET /v2/events`.
 * @throws AppError invalid_query (400), validation_failed (422)
 */
export function parseListQuery(params: URLSearchParams): EventQuery {
  assertKnownParams(params, 'list');
  const direction = params.get('sort_direction') ?? paramDefault<string>('sort_direction');
  if (!isDirection(direction)) throw new AppError('invalid_query', `Invalid sort_direction '${direction}': expected ${DIRECTIONS.join(' or ')}`);
  return {
    fields: parseFields(params),
    metadata: params.getAll('metadata_filter').map(parseMetadataFilter),
    startTime: parseTime(params, 'start_time'),
    endTime: parseTime(params, 'end_time'),
    includeDrafts: parseBoolean(params, 'include_drafts'),
    direction,
    limit: parseLimit(params),
  };
}

/**
 * Parses the query of `GET /v2/events/stream` (docs/API.md, "Live stream"): the list's filters
 * (`limit`, order and time bounds do not apply) and the resume point, `since` or else the
 * `Last-Event-ID` header (an event's `created_at`).
 * @param lastEventId the `Last-Event-ID` header ('' when absent)
 * @returns the filter and the resume point (µs; undefined: live from now)
 * @throws AppError invalid_query (400) for a malformed filter or resume point, validation_failed (422)
 */
export function parseStreamQuery(params: URLSearchParams, lastEventId: string): { filter: EventQuery; since: number | undefined } {
  assertKnownParams(params, 'stream');
  const filter: EventQuery = {
    fields: parseFields(params),
    metadata: params.getAll('metadata_filter').map(parseMetadataFilter),
    startTime: undefined,
    endTime: undefined,
    includeDrafts: parseBoolean(params, 'include_drafts'),
    direction: 'asc',
    limit: 0,
  };
  const since = params.has('since') ? parseTime(params, 'since') : lastEventId === '' ? undefined : parseIsoMicros(lastEventId);
  if (lastEventId !== '' && !params.has('since') && since === undefined) {
    throw new AppError('invalid_query', `Invalid Last-Event-ID '${lastEventId}': expected an event's created_at`);
  }
  return { filter, since };
}

/** Parses the query of `GET /v2/events/latest/query`: `limit` and `include_drafts`, newest first. */
export function parseLatestQuery(params: URLSearchParams): EventQuery {
  assertKnownParams(params, 'latest');
  return {
    fields: {},
    metadata: [],
    startTime: undefined,
    endTime: undefined,
    includeDrafts: parseBoolean(params, 'include_drafts'),
    direction: 'desc',
    limit: parseLimit(params),
  };
}

/** Parses the query of `GET /events/count/stats`: `device_id`, `event_schema`, `workflow_id`. */
export function parseCountQuery(params: URLSearchParams): EventQuery {
  assertKnownParams(params, 'count');
  return {
    fields: parseFields(params), // the route's allowlist holds three of the filters
    metadata: [],
    startTime: undefined,
    endTime: undefined,
    includeDrafts: true,
    direction: 'asc',
    limit: 0,
  };
}
