/**
 * From a query over events (src/query-language/event-filters.ts) to the store's search conditions
 * (src/store/read/event-search.ts), by the rules of docs/API.md, "Event search": field names, days as
 * UTC created_at ranges, `min-confidence` bound to the classes beside it. Free text is refused:
 * semantic search is the hosted API's.
 */
import { AppError } from '../errors.js';
import { QuerySyntaxError } from '../query-language/query-syntax-error.js';
import { parseEventQuery, type EventFieldKey, type EventFilterNode, type EventQueryNode } from '../query-language/event-filters.js';
import type { Comparison } from '../query-language/query-ast.js';
import type { IndexedField, MetadataOperator, SearchCondition } from '../store/index.js';
import { EVENT_SCHEMAS } from './types.js';

const FIELDS: Record<EventFieldKey, IndexedField> = {
  device: 'device_id',
  stream: 'stream_id',
  schema: 'event_schema',
  workflow: 'workflow_id',
  solution: 'solution',
  'external-id': 'external_id',
};

const METADATA_OPERATORS: Record<Comparison, MetadataOperator> = { '=': 'eq', '>': 'gt', '>=': 'gte', '<': 'lt', '<=': 'lte' };

const MICROS_PER_DAY = 86_400_000_000;

/**
 * Parses and compiles a query over events.
 * @param q the query text (docs/API.md, "Event search")
 * @returns the condition tree
 * @throws AppError invalid_search_query (400) whose detail gives the column of the error, a
 *   caret under it and the reason (the same text `edge-events events` prints), its cause the
 *   QuerySyntaxError
 */
export function compileEventQuery(q: string): SearchCondition {
  try {
    return eventSearchConditions(q);
  } catch (err) {
    if (err instanceof QuerySyntaxError) throw new AppError('invalid_search_query', err.message, { cause: err });
    throw err;
  }
}

/**
 * Parses and compiles a query over events, for a client that checks a query before sending it.
 * @throws QuerySyntaxError pointing at the error (as `compileEventQuery` words it)
 */
export function eventSearchConditions(q: string): SearchCondition {
  return compile(q, parseEventQuery(q));
}

function compile(query: string, node: EventQueryNode): SearchCondition {
  switch (node.type) {
    case 'all':
      return { kind: 'all' };
    case 'text':
      throw new QuerySyntaxError(query, node.span.start,
        `Free text ("${node.text}") asks for a semantic search, which needs the hosted API (edge-events search); `
        + 'stored events take filters such as class:person or device:cam-1');
    case 'not':
      return { kind: 'not', condition: compile(query, node.child) };
    case 'or':
      return { kind: 'or', any: node.children.map((child) => compile(query, child)) };
    case 'and':
      return compileAnd(query, node.children);
    default:
      return compileFilter(query, node, undefined);
  }
}

/**
 * An AND: its `min-confidence` filters bind to the `class` filters beside them (the highest one
 * wins); with no class beside them they ask for some prediction of any class at that level.
 */
function compileAnd(query: string, children: EventQueryNode[]): SearchCondition {
  const isConfidence = (child: EventQueryNode) => child.type === 'filter' && child.key === 'min-confidence';
  const confidences = children.flatMap((child) => (child.type === 'filter' && child.key === 'min-confidence' ? [child.value] : []));
  const hasClass = children.some((child) => child.type === 'filter' && child.key === 'class');
  const minConfidence = confidences.length > 0 && hasClass ? Math.max(...confidences) : undefined;
  const all = children
    .filter((child) => !(isConfidence(child) && hasClass))
    .map((child) => (child.type === 'filter' ? compileFilter(query, child, minConfidence) : compile(query, child)));
  return { kind: 'and', all };
}

function compileFilter(query: string, filter: EventFilterNode, minConfidence: number | undefined): SearchCondition {
  switch (filter.key) {
    case 'class':
      return { kind: 'class', className: filter.className, ...(filter.count && { count: filter.count }), ...(minConfidence !== undefined && { minConfidence }) };
    case 'min-confidence':
      return { kind: 'confidence', min: filter.value };
    case 'meta':
      return { kind: 'metadata', condition: { key: filter.name, op: METADATA_OPERATORS[filter.op], value: filter.value } };
    case 'date':
      return { kind: 'time', ...dayRange(filter.op, filter.date) };
    case 'min-annotations':
      return { kind: 'annotations', min: filter.value };
    case 'max-annotations':
      return { kind: 'annotations', max: filter.value };
    case 'has':
      return { kind: 'has', media: filter.media };
    case 'draft':
      return { kind: 'draft', draft: filter.draft };
    case 'schema':
      if (!(EVENT_SCHEMAS as readonly string[]).includes(filter.value)) {
        throw new QuerySyntaxError(query, filter.span.start + 'schema:'.length, `Unknown event schema "${filter.value}"; expected one of ${EVENT_SCHEMAS.join(', ')}`);
      }
      return { kind: 'field', field: 'event_schema', value: filter.value };
    default:
      return { kind: 'field', field: FIELDS[filter.key], value: filter.value };
  }
}

/** The created_at range (µs, inclusive) of `date<op>day`, days in UTC. */
function dayRange(op: Comparison, day: string): { from: number; to: number } {
  const start = Date.parse(`${day}T00:00:00Z`) * 1000;
  const end = start + MICROS_PER_DAY - 1;
  switch (op) {
    case '=': return { from: start, to: end };
    case '>=': return { from: start, to: Infinity };
    case '>': return { from: end + 1, to: Infinity };
    case '<': return { from: -Infinity, to: start - 1 };
    case '<=': return { from: -Infinity, to: end };
  }
}
