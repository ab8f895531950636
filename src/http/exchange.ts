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
 * - a response is either whole (`send`, `json`, `fail`) or streamed (`startResponse`, `write`,
 *   `writable`, `end`), with backpressure; nothing is written after abort or end;
 * - `closeConnection` closes the connection after the response (a body left unread).
 */
import { AppError, isLoggedFailure } from '../errors.js';

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
 * `hosted`, `{"error": "..."}` as the hosted search API answers (the search gateway's routes).
 */
export type ErrorShape = 'store' | 'hosted';

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

export abstract class Exchange {
  readonly method: string;
  readonly url: string;
  readonly query: string;
  readonly params: string[];
  readonly headers: RequestHeaders;
  /** True once the client went away; nothing may be written then. */
  aborted = false;
  /** True once a response was started (streamed) or sent. */
  done = false;
  /** True while the request body has not been read to its end (a POST until its last chunk). */
  bodyPending: boolean;
  /** The shape `fail` writes errors in; set by the route wrapper. */
  errorShape: ErrorShape = 'store';
  /** Headers every response of this exchange carries (CORS headers for an allowed origin). */
  responseHeaders: [string, string][] = [];
  private readonly abortHandlers: (() => void)[] = [];

  protected constructor(head: RequestHead) {
    this.method = head.method;
    this.url = head.url;
    this.query = head.query;
    this.params = head.rawParams.map(decodePathSegment);
    this.headers = head.headers;
    this.bodyPending = (head.headers.contentLength ?? 0) > 0 || head.chunked;
  }

  /** Engines call this once when the client disconnects before the response ended. */
  protected markAborted(): void {
    if (this.aborted) return;
    this.aborted = true;
    for (const handler of this.abortHandlers.splice(0)) handler();
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
    if (this.aborted || this.done) return;
    this.done = true;
    this.sendWhole(status, body, [...Object.entries(headers), ...this.responseHeaders], closeConnection);
  }

  /** Sends `value` as JSON. */
  json(status: number, value: unknown, headers: Record<string, string> = {}, closeConnection = false): void {
    this.send(status, JSON.stringify(value), { 'Content-Type': 'application/json', ...headers }, closeConnection);
  }

  /**
   * The one place errors become responses: an AppError answers its registered status with a
   * body in `errorShape` (`{"detail": ...}` or `{"error": "..."}`); anything else answers 500.
   * Unexpected errors and 5xx codes the registry does not mark quiet are reported to `log`.
   */
  fail(err: unknown, log: (err: unknown) => void, closeConnection = false): void {
    const appError = err instanceof AppError ? err : new AppError('store_failure');
    if (!(err instanceof AppError) || isLoggedFailure(appError.code)) log(err);
    const body = this.errorShape === 'hosted' ? { error: appError.message } : { detail: appError.detail };
    this.json(appError.status, body, appError.headers, closeConnection);
  }

  /**
   * Starts a streamed response: status and headers go out with the first `write` or `end`.
   * Does nothing when the client is gone or a response was already sent.
   * @param totalBytes the exact body length (sent as Content-Length; the response is complete
   *   once that many bytes were written), or undefined for a chunked body ended by `end`
   * @param reason reason phrase (default: the standard one of `status`)
   * @returns false when nothing may be written (aborted, or a response was already sent)
   */
  startResponse(status: number, headers: HeaderPairs, totalBytes?: number, reason?: string): boolean {
    if (this.aborted || this.done) return false;
    this.done = true;
    this.beginStream(status, reason ?? statusText(status), [...headers, ...this.responseHeaders], totalBytes);
    return true;
  }

  /** Sends the whole response (engine part of `send`). */
  protected abstract sendWhole(status: number, body: string | Buffer, headers: [string, string][], closeConnection: boolean): void;

  /** Records the head of a streamed response (engine part of `startResponse`). */
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

  /**
   * Writes a chunk of a started response. The engine may keep a reference to `chunk` until it
   * calls `released`: do not modify or reuse it before. Nothing happens when the client is gone.
   * @param released called once the engine holds no reference to `chunk` any more (at once when
   *   nothing was kept); may never be called when the connection dies under a write, so a
   *   pooled chunk then goes to the garbage collector instead
   * @returns false when the client is behind: wait for `writable()` before the next write
   */
  abstract write(chunk: Buffer, released?: () => void): boolean;

  /** Resolves when more may be written after `write` answered false, or the client went away. */
  abstract writable(): Promise<void>;

  /** Ends a started response, with a last chunk or none (with `totalBytes`, after the last write). */
  abstract end(chunk?: Buffer): void;

  /** Closes the connection at once: a streamed response that cannot be completed. */
  abstract destroy(): void;
}
