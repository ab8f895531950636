/**
 * The one error of the query language (docs/SEARCH.md, "Query language"; docs/API.md, "Event
 * search"): a query that does not parse, with the column of the offending character and a caret
 * under it. The hosted search client raises it before anything is sent; the store's event search
 * turns it into `invalid_search_query`.
 */

/**
 * A query that does not parse. `position` is the 0-based UTF-16 offset of the offending
 * character in `query`; `reason` is the bare explanation; `message` is the reason followed by
 * the query and a caret line under that character.
 */
export class QuerySyntaxError extends Error {
  readonly query: string;
  readonly position: number;
  readonly reason: string;

  constructor(query: string, position: number, reason: string) {
    super(`Invalid query at column ${position + 1}: ${reason}\n${caretDisplay(query, position)}`);
    this.name = 'QuerySyntaxError';
    this.query = query;
    this.position = position;
    this.reason = reason;
  }
}

/** Queries longer than this are shown as a window around the caret (characters). */
const CARET_WINDOW = 80;

/**
 * Two lines: the query, indented by two spaces, and a caret under the character at `position`
 * (under the end of the query when `position` equals its length). A query longer than 80
 * characters is cut to the 80 around `position`, with `...` where text was left out, so the
 * message stays short whatever the query.
 */
export function caretDisplay(query: string, position: number): string {
  const oneLine = query.replace(/[\r\n\t]/g, ' ');
  const at = Math.max(0, position);
  if (oneLine.length <= CARET_WINDOW) return `  ${oneLine}\n  ${' '.repeat(at)}^`;
  const start = Math.max(0, Math.min(at - CARET_WINDOW / 2, oneLine.length - CARET_WINDOW));
  const before = start > 0 ? '...' : '';
  const after = start + CARET_WINDOW < oneLine.length ? '...' : '';
  return `  ${before}${oneLine.slice(start, start + CARET_WINDOW)}${after}\n  ${' '.repeat(before.length + at - start)}^`;
}
