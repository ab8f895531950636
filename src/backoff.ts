/**
 * The arithmetic of retrying, shared by every client that retries over the network: the hosted
 * search client (src/search/retry.ts, docs/SEARCH.md) and the cloud uploader
 * (src/lifecycle/cloud-client.ts, docs/OPERATIONS.md, "Cloud upload"). Each keeps its own policy
 * (how many retries, which answers are retried, how long a `Retry-After` it honours); this module
 * knows nothing of either. Delays are milliseconds.
 */

/** The shape of an exponential backoff. */
export interface BackoffShape {
  /** Wait before the first retry, doubled for each further one (ms). */
  baseMs: number;
  /** Longest wait the doubling reaches (ms). */
  capMs: number;
  /** Source of jitter in [0, 1), e.g. `Math.random`. */
  random: () => number;
}

/**
 * The wait before retry number `attempt` (0 for the first): the ceiling
 * `min(capMs, baseMs * 2^attempt)`, half of it fixed and half random (equal jitter, so waits
 * never collapse to zero yet callers spread out), raised to at least `atLeastMs`.
 * @param atLeastMs a floor, e.g. a parsed `Retry-After` (default 0)
 * @returns whole milliseconds
 */
export function exponentialBackoff(attempt: number, shape: BackoffShape, atLeastMs = 0): number {
  const ceiling = Math.min(shape.capMs, shape.baseMs * 2 ** attempt);
  const jittered = ceiling / 2 + shape.random() * (ceiling / 2);
  return Math.round(Math.max(jittered, atLeastMs));
}

/**
 * Parses a `Retry-After` header: delay-seconds (decimals tolerated) or an HTTP date.
 * @param now the current time in ms since the epoch, for the date form
 * @returns milliseconds to wait (0 for a date in the past), or `undefined` when absent or invalid
 */
export function parseRetryAfter(header: string | null, now: number): number | undefined {
  if (header === null || header.trim() === '') return undefined;
  const trimmed = header.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
