/**
 * HTTP transport of the hosted search client: adds `api_key` as a query parameter (docs/SEARCH.md,
 * "The hosted API"), retries per `retry.ts`, turns non-2xx answers into typed errors carrying the
 * status and the hosted body, and keeps the key out of every error and log line.
 */
import {
  SearchNetworkError, SearchResponseError, apiErrorFor,
} from './errors.js';
import type { SearchError } from './errors.js';
import { redact } from '../redact.js';
import { parseRetryAfter } from '../backoff.js';
import { isRetryableStatus, retryDelay, retryPolicy } from './retry.js';
import type { RetryOptions, RetryPolicy } from './retry.js';

/** The two calls of a pino logger the client uses; a pino `Logger` satisfies it. */
export interface SearchLogger {
  debug(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

export interface TransportOptions {
  /** Base URL of the hosted API, e.g. `https://api.example.com` (SEARCH_BASE_URL). */
  baseUrl: string;
  apiKey: string;
  /** Default: the global `fetch`. */
  fetch?: typeof fetch;
  retry?: RetryOptions;
  /** Waits between retries and export polls (default: a real timer). Tests inject a recorder. */
  sleep?: (ms: number) => Promise<void>;
  logger?: SearchLogger;
  /** Per-request timeout in ms (default 30000); a timed-out request is a network error. */
  timeoutMs?: number;
}

type Method = 'GET' | 'POST';

/** Sleeps `ms` milliseconds on a real timer. */
export function realSleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export class HostedTransport {
  readonly baseUrl: URL;
  private readonly apiKey: string;
  private readonly fetchImpl: typeof fetch;
  private readonly policy: RetryPolicy;
  readonly sleep: (ms: number) => Promise<void>;
  private readonly logger: SearchLogger | undefined;
  private readonly timeoutMs: number;

  /** @throws TypeError when `baseUrl` is not an absolute URL (callers validate it first). */
  constructor(options: TransportOptions) {
    this.baseUrl = new URL(options.baseUrl.replace(/\/+$/, '') + '/');
    this.apiKey = options.apiKey;
    this.fetchImpl = options.fetch ?? globalThis.fetch;
    this.policy = retryPolicy(options.retry);
    this.sleep = options.sleep ?? realSleep;
    this.logger = options.logger;
    this.timeoutMs = options.timeoutMs ?? 30_000;
  }

  /**
   * Sends a request to `path` (relative to the base URL, segments already encoded) and parses
   * the JSON answer.
   * @returns the parsed body of the 2xx answer (null when empty)
   * @throws SearchApiError subclass for a final non-2xx answer, SearchNetworkError when no
   *   answer came, SearchResponseError when a 2xx body is not JSON
   */
  async json(method: Method, path: string, body?: unknown): Promise<unknown> {
    const url = this.resolve(path);
    const response = await this.send(method, url, body);
    const text = await response.text();
    try {
      return text === '' ? null : JSON.parse(text);
    } catch {
      throw new SearchResponseError(this.redact(`Hosted search API answered ${response.status} to ${method} ${url.pathname} with a body that is not JSON`));
    }
  }

  /**
   * GETs a download link. A link on the base URL's origin gets the `api_key`; a link on any
   * other origin (e.g. a signed storage URL) is fetched as is, so the key never leaves the
   * hosted API. Relative links resolve against the base URL.
   * @returns the 2xx response, body unread
   */
  async download(link: string): Promise<Response> {
    const url = new URL(link, this.baseUrl);
    return this.send('GET', url, undefined, url.origin === this.baseUrl.origin);
  }

  /** The URL of `path` under the base URL. */
  private resolve(path: string): URL {
    return new URL(path.replace(/^\/+/, ''), this.baseUrl);
  }

  private async send(method: Method, url: URL, body: unknown, withKey = true): Promise<Response> {
    const target = new URL(url);
    if (withKey) target.searchParams.set('api_key', this.apiKey);
    const where = this.redact(`${method} ${url.pathname}`);
    for (let attempt = 0; ; attempt += 1) {
      const response = await this.attempt(method, target, body, where);
      this.logger?.debug({ method, path: url.pathname, status: response.status, attempt }, 'hosted search request');
      if (response.ok) return response;
      const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'), Date.now());
      const delayMs = isRetryableStatus(response.status) ? retryDelay(attempt, retryAfterMs, this.policy) : undefined;
      if (delayMs === undefined) throw await this.failure(response, where, retryAfterMs);
      await response.body?.cancel();
      this.logger?.warn({ method, path: url.pathname, status: response.status, attempt, delayMs }, 'retrying hosted search request');
      await this.sleep(delayMs);
    }
  }

  private async attempt(method: Method, url: URL, body: unknown, where: string): Promise<Response> {
    try {
      return await this.fetchImpl(url, {
        method,
        headers: body === undefined ? { accept: 'application/json' } : { accept: 'application/json', 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      throw this.networkError(error, where);
    }
  }

  private networkError(error: unknown, where: string): SearchError {
    const err = error as Error & { cause?: Error };
    const reason = err?.name === 'TimeoutError'
      ? `timed out after ${this.timeoutMs} ms`
      : [err?.message, err?.cause?.message].filter(Boolean).join(': ');
    return new SearchNetworkError(this.redact(`Could not reach the hosted search API (${where} at ${this.baseUrl.origin}): ${reason}`), { cause: error });
  }

  private async failure(response: Response, where: string, retryAfterMs: number | undefined): Promise<SearchError> {
    const text = this.redact(await response.text());
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // a plain-text body (e.g. the per-IP 429) stays a string
    }
    const retryAfterSeconds = retryAfterMs === undefined ? undefined : retryAfterMs / 1000;
    return apiErrorFor(response.status, body, where, retryAfterSeconds);
  }

  private redact(text: string): string {
    return redact(text, this.apiKey);
  }
}
