/**
 * HTTP Range for downloads (spec B, Download rules): `bytes=a-b`, `bytes=a-`, `bytes=-n`.
 * One range per request; a header of another unit or with several ranges is ignored and the
 * whole file is served, as RFC 9110 allows.
 */
import { AppError } from '../errors.js';

/** An inclusive byte range [start, end] of a file. */
export interface ByteRange {
  start: number;
  end: number;
}

const SINGLE = /^bytes=\s*(\d*)\s*-\s*(\d*)\s*$/;

/**
 * Resolves a Range header against a file of `size` bytes.
 * @returns the range to send, or undefined to send the whole file
 * @throws AppError range_not_satisfiable (416, with `Content-Range: bytes *\/size`)
 */
export function resolveRange(header: string, size: number): ByteRange | undefined {
  if (header === '') return undefined;
  const match = SINGLE.exec(header);
  if (!match || (match[1] === '' && match[2] === '')) return undefined;
  const unsatisfiable = () => new AppError('range_not_satisfiable', undefined, { 'Content-Range': `bytes */${size}` });
  if (match[1] === '') {
    const suffix = Number(match[2]);
    if (suffix === 0 || size === 0) throw unsatisfiable();
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(match[1]);
  const end = match[2] === '' ? size - 1 : Math.min(Number(match[2]), size - 1);
  if (start >= size || end < start) throw unsatisfiable();
  return { start, end };
}
