/**
 * What a refused timestamp's message adds (docs/API.md, "Errors"): that an ISO 8601 string is
 * expected, and one. A number that reads as Unix time, in seconds (Python's `time.time()`) or
 * milliseconds (JavaScript's `Date.now()`), from 2001 to 2286, is shown as the time it would be.
 */

/** The timestamp shown when the value refused tells no time of its own. */
export const TIMESTAMP_EXAMPLE = '2026-12-02T10:00:00Z';

/**
 * `an ISO 8601 timestamp string is expected, such as "2024-12-02T12:00:00.123Z" (1733140800.123
 * read as seconds since the epoch)`, or with TIMESTAMP_EXAMPLE when `value` reads as no Unix time.
 * @param value the value refused: a JSON value, or a query parameter's text
 */
export function expectedTimestamp(value: unknown): string {
  const number = typeof value === 'number' ? value : typeof value === 'string' && /^\d+(\.\d+)?$/.test(value) ? Number(value) : NaN;
  const unit = number >= 1e9 && number < 1e10 ? 'seconds' : number >= 1e12 && number < 1e13 ? 'milliseconds' : undefined;
  if (unit === undefined) return `an ISO 8601 timestamp string is expected, such as "${TIMESTAMP_EXAMPLE}"`;
  const time = new Date(unit === 'seconds' ? number * 1000 : number).toISOString().replace('.000Z', 'Z');
  return `an ISO 8601 timestamp string is expected, such as "${time}" (${value} read as ${unit} since the epoch)`;
}
