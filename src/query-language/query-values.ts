/**
 * Reading the values of filter words, shared by every dialect of the query language
 * (docs/SEARCH.md, "Query language"; docs/API.md, "Event search"): the `selector<sep>` head of a
 * word, required values, whole numbers, calendar days and `class:NAME<op>N`. Every error points
 * at the character it is about.
 */
import { QuerySyntaxError } from './query-syntax-error.js';
import type { Comparison } from './query-ast.js';
import { wordText } from './query-lexer.js';
import type { WordChar } from './query-lexer.js';

/** `selector` then its separator: `:` or a comparison (`date>=...`). */
export const SELECTOR = /^([a-z]+(?:-[a-z]+)*)(>=|<=|:|>|<|=)/;
/** Comparisons, longest first, so `>=` is not read as `>`. */
export const COMPARISONS: Comparison[] = ['>=', '<=', '=', '>', '<'];
const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;
const WHOLE_NUMBER = /^\d+$/;

/** A filter value with the source offset of each character, for error positions. */
export interface Value {
  chars: WordChar[];
  text: string;
  /** Offset where the value starts (just after the separator), even when it is empty. */
  start: number;
}

/** The value of a filter word: its characters after `head.length` of them. */
export function valueAfter(chars: WordChar[], head: number, start: number): Value {
  const valueChars = chars.slice(head);
  return { chars: valueChars, text: wordText(valueChars), start: start + head };
}

/** The text of a word up to its first quoted character (selectors are never quoted). */
export function unquotedHead(chars: WordChar[]): string {
  const index = chars.findIndex((ch) => ch.quoted);
  return wordText(index === -1 ? chars : chars.slice(0, index));
}

/**
 * The value's text.
 * @throws QuerySyntaxError `<selector>: needs a value` when it is empty
 */
export function requiredValue(query: string, selector: string, value: Value): string {
  if (value.text === '') throw new QuerySyntaxError(query, value.start, `${selector}: needs a value`);
  return value.text;
}

/**
 * A whole number (0 or more) written with digits only.
 * @param what how the error names the filter, e.g. `min-annotations:`
 * @throws QuerySyntaxError pointing at `start` otherwise
 */
export function wholeNumber(query: string, chars: WordChar[], start: number, what: string): number {
  const text = wordText(chars);
  if (!WHOLE_NUMBER.test(text)) {
    const shown = text === '' ? 'nothing' : `"${text}"`;
    throw new QuerySyntaxError(query, start, `${what} expects a whole number (0 or more), got ${shown}`);
  }
  return Number(text);
}

/**
 * `YYYY-MM-DD`, a real calendar day.
 * @throws QuerySyntaxError pointing at the value otherwise
 */
export function calendarDay(query: string, value: Value): string {
  const match = DAY.exec(value.text);
  if (!match) {
    const shown = value.text === '' ? 'nothing' : `"${value.text}"`;
    throw new QuerySyntaxError(query, value.start, `date expects a day as YYYY-MM-DD, got ${shown}`);
  }
  const [, year, month, dayOfMonth] = match.map(Number);
  const parsed = new Date(Date.UTC(year, month - 1, dayOfMonth));
  if (parsed.getUTCFullYear() !== year || parsed.getUTCMonth() !== month - 1 || parsed.getUTCDate() !== dayOfMonth) {
    throw new QuerySyntaxError(query, value.start, `${value.text} is not a calendar day`);
  }
  return value.text;
}

/**
 * `class:NAME` or `class:NAME<op>N`; the operator is the first unquoted comparison.
 * @throws QuerySyntaxError for an empty value, a missing name before the operator or a count
 *   that is not a whole number
 */
export function classValue(query: string, value: Value): { className: string; count?: { op: Comparison; value: number } } {
  requiredValue(query, 'class', value);
  for (let i = 0; i < value.chars.length; i += 1) {
    if (value.chars[i].quoted) continue;
    const rest = wordText(value.chars.slice(i, i + 2));
    const op = COMPARISONS.find((candidate) => rest.startsWith(candidate));
    if (op === undefined) continue;
    const className = wordText(value.chars.slice(0, i));
    if (className === '') throw new QuerySyntaxError(query, value.start, `class: needs a class name before ${op}`);
    const countChars = value.chars.slice(i + op.length);
    const countStart = i + op.length < value.chars.length ? value.chars[i + op.length].pos : value.chars[i].pos + op.length;
    return { className, count: { op, value: wholeNumber(query, countChars, countStart, `class:${className}${op}`) } };
  }
  return { className: value.text };
}
