/**
 * HTTP Range for downloads (docs/API.md, "Downloads"; RFC 9110, section 14): `bytes=a-b`, `bytes=a-`, `bytes=-n`.
 * One range per request; a header of another unit or with several ranges is ignored and the
 * whole file is served, as RFC 9110 allows. The header is parsed in one linear pass (no regular
 * expression that could backtrack), and a header longer than MAX_RANGE_HEADER_LENGTH answers 416
 * without being parsed at all.
 */
import { AppError } from '../errors.js';

/** An inclusive byte range [start, end] of a file. */
export interface ByteRange {
  start: number;
  end: number;
}

/** Longest Range header read (characters); a one-range header needs about 50. Longer: 416. */
export const MAX_RANGE_HEADER_LENGTH = 256;

const DIGITS = /^\d*$/;

/** The two bounds of `bytes=<first>-<last>` as written (either may be ''), or undefined. */
function parseSingleRange(header: string): { first: string; last: string } | undefined {
  if (!header.startsWith('bytes=')) return undefined;
  const spec = header.slice('bytes='.length);
  const dash = spec.indexOf('-');
  if (dash < 0) return undefined;
  const first = spec.slice(0, dash).trim();
  const last = spec.slice(dash + 1).trim();
  return DIGITS.test(first) && DIGITS.test(last) ? { first, last } : undefined;
}

/**
 * Resolves a Range header against a file of `size` bytes.
 * @returns the range to send, or undefined to send the whole file
 * @throws AppError range_not_satisfiable (416, with `Content-Range: bytes *\/size`), also for a
 *   header longer than MAX_RANGE_HEADER_LENGTH characters
 */
export function resolveRange(header: string, size: number): ByteRange | undefined {
  if (header === '') return undefined;
  const unsatisfiable = () => new AppError('range_not_satisfiable', undefined, { headers: { 'Content-Range': `bytes */${size}` } });
  if (header.length > MAX_RANGE_HEADER_LENGTH) throw unsatisfiable();
  const bounds = parseSingleRange(header);
  if (!bounds || (bounds.first === '' && bounds.last === '')) return undefined;
  if (bounds.first === '') {
    const suffix = Number(bounds.last);
    if (suffix === 0) throw unsatisfiable();
    // On an empty file a suffix range is satisfiable (RFC 9110, section 14.1.2), yet selects no
    // byte a 206 could name: the whole, empty, file is sent.
    if (size === 0) return undefined;
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(bounds.first);
  const end = bounds.last === '' ? size - 1 : Math.min(Number(bounds.last), size - 1);
  if (start >= size || end < start) throw unsatisfiable();
  return { start, end };
}
