/**
 * Timestamps of the store: created_at, finalized_at and auto_finalized_at are integers of
 * microseconds since the epoch (µs), unique per store for created_at (docs/STORAGE.md,
 * "Creates"), and travel as ISO 8601 strings with six fraction digits and a `Z`.
 */

/** µs in a day. */
export const DAY_MICROS = 86_400_000_000;

const ISO = /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2})?)(?:\.(\d{1,9}))?)?\s*(Z|z|[+-]\d{2}:?\d{2})?$/;

/**
 * True when the `YYYY-MM-DD` that `text` starts with is a day of the calendar (no 2026-02-30:
 * Date.parse would roll it over to March 2).
 */
export function isCalendarDate(text: string): boolean {
  const day = Number(text.slice(8, 10));
  if (day <= 28) return true;
  const year = Number(text.slice(0, 4));
  const month = Number(text.slice(5, 7));
  return day <= new Date(Date.UTC(year, month, 0)).getUTCDate(); // day 0 of the next month
}

/**
 * Parses an ISO 8601 date or date-time to µs since the epoch; a missing offset means UTC.
 * @returns undefined when the text is not an ISO 8601 timestamp of a calendar day
 */
export function parseIsoMicros(text: string): number | undefined {
  const match = ISO.exec(text.trim());
  if (!match) return undefined;
  const [, date, time = '00:00:00', fraction = '', zone = 'Z'] = match;
  if (!isCalendarDate(date!)) return undefined;
  const offset = zone === 'z' ? 'Z' : zone.length === 5 ? `${zone.slice(0, 3)}:${zone.slice(3)}` : zone;
  const ms = Date.parse(`${date}T${time.length === 5 ? `${time}:00` : time}${offset}`);
  if (Number.isNaN(ms)) return undefined;
  return ms * 1000 + Number(fraction.padEnd(6, '0').slice(0, 6));
}

/**
 * The last value `formatMicros` formatted (µs), and its text. A create formats its created_at
 * for the stored JSON, again as its finalized_at, and again for the 201.
 */
let lastFormatted = Number.NaN;
let lastText = '';

/** Formats µs since the epoch as `YYYY-MM-DDTHH:MM:SS.ffffffZ`. */
export function formatMicros(micros: number): string {
  if (micros === lastFormatted) return lastText;
  const ms = Math.floor(micros / 1000);
  const iso = new Date(ms).toISOString(); // YYYY-MM-DDTHH:MM:SS.mmmZ
  const sub = String(micros - ms * 1000).padStart(3, '0');
  lastFormatted = micros;
  lastText = `${iso.slice(0, 23)}${sub}Z`;
  return lastText;
}

/** Like `formatMicros`, passing null through. */
export function formatMicrosOrNull(micros: number | null): string | null {
  return micros === null ? null : formatMicros(micros);
}

let last = 0;

/**
 * The current time in µs, strictly greater than every value it returned before in this thread,
 * so created_at is unique and ordered even when the clock stalls or steps back.
 * @param floor a value the result must exceed too (the newest created_at already stored)
 */
export function nextUniqueMicros(floor = 0): number {
  const now = Math.floor((performance.timeOrigin + performance.now()) * 1000);
  last = Math.max(now, last + 1, floor + 1);
  return last;
}
