/**
 * Retry rules of the hosted client (docs/SEARCH.md, "The hosted API"): 5xx and 429 are retried with
 * capped exponential backoff with jitter, a 429 waits at least its `Retry-After`; every other
 * status (401, 403 and 404 above all) is final. The backoff arithmetic and `Retry-After` parsing
 * are src/backoff.ts's, shared with the cloud uploader; the policy is this module's.
 */
import { exponentialBackoff } from '../backoff.js';

/** Tunable retry policy; every field has a default. Delays are milliseconds. */
export interface RetryOptions {
  /** Retries after the first attempt (default 4, so at most 5 requests). */
  retries?: number;
  /** Backoff before the first retry, doubled for each further one (default 500 ms). */
  baseDelayMs?: number;
  /** Cap of the exponential backoff (default 8000 ms). */
  maxDelayMs?: number;
  /**
   * Longest `Retry-After` the client is willing to wait (default 60000 ms). A longer one ends
   * the retries at once with the 429 error, so a caller is never parked for minutes.
   */
  maxRetryAfterMs?: number;
  /** Source of jitter in [0, 1) (default `Math.random`). */
  random?: () => number;
}

export type RetryPolicy = Required<RetryOptions>;

/** Fills the defaults of `options`. */
export function retryPolicy(options: RetryOptions = {}): RetryPolicy {
  return {
    retries: options.retries ?? 4,
    baseDelayMs: options.baseDelayMs ?? 500,
    maxDelayMs: options.maxDelayMs ?? 8000,
    maxRetryAfterMs: options.maxRetryAfterMs ?? 60_000,
    random: options.random ?? Math.random,
  };
}

/** True for the statuses worth another attempt: 429 and every 5xx. */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || status >= 500;
}

/**
 * How long to wait before retry number `attempt` (0 for the first retry), or `undefined` when
 * no retry should happen (retries used up, or a `Retry-After` beyond `maxRetryAfterMs`).
 * Backoff is `min(maxDelayMs, baseDelayMs * 2^attempt)` with equal jitter (half fixed, half
 * random); a `Retry-After` raises the wait to at least that long.
 * @param retryAfterMs the parsed `Retry-After` of the answer, if it had one
 */
export function retryDelay(attempt: number, retryAfterMs: number | undefined, policy: RetryPolicy): number | undefined {
  if (attempt >= policy.retries) return undefined;
  if (retryAfterMs !== undefined && retryAfterMs > policy.maxRetryAfterMs) return undefined;
  return exponentialBackoff(attempt, { baseMs: policy.baseDelayMs, capMs: policy.maxDelayMs, random: policy.random }, retryAfterMs);
}
