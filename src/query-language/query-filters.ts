/**
 * Turns one word of a query into a filter node (docs/SEARCH.md, "Query language" lists the
 * filters), validating its value. A word whose unquoted start is not `selector:` (or `date<op>`) is
 * free text, so `null` is returned for it; so is a URL (`https://...`). An unknown `selector:` is
 * an error rather than text, so a typo such as `spilt:train` fails locally instead of running as a
 * semantic search.
 */
import { nearestName } from './nearest-name.js';
import { QuerySyntaxError } from './query-syntax-error.js';
import { FILTER_KEYS, SPLITS } from './query-ast.js';
import type { Comparison, FilterKey, FilterNode, RangeFilter, Split } from './query-ast.js';
import { wordText } from './query-lexer.js';
import type { WordChar } from './query-lexer.js';
import { calendarDay, classValue, requiredValue, SELECTOR, unquotedHead, valueAfter, wholeNumber, type Value } from './query-values.js';

/**
 * Parses `chars` (one word token) as a filter.
 * @returns the filter node, or `null` when the word is free text
 * @throws QuerySyntaxError for an unknown `selector:`, a selector with the wrong separator, or a
 *   value the filter does not accept (empty, non-numeric, bad date, unknown split)
 */
export function parseFilterWord(query: string, chars: WordChar[], start: number, end: number): FilterNode | null {
  const headText = unquotedHead(chars);
  const match = SELECTOR.exec(headText);
  if (!match) return null;
  const [head, selector, separator] = match;
  if (!isFilterKey(selector)) {
    const isUrl = headText.startsWith(`${selector}://`);
    if (separator !== ':' || isUrl) return null;
    const nearest = nearestName(selector, FILTER_KEYS);
    throw new QuerySyntaxError(query, start, `Unknown filter "${selector}:"${nearest ? `; did you mean ${nearest}:?` : ''}; known filters: ${FILTER_KEYS.map((k) => `${k}:`).join(' ')}`);
  }
  if (separator !== ':' && selector !== 'date') {
    throw new QuerySyntaxError(query, start + selector.length, `${selector} takes ":" (only date takes a comparison such as date>=2024-01-01)`);
  }
  const value = valueAfter(chars, head.length, start);
  const span = { start, end };
  const ctx = { query, selector, value };
  switch (selector) {
    case 'like-image':
      return { type: 'filter', key: selector, imageId: required(ctx), span };
    case 'tag':
      return { type: 'filter', key: selector, tag: required(ctx), span };
    case 'job':
      return { type: 'filter', key: selector, jobId: required(ctx), span };
    case 'project':
    case 'dataset':
      return { type: 'filter', key: selector, project: required(ctx), span };
    case 'split':
      return { type: 'filter', key: selector, split: split(ctx), span };
    case 'filename':
      return { type: 'filter', key: selector, ...filename(ctx), span };
    case 'class':
      return { type: 'filter', key: selector, ...classValue(query, value), span };
    case 'date':
      return { type: 'filter', key: selector, op: separator === ':' ? '=' : (separator as Comparison), date: calendarDay(query, value), span };
    default:
      return rangeFilter(ctx, selector, span);
  }
}

interface FilterContext {
  query: string;
  selector: FilterKey;
  value: Value;
}

function isFilterKey(selector: string): selector is FilterKey {
  return (FILTER_KEYS as readonly string[]).includes(selector);
}

function required({ query, selector, value }: FilterContext): string {
  return requiredValue(query, selector, value);
}

function split(ctx: FilterContext): Split {
  const text = required(ctx);
  if (!(SPLITS as readonly string[]).includes(text)) {
    throw new QuerySyntaxError(ctx.query, ctx.value.start, `Unknown split "${text}"; expected ${SPLITS.join(', ')}`);
  }
  return text as Split;
}

/** A `*` (unquoted) at the start and/or end of the value makes the match partial. */
function filename(ctx: FilterContext): { pattern: string; match: 'exact' | 'prefix' | 'suffix' | 'contains' } {
  required(ctx);
  const { chars } = ctx.value;
  const leading = !chars[0].quoted && chars[0].c === '*';
  const trailing = chars.length > 1 && !chars[chars.length - 1].quoted && chars[chars.length - 1].c === '*';
  const pattern = wordText(chars.slice(leading ? 1 : 0, trailing ? -1 : undefined));
  if (pattern === '') throw new QuerySyntaxError(ctx.query, ctx.value.start, 'filename: needs a name besides *');
  const match = leading && trailing ? 'contains' : leading ? 'suffix' : trailing ? 'prefix' : 'exact';
  return { pattern, match };
}

function rangeFilter(ctx: FilterContext, selector: RangeFilter['key'], span: { start: number; end: number }): RangeFilter {
  const [bound, measure] = selector.split('-') as [RangeFilter['bound'], RangeFilter['measure']];
  const value = wholeNumber(ctx.query, ctx.value.chars, ctx.value.start, `${selector}:`);
  return { type: 'filter', key: selector, measure, bound, value, span };
}
