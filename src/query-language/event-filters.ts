/**
 * The filters of the query language over the store's own events (docs/API.md, "Event search"):
 * the grammar is the one the hosted search uses too (query-parser.ts), the selectors are the event's fields.
 * A selector of the hosted search only (`tag:`, `like-image:`...) is an error saying so, and so is
 * an unknown one, so a typo fails with its position instead of matching nothing.
 */
import { nearestName } from './nearest-name.js';
import { QuerySyntaxError } from './query-syntax-error.js';
import { FILTER_KEYS } from './query-ast.js';
import type { Comparison, FilterBase, QueryNode } from './query-ast.js';
import { wordText } from './query-lexer.js';
import type { WordChar } from './query-lexer.js';
import { parseQueryWith } from './query-parser.js';
import { calendarDay, classValue, COMPARISONS, requiredValue, SELECTOR, unquotedHead, valueAfter, wholeNumber, type Value } from './query-values.js';

/** Selectors matched exactly against one field of the event. */
export const EVENT_FIELD_KEYS = ['device', 'stream', 'schema', 'workflow', 'solution', 'external-id'] as const;
export type EventFieldKey = (typeof EVENT_FIELD_KEYS)[number];

/** Every selector of the event dialect, as error messages list them (`meta.KEY` stands for any key). */
export const EVENT_FILTER_KEYS = [
  'class', 'min-confidence', ...EVENT_FIELD_KEYS, 'meta.KEY', 'date', 'min-annotations', 'max-annotations', 'has', 'draft',
] as const;

/** What `has:` asks for: an image with a stored file, a video, a local-only file. */
export const HAS_VALUES = ['image', 'video', 'file'] as const;
export type HasValue = (typeof HAS_VALUES)[number];

/** `class:C` (some prediction of C) or `class:C<op>N` (the count of C's predictions compared with N). */
export interface EventClassFilter extends FilterBase { key: 'class'; className: string; count?: { op: Comparison; value: number } }
/** `min-confidence:X`, X from 0 to 1. */
export interface MinConfidenceFilter extends FilterBase { key: 'min-confidence'; value: number }
/** `device:D`, `schema:S`...: the field equals the value. */
export interface EventFieldFilter extends FilterBase { key: EventFieldKey; value: string }
/** `meta.KEY:V` (`op` `=`) or `meta.KEY<op>V` on custom_metadata. */
export interface MetadataFilter extends FilterBase { key: 'meta'; name: string; op: Comparison; value: string }
/** `date:D` (`op` `=`) or `date<op>D`, `D` a UTC day `YYYY-MM-DD`, on created_at. */
export interface EventDateFilter extends FilterBase { key: 'date'; op: Comparison; date: string }
/** `min-annotations:N` / `max-annotations:N`: predictions over the event's images, at least / at most N. */
export interface AnnotationsFilter extends FilterBase { key: 'min-annotations' | 'max-annotations'; value: number }
/** `has:image|video|file`. */
export interface HasFilter extends FilterBase { key: 'has'; media: HasValue }
/** `draft:true|false`. */
export interface DraftFilter extends FilterBase { key: 'draft'; draft: boolean }

export type EventFilterNode =
  | EventClassFilter | MinConfidenceFilter | EventFieldFilter | MetadataFilter | EventDateFilter
  | AnnotationsFilter | HasFilter | DraftFilter;

export type EventQueryNode = QueryNode<EventFilterNode>;

const META = 'meta.';
const SEPARATORS = new Set([':', '<', '>', '=']);
const DECIMAL = /^(\d+(\.\d*)?|\.\d+)$/;

/**
 * Parses a query over events into its syntax tree.
 * @param query e.g. `class:person>=2 min-confidence:0.8 device:cam-1 -has:video`
 * @returns the root node; free text and `*` are nodes of their own (the caller decides)
 * @throws QuerySyntaxError as query-parser.ts `parseQueryWith`, and for the event filters' values
 */
export function parseEventQuery(query: string): EventQueryNode {
  return parseQueryWith(query, parseEventFilterWord);
}

/**
 * Turns one word into an event filter, or `null` for free text (a word with no `selector:` head,
 * or a URL).
 * @throws QuerySyntaxError for an unknown or hosted-only selector, a separator the filter does
 *   not take, or a bad value
 */
export function parseEventFilterWord(query: string, chars: WordChar[], start: number, end: number): EventFilterNode | null {
  const span = { start, end };
  const headText = unquotedHead(chars);
  if (headText.startsWith(META)) return metadataFilter(query, chars, start, span);
  const match = SELECTOR.exec(headText);
  if (!match) return null;
  const [head, selector, separator] = match;
  if (!isEventKey(selector)) {
    if (separator !== ':' || headText.startsWith(`${selector}://`)) return null;
    const hosted = (FILTER_KEYS as readonly string[]).includes(selector);
    const nearest = nearestName(selector, EVENT_FILTER_KEYS);
    const reason = hosted
      ? `"${selector}:" is a filter of the hosted image search (edge-events search), not of stored events`
      : `Unknown filter "${selector}:"${nearest ? `; did you mean ${nearest}:?` : ''}`;
    throw new QuerySyntaxError(query, start, `${reason}; events take: ${EVENT_FILTER_KEYS.map((k) => `${k}:`).join(' ')}`);
  }
  if (separator !== ':' && selector !== 'date') {
    throw new QuerySyntaxError(query, start + selector.length, `${selector} takes ":" (date and meta.KEY take comparisons such as date>=2024-01-01)`);
  }
  const value = valueAfter(chars, head.length, start);
  switch (selector) {
    case 'class':
      return { type: 'filter', key: selector, ...classValue(query, value), span };
    case 'min-confidence':
      return { type: 'filter', key: selector, value: confidence(query, value), span };
    case 'date':
      return { type: 'filter', key: selector, op: separator === ':' ? '=' : (separator as Comparison), date: calendarDay(query, value), span };
    case 'min-annotations':
    case 'max-annotations':
      return { type: 'filter', key: selector, value: wholeNumber(query, value.chars, value.start, `${selector}:`), span };
    case 'has':
      return { type: 'filter', key: selector, media: oneOf(query, selector, value, HAS_VALUES), span };
    case 'draft':
      return { type: 'filter', key: selector, draft: oneOf(query, selector, value, ['true', 'false'] as const) === 'true', span };
    default:
      return { type: 'filter', key: selector, value: requiredValue(query, selector, value), span };
  }
}

type EventKey = Exclude<(typeof EVENT_FILTER_KEYS)[number], 'meta.KEY'>;

function isEventKey(selector: string): selector is EventKey {
  return selector !== 'meta.KEY' && (EVENT_FILTER_KEYS as readonly string[]).includes(selector);
}

/**
 * `meta.KEY:V` or `meta.KEY<op>V`: the key runs to the first unquoted `:`, `<`, `>` or `=`, so
 * a key holding one of those is quoted (`meta."a:b":1`).
 */
function metadataFilter(query: string, chars: WordChar[], start: number, span: { start: number; end: number }): MetadataFilter {
  const at = chars.findIndex((ch, i) => i >= META.length && !ch.quoted && SEPARATORS.has(ch.c));
  if (at === -1) throw new QuerySyntaxError(query, start, `${wordText(chars)} needs a value: meta.KEY:VALUE or meta.KEY>NUMBER`);
  const name = wordText(chars.slice(META.length, at));
  if (name === '') throw new QuerySyntaxError(query, start + META.length, 'meta. needs a key: meta.KEY:VALUE');
  const rest = wordText(chars.slice(at, at + 2));
  const op = rest.startsWith(':') ? '=' : COMPARISONS.find((candidate) => rest.startsWith(candidate))!;
  const head = at + (rest.startsWith(':') ? 1 : op.length);
  const value = valueAfter(chars, head, start);
  return { type: 'filter', key: 'meta', name, op, value: requiredValue(query, `meta.${name}`, value), span };
}

function confidence(query: string, value: Value): number {
  const text = requiredValue(query, 'min-confidence', value);
  const number = Number(text);
  if (!DECIMAL.test(text) || number > 1) {
    throw new QuerySyntaxError(query, value.start, `min-confidence: expects a number from 0 to 1, got "${text}"`);
  }
  return number;
}

function oneOf<T extends string>(query: string, selector: string, value: Value, allowed: readonly T[]): T {
  const text = requiredValue(query, selector, value);
  if (!(allowed as readonly string[]).includes(text)) {
    throw new QuerySyntaxError(query, value.start, `${selector}: expects ${allowed.join(' or ')}, got "${text}"`);
  }
  return text as T;
}
