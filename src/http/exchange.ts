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
 * - an answer given while the body is unread reads the rest and drops it before it ends, within
 *   the lingering-close bounds (`LingeringClose`), and otherwise closes the connection;
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
 * Lingering close, as nginx's `lingering_close` (docs/ARCHITECTURE.md, "The steps of a request",
 * step 10): how much of a request's body the store still reads, and drops, after answering it
 * before the body was read (a 413, 409, 421, 503 or 529 to an upload or a create). Closing a
 * connection whose client is still sending makes the kernel reset it, and the client's next write
 * fails with EPIPE before it has read the answer: Python's urllib and requests, which send the
 * whole body before reading, got `BrokenPipeError` for a 413 after 1 to 3 MB. So the answer goes
 * out at once and the rest of the body is read and dropped; once it is in, the answer ends and the
 * connection is kept, or closed when the client asked so. Past `maxBytes` more bytes or `seconds`,
 * the connection is closed; a body declared longer than `maxBytes` is cut off at once, as is
 * everything when either is 0. Each engine lingers its own way (node-exchange.ts, uws-exchange.ts).
 */
export interface LingeringClose {
  /** Bytes read and dropped after the answer, at most (LINGERING_CLOSE_MAX_BYTES). */
  maxBytes: number;
  /** Seconds after the answer, at most (LINGERING_CLOSE_SECONDS). */
  seconds: number;
}

/**
 * What happens to the connection after a whole answer: `keep` it; `linger`, reading the rest of
 * an unread body first (`LingeringClose`); `close` it at once.
 */
export type AfterAnswer = 'keep' | 'linger' | 'close';

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
  /** Body bytes received when a lingering answer was given; -1 while not lingering. */
  private lingerFrom = -1;
  private lingerTimer: NodeJS.Timeout | undefined;
  /** What ends a lingering answer once the body is in (the engine's). */
  private lingerDone: (() => void) | undefined;
  private stream: ResponseStream | undefined;
  private defaults: ResponseDefaults = { errorShape: 'store', headers: [] };
  private readonly abortHandlers: (() => void)[] = [];

  /** @param lingering how much of an unread body an early answer still reads (`LingeringClose`) */
  protected constructor(head: RequestHead, private readonly lingering: LingeringClose) {
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
   * What an answer given now does with the connection when the caller says nothing: `keep` when
   * the body was read, else `linger` (the rest is read and dropped first), or `close` when
   * lingering is off, the rest is declared longer than LINGERING_CLOSE_MAX_BYTES, or the request
   * is a HEAD.
   */
  private afterAnswer(): AfterAnswer {
    if (!this.bodyLeft) return 'keep';
    const { maxBytes, seconds } = this.lingering;
    const length = this.headers.contentLength;
    const tooLong = !this.bodyChunked && length !== undefined && length - this.bodyBytes > maxBytes;
    return maxBytes <= 0 || seconds <= 0 || tooLong || this.method === 'HEAD' ? 'close' : 'linger';
  }

  /**
   * Engines call this once they gave a lingering answer (`sendWhole` with `linger`), whose end
   * they held back: `done` ends it once the rest of the body is in; the connection is closed
   * instead (`destroyConnection`) once LINGERING_CLOSE_MAX_BYTES more bytes came, or
   * LINGERING_CLOSE_SECONDS passed. The engine keeps reading the body (`countBody`,
   * `markBodyRead`) and drops it.
   */
  protected startLingering(done: () => void): void {
    this.lingerFrom = this.bodyBytes;
    this.lingerDone = done;
    this.lingerTimer = setTimeout(() => this.stopLingering(false), this.lingering.seconds * 1000).unref();
  }

  /** True while a lingering answer waits for the rest of the body (`startLingering`). */
  protected get lingeringNow(): boolean {
    return this.lingerFrom >= 0;
  }

  /** Ends a lingering answer before the body is in (the engine's reason: the client stopped sending and waits for it). */
  protected endLingering(): void {
    this.stopLingering(true);
  }

  /** Ends lingering: the answer's end once the body is in, else the connection closed (unless the client is gone). */
  private stopLingering(bodyIn: boolean): void {
    if (this.lingerFrom < 0) return;
    this.lingerFrom = -1;
    clearTimeout(this.lingerTimer);
    if (bodyIn) this.lingerDone?.();
    else if (!this.clientGone) this.destroyConnection();
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
    this.stopLingering(false);
    for (const handler of this.abortHandlers.splice(0)) handler();
  }

  /** Bytes of the request body received so far (what the engine handed to `onBody`). */
  get bodyBytesRead(): number {
    return this.bodyBytes;
  }

  /** Engines call this with each body chunk's length as it arrives (bytes). */
  protected countBody(bytes: number): void {
    this.bodyBytes += bytes;
    if (this.lingerFrom >= 0 && this.bodyBytes - this.lingerFrom > this.lingering.maxBytes) this.stopLingering(false);
  }

  /** Engines call this when the request body's last chunk arrived. */
  protected markBodyRead(): void {
    this.bodyLeft = false;
    this.stopLingering(true);
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
   * @param closeConnection true: close the connection at once after sending (a body whose end is
   *   unknown); false: keep it; unset: keep it when the body was read, else read the rest of the
   *   body and drop it first (lingering close, `LingeringClose`), or close when that is off or the
   *   body too long
   */
  send(status: number, body: string | Buffer, headers: Record<string, string> = {}, closeConnection?: boolean): void {
    if (this.clientGone || this.started) return;
    this.started = true;
    this.sentStatus = status;
    const after = closeConnection === undefined ? this.afterAnswer() : closeConnection ? 'close' : 'keep';
    this.sendWhole(status, body, [...Object.entries(headers), ...this.defaults.headers], after);
  }

  /** Sends `value` as JSON (`closeConnection` as `send`'s). */
  json(status: number, value: unknown, headers: Record<string, string> = {}, closeConnection?: boolean): void {
    this.send(status, JSON.stringify(value), { 'Content-Type': 'application/json', ...headers }, closeConnection);
  }

  /**
   * The one place errors become responses (docs/API.md, "Errors"): an AppError answers its
   * registered status with a body in `errorShape` (`{"detail": ...}`, with `errors` when the
   * error lists its problems one by one, `{"error": "..."}`, or an HTML page);
   * anything else answers 500 as an `index_damaged` or a `store_failure` whose cause it is
   * (errors.ts `fromUnexpectedError`). 5xx codes the registry
   * does not mark quiet are reported to `log` as that AppError, its cause chain included (the
   * logger writes each cause with its fields: docs/OPERATIONS.md, "Logs"). Nothing is written
   * when a response was already sent or started, or the client is gone.
   * @param closeConnection as `send`'s: unset, a body not read to its end is read and dropped
   *   after the answer (lingering close) or the connection closed
   */
  fail(err: unknown, log: (err: AppError) => void, closeConnection?: boolean): void {
    const appError = fromUnexpectedError(err);
    if (isLoggedFailure(appError.code)) log(appError);
    if (this.defaults.errorShape === 'page') {
      const headers = { 'Content-Type': 'text/html; charset=utf-8', 'Content-Security-Policy': ERROR_PAGE_POLICY, 'X-Content-Type-Options': 'nosniff', ...appError.headers };
      this.send(appError.status, errorPage(appError), headers, closeConnection);
      return;
    }
    const body = this.defaults.errorShape === 'hosted' ? { error: appError.message }
      : { detail: appError.detail, ...(appError.issues === undefined ? {} : { errors: appError.issues }) };
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

  /**
   * Sends the whole response (engine part of `send`), then does `after` with the connection; for
   * `linger` the engine sends the answer, reads the rest of the body and drops it, and calls
   * `startLingering` with what ends the answer.
   */
  protected abstract sendWhole(status: number, body: string | Buffer, headers: [string, string][], after: AfterAnswer): void;

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
