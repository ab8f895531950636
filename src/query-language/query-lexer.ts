/**
 * Tokenizer of the search query language. Outside double quotes, whitespace separates tokens,
 * `(` and `)` are tokens of their own, and a `-` at the start of a token excludes the term that
 * follows it. A word may contain double-quoted parts (`tag:"night shift"`); inside quotes `\"`
 * and `\\` are escapes and nothing else is special.
 */
import { QuerySyntaxError } from './query-syntax-error.js';

/** One character of a word: its value, its offset in the query, and whether it was quoted. */
export interface WordChar {
  c: string;
  pos: number;
  quoted: boolean;
}

export type Token =
  | { kind: '('; start: number; end: number }
  | { kind: ')'; start: number; end: number }
  | { kind: '-'; start: number; end: number }
  | { kind: 'word'; chars: WordChar[]; start: number; end: number };

const WHITESPACE = /\s/;

/**
 * Splits `query` into tokens, each with its `[start, end)` offsets.
 * @throws QuerySyntaxError on an unterminated quote (pointing at the opening quote) or on a
 *   minus followed by nothing to exclude (pointing at the minus)
 */
export function tokenize(query: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < query.length) {
    const c = query[i];
    if (WHITESPACE.test(c)) {
      i += 1;
    } else if (c === '(' || c === ')') {
      tokens.push({ kind: c, start: i, end: i + 1 });
      i += 1;
    } else if (c === '-') {
      const next = query[i + 1];
      if (next === undefined || WHITESPACE.test(next) || next === ')') {
        throw new QuerySyntaxError(query, i, 'A minus must be directly followed by the term it excludes');
      }
      tokens.push({ kind: '-', start: i, end: i + 1 });
      i += 1;
    } else {
      const word = readWord(query, i);
      tokens.push(word);
      i = word.end;
    }
  }
  return tokens;
}

function readWord(query: string, start: number): Token & { kind: 'word' } {
  const chars: WordChar[] = [];
  let i = start;
  while (i < query.length) {
    const c = query[i];
    if (WHITESPACE.test(c) || c === '(' || c === ')') break;
    if (c !== '"') {
      chars.push({ c, pos: i, quoted: false });
      i += 1;
      continue;
    }
    const open = i;
    i += 1;
    while (i < query.length && query[i] !== '"') {
      const escaped = query[i] === '\\' && (query[i + 1] === '"' || query[i + 1] === '\\');
      if (escaped) i += 1;
      chars.push({ c: query[i], pos: i, quoted: true });
      i += 1;
    }
    if (i >= query.length) throw new QuerySyntaxError(query, open, 'Unterminated quote: add the closing "');
    i += 1;
  }
  return { kind: 'word', chars, start, end: i };
}

/** The text of a word with its quotes removed. */
export function wordText(chars: WordChar[]): string {
  return chars.map((ch) => ch.c).join('');
}

/** True when the word is exactly `text`, written without quotes (so `"AND"` is not `AND`). */
export function isBareWord(token: Token, text: string): boolean {
  return token.kind === 'word' && token.chars.every((ch) => !ch.quoted) && wordText(token.chars) === text;
}
