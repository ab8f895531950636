/**
 * One request/response exchange over uWebSockets.js, made safe for async handlers
 * (DESIGN.md, "uWebSockets.js pitfalls"): the request's fields are copied before the handler
 * returns, `onAborted` is attached at once, `res` is never touched after abort or end, and
 * every write from async code happens inside `res.cork()`.
 */
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { AppError, isLoggedFailure } from '../errors.js';

const STATUS_TEXT: Record<number, string> = {
  200: 'OK', 201: 'Created', 206: 'Partial Content', 400: 'Bad Request', 401: 'Unauthorized',
  404: 'Not Found', 405: 'Method Not Allowed', 409: 'Conflict', 413: 'Payload Too Large',
  415: 'Unsupported Media Type', 416: 'Range Not Satisfiable', 422: 'Unprocessable Entity',
  500: 'Internal Server Error', 502: 'Bad Gateway', 503: 'Service Unavailable',
  507: 'Insufficient Storage', 529: 'Site Overloaded',
};

/** `200 OK`-style status line for uWS `writeStatus`. */
export const statusLine = (status: number): string => `${status} ${STATUS_TEXT[status] ?? ''}`.trim();

/** Percent-decodes a path segment; a malformed escape (`%zz`) is kept as written. */
function decodePathSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** Request headers the store reads; everything else is ignored. */
export interface RequestHeaders {
  apiKey: string;
  contentType: string;
  contentLength: number | undefined;
  range: string;
}

/**
 * How errors are written: `store`, FastAPI-shaped `{"detail": ...}` (the store's routes);
 * `hosted`, `{"error": "..."}` as the hosted search API answers (the search gateway's routes).
 */
export type ErrorShape = 'store' | 'hosted';

export class Exchange {
  readonly method: string;
  readonly url: string;
  readonly query: string;
  readonly params: string[];
  readonly headers: RequestHeaders;
  /** True once the client went away; nothing may be written then. */
  aborted = false;
  /** True once a response was ended. */
  done = false;
  /** True while the request body has not been read to its end (a POST until its last chunk). */
  bodyPending: boolean;
  /** The shape `fail` writes errors in; set by the route wrapper. */
  errorShape: ErrorShape = 'store';
  private readonly abortHandlers: (() => void)[] = [];

  /**
   * Copies what the handler needs from `req` (valid only during the uWS callback) and attaches
   * the abort handler. Call synchronously at the start of the uWS route callback.
   * @param paramCount number of `:param` segments of the route pattern
   */
  constructor(readonly res: HttpResponse, req: HttpRequest, paramCount: number) {
    this.method = req.getMethod().toUpperCase();
    this.url = req.getUrl();
    this.query = req.getQuery() ?? '';
    this.params = Array.from({ length: paramCount }, (_, i) => decodePathSegment(req.getParameter(i) ?? ''));
    const length = req.getHeader('content-length');
    this.headers = {
      apiKey: req.getHeader('x-api-key'),
      contentType: req.getHeader('content-type'),
      contentLength: length === '' ? undefined : Number(length),
      range: req.getHeader('range'),
    };
    this.bodyPending = (this.headers.contentLength ?? 0) > 0 || req.getHeader('transfer-encoding') !== '';
    res.onAborted(() => {
      this.aborted = true;
      for (const handler of this.abortHandlers) handler();
    });
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
   * Sends a complete response, unless the client is gone or a response was already sent.
   * @param closeConnection close after sending (e.g. when the request body was not consumed)
   */
  send(status: number, body: string | Buffer, headers: Record<string, string> = {}, closeConnection = false): void {
    if (this.aborted || this.done) return;
    this.done = true;
    this.res.cork(() => {
      this.res.writeStatus(statusLine(status));
      for (const [name, value] of Object.entries(headers)) this.res.writeHeader(name, value);
      this.res.end(body, closeConnection);
    });
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
}
