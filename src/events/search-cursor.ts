/**
 * The parameters of the event search besides its filters (docs/API.md, "Event search"): `q`,
 * required, and the opaque page `cursor`. A cursor holds the created_at (µs) of the first event
 * of the next page, newest first; created_at values are unique, so pages neither skip nor repeat.
 */
import { AppError, validationError } from '../errors.js';

const PREFIX = 'c1.';
const MICROS = /^\d{1,17}$/;

/** The cursor that continues a search at the event created at `createdAt` (µs), inclusive. */
export function searchCursor(createdAt: number): string {
  return Buffer.from(`${PREFIX}${createdAt}`).toString('base64url');
}

/**
 * Reads a cursor `searchCursor` gave.
 * @param cursor the parameter (null: the first page)
 * @returns the created_at (µs) the page starts at, inclusive; undefined for the first page
 * @throws AppError invalid_query (400) for anything `searchCursor` does not make
 */
export function parseSearchCursor(cursor: string | null): number | undefined {
  if (cursor === null) return undefined;
  const text = Buffer.from(cursor, 'base64url').toString('latin1');
  const micros = text.slice(PREFIX.length);
  if (!text.startsWith(PREFIX) || !MICROS.test(micros) || searchCursor(Number(micros)) !== cursor) {
    throw new AppError('invalid_query', `Invalid cursor '${cursor.slice(0, 64)}': pass next_cursor of the previous page as it was`);
  }
  return Number(micros);
}

/**
 * The `q` parameter.
 * @throws AppError validation_failed (422) when it is absent
 */
export function requiredQuery(params: URLSearchParams): string {
  const q = params.get('q');
  if (q === null) throw validationError(['query', 'q'], 'field required', 'value_error.missing');
  return q;
}
