/**
 * One request/response exchange, the same for every HTTP engine (docs/OPERATIONS.md, "HTTP
 * engines"): the route table, JSON bodies, uploads, downloads and the search proxy use only this
 * class, and each engine (uws/uws-exchange.ts, node/node-exchange.ts) implements its abstract part.
 *
 * The contract, whatever the engine:
 * - the request's method, path, query, route parameters and the headers the store reads are
 *   copied when the exchange is made; abort handling is attached at once;
 * - the body is streamed: `onBody` delivers chunks (valid only during the call: copy to keep),
 *   `pauseBody`/`resumeBody` hold the socket while the reader is behind. Call `onBody`
 *   synchronously in the route handler, before any await (uWebSockets.js drops chunks otherwise);
 * - a response is either whole (`send`, `json`, `fail`), or written by the handler itself after
 *   `takeOver` (fastify's `reply.hijack()`): the returned ResponseStream starts it and streams
 *   the body with backpressure; nothing is written after abort or end;
 * - `closeConnection` closes the connection after the response (a body left unread);
 * - the state (`aborted`, `responded`, `bodyUnread`, `takenOver`) is read-only outside: the
 *   engines set it through the protected `markAborted` and `markBodyRead`.
 */
import { AppError, fromUnexpectedError, isLoggedFailure } from '../errors.js';
import { ERROR_PAGE_POLICY, errorPage } from './error-page.js';

const STATUS_TEXT: Record<number, string> = {
  200: 'OK', 201: 'Created', 206: 'Partial Content', 400: 'Bad Request', 401: 'Unauthorized',
  403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed', 409: 'Conflict', 413: 'Payload Too Large',
  415: 'Unsupported Media Type', 416: 'Range Not Satisfiable', 421: 'Misdirected Request', 422: 'Unprocessable Entity',
  500: 'Internal Server Error', 501: 'Not Implemented', 502: 'Bad Gateway', 503: 'Service Unavailable',
  507: 'Insufficient Storage', 529: 'Site Overloaded',
};

/** Reason phrase of `status` ('' when the store has none for it). */
export const statusText = (status: number): string => STATUS_TEXT[status] ?? '';

/** `200 OK`-style status line. */
export const statusLine = (status: number, text = statusText(status)): string => `${status} ${text}`.trim();

/** Percent-decodes a path segment; a malformed escape (`%zz`) is kept as written. */
export function decodePathSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** Request headers the store reads; everything else is ignored. Absent headers are ''. */
export interface RequestHeaders {
  apiKey: string;
  contentType: string;
  contentLength: number | undefined;
  range: string;
  /** `Last-Event-ID`: where a reconnecting event-stream client resumes (docs/API.md, "Live stream"). */
  lastEventId: string;
  /** `Host`, `Origin` and `Sec-Fetch-Site`, for the browser guard (browser-guard.ts). */
  host: string;
  origin: string;
  fetchSite: string;
}

/**
 * How errors are written: `store`, FastAPI-shaped `{"detail": ...}` (the store's routes);
 * `hosted`, `{"error": "..."}` as the hosted search API answers (the search gateway's routes);
 * `page`, a small HTML page (the operator page's HTML, which a person opens: error-page.ts).
 */
export type ErrorShape = 'store' | 'hosted' | 'page';

/** What an engine copies from a request when it makes the exchange. */
export interface RequestHead {
  /** Upper case. */
  method: string;
  /** The path as sent (not decoded), without the query. */
  url: string;
  /** The query string without `?` ('' when none). */
  query: string;
  /** Route parameters as sent (percent-encoded); decoded here. */
  rawParams: string[];
  headers: RequestHeaders;
  /** A Transfer-Encoding header is present (a chunked body follows). */
  chunked: boolean;
}

/** Response headers as name/value pairs (a name may repeat). */
export type HeaderPairs = Iterable<readonly [string, string]>;

/**
 * The response of an exchange whose handler writes it itself (`Exchange.takeOver`): status and
 * headers with `start`, then the body in chunks, with backpressure.
 */
export interface ResponseStream {
  /** True once the client went away; nothing is written then. */
  readonly aborted: boolean;
  /**
   * Starts the response: status and headers go out with the first `write` or `end`.
   * @param totalBytes the exact body length (sent as Content-Length; the response is complete
   *   once that many bytes were written), or undefined for a chunked body ended by `end`
   * @param reason reason phrase (default: the standard one of `status`)
   * @returns false when nothing may be written (aborted, or a response was already sent)
   */
  start(status: number, headers: HeaderPairs, totalBytes?: number, reason?: string): boolean;
  /**
   * Writes a chunk of the started response. The engine may keep a reference to `chunk` until it
   * calls `released`: do not modify or reuse it before. Nothing happens when the client is gone.
   * @param released called once the engine holds no reference to `chunk` any more (at once when
   *   nothing was kept); may never be called when the connection dies under a write, so a
   *   pooled chunk then goes to the garbage collector instead
   * @returns false when the client is behind: wait for `writable()` before the next write
   */
  write(chunk: Buffer, released?: () => void): boolean;
  /** Resolves when more may be written after `write` answered false, or the client went away. */
  writable(): Promise<void>;
  /** Ends the started response, with a last chunk or none (with `totalBytes`, after the last write). */
  end(chunk?: Buffer): void;
  /** Closes the connection at once: a started response that cannot be completed. */
  destroy(): void;
}

/** How every response of an exchange is written, whatever its route (set by the route table). */
export interface ResponseDefaults {
  /** The shape `fail` writes errors in. */
  errorShape: ErrorShape;
  /** Headers every response carries (CORS headers for an allowed origin). */
  headers: [string, string][];
}

/**
 * The most bytes of a refused request's body the store still reads, and drops, when it answers
 * before reading it (8 MiB, or a JSON route's body limit: `drainUpTo`; docs/ARCHITECTURE.md, "The
 * steps of a request", step 10). Closing a connection whose client is still sending makes
 * the kernel reset it, and the client's next write
 * fails with EPIPE, often before it has read the answer: a 409 or 529 to an upload reached Node's
 * fetch as "fetch failed" in one try in three on node:http. Reading the rest lets the client finish
 * and read the answer, and the connection stays open. A longer body, or one of unknown length, is
 * cut off (`Connection: close`). Each engine drains its own way (node-exchange.ts, uws-exchange.ts).
 */
export const DRAIN_MAX_BYTES = 8 * 1024 * 1024;

export abstract class Exchange {
  readonly method: string;
  readonly url: string;
  readonly query: string;
  readonly params: string[];
  readonly headers: RequestHeaders;
  private clientGone = false;
  private started = false;
  private sentStatus = 0;
  private bodyLeft: boolean;
  private readonly bodyChunked: boolean;
  private bodyBytes = 0;
  private drainMaxBytes = DRAIN_MAX_BYTES;
  private stream: ResponseStream | undefined;
  private defaults: ResponseDefaults = { errorShape: 'store', headers: [] };
  private readonly abortHandlers: (() => void)[] = [];

  protected constructor(head: RequestHead) {
    this.method = head.method;
    this.url = head.url;
    this.query = head.query;
    this.params = head.rawParams.map(decodePathSegment);
    this.headers = head.headers;
    this.bodyLeft = (head.headers.contentLength ?? 0) > 0 || head.chunked;
    this.bodyChunked = head.chunked;
  }

  /** True once the client went away; nothing may be written then. */
  get aborted(): boolean {
    return this.clientGone;
  }

  /** The status of the response sent or started; 0 while there is none. */
  get status(): number {
    return this.sentStatus;
  }

  /** True once a response was sent, or started by a handler that took the response over. */
  get responded(): boolean {
    return this.started;
  }

  /** True while the request body has not been read to its end (a POST until its last chunk). */
  get bodyUnread(): boolean {
    return this.bodyLeft;
  }

  /**
   * True while the unread rest of the body has a declared length of at most DRAIN_MAX_BYTES (or
   * what `drainUpTo` set): an answer given now reads it and drops it instead of closing the connection.
   */
  protected get bodyDrainable(): boolean {
    const length = this.headers.contentLength;
    return this.bodyLeft && !this.bodyChunked && length !== undefined && length - this.bodyBytes <= this.drainMaxBytes;
  }

  /**
   * Lets an answer given before the body was read drain up to `bytes` of it (more than
   * DRAIN_MAX_BYTES only): a JSON route drains any body within its limit, so that a create refused
   * 503 `body_budget_full` before its 20 MiB were read reaches its client, which retries.
   * @param bytes bytes
   */
  drainUpTo(bytes: number): void {
    this.drainMaxBytes = Math.max(DRAIN_MAX_BYTES, bytes);
  }

  /** True once a handler took the response over (`takeOver`): it writes the response itself. */
  get takenOver(): boolean {
    return this.stream !== undefined;
  }

  /** Sets how every response of this exchange is written (the route table, before the handler runs). */
  setResponseDefaults(defaults: ResponseDefaults): void {
    this.defaults = defaults;
  }

  /** Engines call this once when the client disconnects before the response ended. */
  protected markAborted(): void {
    if (this.clientGone) return;
    this.clientGone = true;
    for (const handler of this.abortHandlers.splice(0)) handler();
  }

  /** Bytes of the request body received so far (what the engine handed to `onBody`). */
  get bodyBytesRead(): number {
    return this.bodyBytes;
  }

  /** Engines call this with each body chunk's length as it arrives (bytes). */
  protected countBody(bytes: number): void {
    this.bodyBytes += bytes;
  }

  /** Engines call this when the request body's last chunk arrived. */
  protected markBodyRead(): void {
    this.bodyLeft = false;
  }

  /** Registers work to undo when the client disconnects (e.g. remove a staging file). */
  onAbort(handler: () => void): void {
    if (this.aborted) handler();
    else this.abortHandlers.push(handler);
  }

  /** The query string as URLSearchParams. */
  searchParams(): URLSearchParams {
    return new URLSearchParams(this.query);
  }

  /**
   * Sends a complete response, unless the client is gone or a response was already started.
   * @param closeConnection close after sending (e.g. when the request body was not consumed)
   */
  send(status: number, body: string | Buffer, headers: Record<string, string> = {}, closeConnection = false): void {
    if (this.clientGone || this.started) return;
    this.started = true;
    this.sentStatus = status;
    this.sendWhole(status, body, [...Object.entries(headers), ...this.defaults.headers], closeConnection);
  }

  /** Sends `value` as JSON. */
  json(status: number, value: unknown, headers: Record<string, string> = {}, closeConnection = false): void {
    this.send(status, JSON.stringify(value), { 'Content-Type': 'application/json', ...headers }, closeConnection);
  }

  /**
   * The one place errors become responses (docs/API.md, "Errors"): an AppError answers its
   * registered status with a body in `errorShape` (`{"detail": ...}`, `{"error": "..."}`, or an
   * HTML page);
   * anything else answers 500 as an `index_damaged` or a `store_failure` whose cause it is
   * (errors.ts `fromUnexpectedError`). 5xx codes the registry
   * does not mark quiet are reported to `log` as that AppError, its cause chain included (the
   * logger writes each cause with its fields: docs/OPERATIONS.md, "Logs"). Nothing is written
   * when a response was already sent or started, or the client is gone.
   * @param closeConnection close after answering (default: when the request body was not read
   *   to its end, since nothing else could read it)
   */
  fail(err: unknown, log: (err: AppError) => void, closeConnection = this.bodyLeft): void {
    const appError = fromUnexpectedError(err);
    if (isLoggedFailure(appError.code)) log(appError);
    if (this.defaults.errorShape === 'page') {
      const headers = { 'Content-Type': 'text/html; charset=utf-8', 'Content-Security-Policy': ERROR_PAGE_POLICY, 'X-Content-Type-Options': 'nosniff', ...appError.headers };
      this.send(appError.status, errorPage(appError), headers, closeConnection);
      return;
    }
    const body = this.defaults.errorShape === 'hosted' ? { error: appError.message } : { detail: appError.detail };
    this.json(appError.status, body, appError.headers, closeConnection);
  }

  /**
   * Takes the response over (fastify's `reply.hijack()`): the handler writes it itself through
   * the returned stream, and the route table sends nothing of its own once the handler is done.
   * An error the handler throws before `start` is still answered by `fail`; after, the handler
   * must end or destroy the response. Calling it again returns the same stream.
   */
  takeOver(): ResponseStream {
    if (this.stream) return this.stream;
    const clientGone = () => this.clientGone;
    this.stream = {
      get aborted() {
        return clientGone();
      },
      start: (status, headers, totalBytes, reason) => {
        if (this.clientGone || this.started) return false;
        this.started = true;
        this.sentStatus = status;
        this.beginStream(status, reason ?? statusText(status), [...headers, ...this.defaults.headers], totalBytes);
        return true;
      },
      write: (chunk, released) => this.writeChunk(chunk, released),
      writable: () => this.whenWritable(),
      end: (chunk) => this.endStream(chunk),
      destroy: () => this.destroyConnection(),
    };
    return this.stream;
  }

  /** Sends the whole response (engine part of `send`). */
  protected abstract sendWhole(status: number, body: string | Buffer, headers: [string, string][], closeConnection: boolean): void;

  /** Records the head of a streamed response (engine part of `ResponseStream.start`). */
  protected abstract beginStream(status: number, reason: string, headers: (readonly [string, string])[], totalBytes: number | undefined): void;

  /**
   * Delivers the request body: `handler(chunk, isLast)` per chunk, the last one (possibly empty)
   * with `isLast` true. The chunk is valid only during the call: copy what must be kept.
   */
  abstract onBody(handler: (chunk: Buffer, isLast: boolean) => void): void;

  /** Stops reading the request body until `resumeBody` (backpressure towards the client). */
  abstract pauseBody(): void;

  /** Resumes reading the request body after `pauseBody`. */
  abstract resumeBody(): void;

  /** Engine part of `ResponseStream.write` (same contract). */
  protected abstract writeChunk(chunk: Buffer, released?: () => void): boolean;

  /** Engine part of `ResponseStream.writable`. */
  protected abstract whenWritable(): Promise<void>;

  /** Engine part of `ResponseStream.end`. */
  protected abstract endStream(chunk?: Buffer): void;

  /** Engine part of `ResponseStream.destroy`. */
  protected abstract destroyConnection(): void;
}
