/**
 * Requests to the cloud Vision Events API with retries (docs/OPERATIONS.md, "Cloud upload"). Every
 * request is retried until it succeeds, is refused, or the uploader stops:
 * - 5xx, 408, 429 and network errors (refused connections, resets, time-outs) are transient:
 *   retried with capped exponential backoff and jitter; a `Retry-After` is honoured (up to
 *   RETRY_AFTER_LIMIT_MS);
 * - 401, 403 and 404 say the key or CLOUD_UPLOAD_URL is wrong, not the event: logged at error
 *   level and retried at the same pace, so a misconfigured device keeps its data protected until
 *   it is fixed (and restarted);
 * - every other 4xx is a refusal of what was sent, returned to the caller to decide.
 * The backoff arithmetic and `Retry-After` parsing are shared with the hosted search client
 * (src/backoff.ts); the policy above is this module's.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { exponentialBackoff, parseRetryAfter } from '../backoff.js';
import type { Logger } from '../logger.js';
import type { RequestParts } from './cloud-payload.js';

/** Longest `Retry-After` honoured (ms); a longer one is shortened to this. */
export const RETRY_AFTER_LIMIT_MS = 15 * 60 * 1000;
/** Wait before the first retry (ms) unless told otherwise (BackoffOptions.baseMs). */
const DEFAULT_BACKOFF_BASE_MS = 500;
/** Longest wait between two attempts (ms) unless told otherwise (BackoffOptions.capMs). */
const DEFAULT_BACKOFF_CAP_MS = 30_000;
/** Longest an answer to one request may take (ms) unless told otherwise. */
const DEFAULT_REQUEST_TIMEOUT_MS = 120_000;
/** Characters of a failed answer's body kept for the log. */
const DETAIL_CHARS = 500;

/** Backoff of retried requests: `min(capMs, baseMs * 2^attempt)`, half of it jittered (ms). */
export interface BackoffOptions {
  /** Wait before the first retry, doubled for each further one (default 500 ms). */
  baseMs?: number;
  /** Longest wait between two attempts (default 30000 ms). */
  capMs?: number;
  /** Source of jitter in [0, 1) (default `Math.random`). */
  random?: () => number;
}

/** How the client reaches the cloud and when it gives up. */
export interface CloudClientOptions {
  /** CLOUD_UPLOAD_URL, without a trailing slash. */
  baseUrl: string;
  /** CLOUD_API_KEY, sent as `Authorization: Bearer`; unset: no Authorization header. */
  apiKey: string | undefined;
  /** Aborted when the uploader stops: the request or wait under way ends at once. */
  signal: AbortSignal;
  log: Logger;
  backoff?: BackoffOptions;
  /** Longest an answer to one request may take (ms; default 120000), then it is retried. */
  requestTimeoutMs?: number;
}

/** The end of a request: a 2xx answer's parsed JSON body, a refusal, or nothing left to send. */
export type CloudOutcome =
  | { kind: 'ok'; body: unknown }
  | { kind: 'refused'; status: number; detail: string }
  | { kind: 'gone' };

/** Statuses that blame the device's settings rather than what was sent. */
const SETTINGS_WRONG = new Set([401, 403, 404]);

/** A 4xx that refuses what was sent: not 408 or 429 (transient), nor one of SETTINGS_WRONG. */
const isRefusal = (status: number) => status >= 400 && status < 500 && status !== 408 && status !== 429 && !SETTINGS_WRONG.has(status);

/** Waits `ms`, or less when `signal` aborts (never rejects). */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return sleep(ms, undefined, { signal }).catch(() => undefined);
}

/**
 * The wait (ms) before retry number `attempt` (0 for the first): `min(capMs, baseMs * 2^attempt)`
 * with half of it jittered, and at least `retryAfterMs` (shortened to RETRY_AFTER_LIMIT_MS).
 */
export function backoffDelay(attempt: number, backoff: BackoffOptions = {}, retryAfterMs?: number): number {
  const shape = { baseMs: backoff.baseMs ?? DEFAULT_BACKOFF_BASE_MS, capMs: backoff.capMs ?? DEFAULT_BACKOFF_CAP_MS, random: backoff.random ?? Math.random };
  return exponentialBackoff(attempt, shape, retryAfterMs === undefined ? 0 : Math.min(retryAfterMs, RETRY_AFTER_LIMIT_MS));
}

/** Posts to the cloud API with the retry rules above. */
export class CloudClient {
  constructor(private readonly options: CloudClientOptions) {}

  /**
   * POSTs to `path` until an answer that ends it.
   * @param build makes the request body for each attempt (a stream is used once), or returns
   *   undefined when there is nothing to send any more (the file vanished): outcome `gone`
   * @throws the abort reason once the signal is aborted; nothing else
   */
  async post(path: string, build: () => RequestParts | undefined): Promise<CloudOutcome> {
    const { signal, log } = this.options;
    for (let attempt = 0; ; attempt++) {
      signal.throwIfAborted();
      const parts = build();
      if (!parts) return { kind: 'gone' };
      let failure: { status?: number; detail: string; retryAfterMs?: number };
      try {
        const { res, text } = await this.send(path, parts);
        if (res.ok) {
          try {
            return { kind: 'ok', body: text === '' ? undefined : JSON.parse(text) };
          } catch {
            failure = { status: res.status, detail: `answer is not JSON: ${text.slice(0, DETAIL_CHARS)}` };
          }
        } else {
          const detail = text.slice(0, DETAIL_CHARS);
          if (isRefusal(res.status)) return { kind: 'refused', status: res.status, detail };
          failure = { status: res.status, detail, retryAfterMs: parseRetryAfter(res.headers.get('retry-after'), Date.now()) };
        }
      } catch (err) {
        signal.throwIfAborted();
        const cause = (err as { cause?: { code?: string; message?: string } }).cause;
        failure = { detail: [(err as Error).message, cause?.code ?? cause?.message].filter(Boolean).join(': ') };
      }
      const waitMs = backoffDelay(attempt, this.options.backoff, failure.retryAfterMs);
      const settings = failure.status !== undefined && SETTINGS_WRONG.has(failure.status);
      log[settings ? 'error' : 'warn']({ path, attempt, waitMs, ...failure },
        settings ? 'cloud refused the key or URL (check CLOUD_API_KEY, CLOUD_UPLOAD_URL); retrying' : 'cloud request failed; retrying');
      await pause(waitMs, signal);
    }
  }

  /**
   * One request and its whole answer, within the time limit. The limit and the stop signal act
   * through a controller of the request's own (AbortSignal.any would keep every request's signal
   * alive as long as the stop signal, a leak on a long-running device).
   */
  private async send(path: string, parts: RequestParts): Promise<{ res: Response; text: string }> {
    const { baseUrl, apiKey, signal } = this.options;
    const headers: Record<string, string> = { ...parts.headers };
    if (apiKey !== undefined) headers.authorization = `Bearer ${apiKey}`;
    const request = new AbortController();
    const stop = () => request.abort(signal.reason);
    signal.addEventListener('abort', stop, { once: true });
    const timer = setTimeout(() => request.abort(new DOMException('no answer in time', 'TimeoutError')), this.options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS);
    try {
      // `duplex` is required with a streamed body; TypeScript's RequestInit does not know it yet.
      const init: RequestInit & { duplex: 'half' } = { method: 'POST', headers, body: parts.body, duplex: 'half', signal: request.signal };
      const res = await fetch(`${baseUrl}${path}`, init);
      return { res, text: await res.text() };
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', stop);
    }
  }
}
