/**
 * A client of a running store's read routes, for the CLI and the MCP server (docs/USAGE.md,
 * "Asking the store from a shell"): the store's URL and key from flags or the environment, one
 * request per call, failures as typed errors whose messages carry the store's own detail.
 */
import { parseSearchCursor } from '../events/search-cursor.js';
import type { StoredEvent } from '../events/types.js';

/** Where the store is when neither `--store` nor STORE_URL says. */
export const DEFAULT_STORE_URL = 'http://127.0.0.1:8001';

/** `--store` and `-k/--api-key`; each wins over STORE_URL and API_KEY. */
export interface StoreFlags {
  store?: string;
  apiKey?: string;
}

/** A page of `GET /v2/events/search` (docs/API.md, "Event search"). */
export interface EventSearchPage {
  events: StoredEvent[];
  count: number;
  next_cursor: string | null;
}

/** The store answered with an error status; `detail` is its body's `detail` (or its text). */
export class StoreRequestError extends Error {
  constructor(readonly status: number, readonly detail: string) {
    super(`The store answered ${status}: ${detail}`);
    this.name = 'StoreRequestError';
  }
}

/** No HTTP answer: the store is not running there, or the network failed. */
export class StoreNetworkError extends Error {
  constructor(readonly url: string, options: { cause: unknown }) {
    super(`No answer from the store at ${url}: ${(options.cause as Error)?.message ?? String(options.cause)}`, options);
    this.name = 'StoreNetworkError';
  }
}

/**
 * A `cursor` no page of the store gave (docs/API.md, "Event search": a page's `next_cursor`,
 * passed back as it was); found before any request, as the store would.
 */
export class StoreCursorError extends Error {
  constructor(readonly cursor: string, options: { cause: unknown }) {
    super(`Invalid cursor ${JSON.stringify(cursor.length > 64 ? `${cursor.slice(0, 64)}…` : cursor)}: not a next_cursor this store gave`, options);
    this.name = 'StoreCursorError';
  }
}

/** A malformed `--store` URL. */
export class StoreUsageError extends Error {
  constructor(message: string, readonly hint: string) {
    super(message);
    this.name = 'StoreUsageError';
  }
}

export class StoreClient {
  readonly baseUrl: string;
  private readonly apiKey: string | undefined;
  private readonly fetch: typeof fetch;

  /**
   * @param flags `--store` (else env STORE_URL, else DEFAULT_STORE_URL), `-k/--api-key` (else env API_KEY)
   * @throws StoreUsageError when the URL is not http(s)
   */
  constructor(flags: StoreFlags, env: Record<string, string | undefined>, fetchImpl: typeof fetch = fetch) {
    const url = flags.store ?? env.STORE_URL ?? DEFAULT_STORE_URL;
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new StoreUsageError(`--store must be an http(s) URL, got ${JSON.stringify(url)}`, `Pass e.g. --store ${DEFAULT_STORE_URL}`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new StoreUsageError(`--store must be an http(s) URL, got ${JSON.stringify(url)}`, `Pass e.g. --store ${DEFAULT_STORE_URL}`);
    }
    this.baseUrl = url.replace(/\/+$/, '');
    this.apiKey = flags.apiKey ?? env.API_KEY;
    this.fetch = fetchImpl;
  }

  /**
   * One page of `GET /v2/events/search`.
   * @param q the query; `limit` 1..1000; `cursor` the previous page's next_cursor
   * @throws StoreCursorError before any request for a cursor the store would refuse;
   *   StoreRequestError for an error status (400 carries the column and caret of a bad query),
   *   StoreNetworkError when the store does not answer
   */
  async searchEvents(q: string, options: { limit?: number; cursor?: string } = {}): Promise<EventSearchPage> {
    if (options.cursor !== undefined) {
      try {
        parseSearchCursor(options.cursor);
      } catch (cause) {
        throw new StoreCursorError(options.cursor, { cause });
      }
    }
    const params = new URLSearchParams({ q });
    if (options.limit !== undefined) params.set('limit', String(options.limit));
    if (options.cursor !== undefined) params.set('cursor', options.cursor);
    const response = await this.get(`/v2/events/search?${params}`);
    return (await response.json()) as EventSearchPage;
  }

  /**
   * GETs `path`; a 2xx answer is returned with its body unread.
   * @throws StoreRequestError for any other status, StoreNetworkError when there is no answer
   */
  async get(path: string): Promise<Response> {
    const url = `${this.baseUrl}${path}`;
    let response: Response;
    try {
      response = await this.fetch(url, { headers: this.apiKey === undefined ? {} : { 'X-API-Key': this.apiKey } });
    } catch (cause) {
      throw new StoreNetworkError(this.baseUrl, { cause });
    }
    if (response.ok) return response;
    const text = await response.text();
    let detail = text;
    try {
      const body = JSON.parse(text) as { detail?: unknown };
      if (body.detail !== undefined) detail = typeof body.detail === 'string' ? body.detail : JSON.stringify(body.detail);
    } catch {
      // not JSON: the text is the detail
    }
    throw new StoreRequestError(response.status, detail);
  }
}
