/**
 * The one registry of coded errors: every failure the store answers with has a code here, its
 * HTTP status and its default message. `Exchange.fail` (src/http/exchange.ts) is the one place
 * that maps an `AppError` to a response, and logs it with its cause chain; nothing else chooses
 * a status code.
 *
 * Rules E1..E10 and every code with its status are docs/API.md, "Errors" (a test keeps that
 * table, this registry and the error responses of /openapi.json in step).
 */

/** One entry of a 422 request-validation body, FastAPI-shaped. */
export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

const registry = {
  unauthorized: { status: 401, message: 'Missing or invalid X-API-Key' },
  not_found: { status: 404, message: 'Not Found' },
  event_not_found: { status: 404, message: 'Event not found' },
  file_not_found: { status: 404, message: 'File not found' }, // E9
  method_not_allowed: { status: 405, message: 'Method Not Allowed' },
  // A request without a Host, or with one that is not host[:port] (RFC 9110, 7.2), refused before it is routed.
  malformed_host: { status: 400, message: 'Bad Request: the Host header is missing or is not host[:port]' },
  // A browser's request under a name that is not the store's (DNS rebinding), or from another origin.
  misdirected_request: { status: 421, message: 'Misdirected Request: Host is not a name of this store' },
  cross_origin_refused: { status: 403, message: 'Requests from another origin may not change this store' },
  unsupported_content_type: { status: 415, message: 'Content-Type must be application/json' },
  // Request framing RFC 9112 says to refuse (section 6); the node:http engine's parser refuses it itself.
  ambiguous_length: { status: 400, message: 'Bad Request: more than one Content-Length' },
  transfer_coding_unsupported: { status: 501, message: 'Not Implemented: the only transfer coding accepted is chunked', quiet: true },
  solution_required: { status: 400, message: 'solution is required when cloud upload is enabled and DEFAULT_SOLUTION_ID is unset' }, // E1
  event_data_invalid: { status: 400, message: 'event_data does not conform to the schema' }, // E2
  image_decode_failed: { status: 400, message: 'Image could not be decoded from base64' }, // E3
  unknown_event_schema: { status: 422, message: 'Unknown event_schema' }, // E4
  thumbnail_unavailable: { status: 422, message: 'The stored image cannot be made into a thumbnail' }, // a format not allowed (SVG...), no image sharp decodes, too many pixels, too slow
  invalid_query: { status: 400, message: 'Invalid query filter' }, // E5
  invalid_search_query: { status: 400, message: 'Invalid search query' }, // a query of GET /v2/events/search or /v2/export that does not parse
  validation_failed: { status: 422, message: 'Request validation failed' }, // E6, E7
  malformed_multipart: { status: 400, message: 'Malformed multipart body' },
  event_finalized: { status: 409, message: 'Event is finalized; attachments are closed' }, // E8
  record_too_large: { status: 413, message: 'Record exceeds MAX_RECORD_SIZE_BYTES' },
  upload_too_large: { status: 413, message: 'Upload exceeds the size limit' },
  unsupported_video: { status: 415, message: 'Content is not a supported video format' },
  range_not_satisfiable: { status: 416, message: 'Requested range not satisfiable' },
  reset_token_invalid: { status: 400, message: 'Missing, invalid, expired or used reset token' },
  disk_full: { status: 507, message: 'Insufficient storage: the disk is full' },
  // E10: back-pressure, not a failure; the capacity gate logs when it closes and counts the rest.
  capacity_blocked: { status: 529, message: 'Store is over its capacity limits and waiting for uploads to drain', quiet: true },
  // Back-pressure: JSON bodies held at once would pass MAX_INFLIGHT_BODY_BYTES; sent with Retry-After, counted in /metrics.
  body_budget_full: { status: 503, message: 'Service Unavailable: request bodies in memory are at MAX_INFLIGHT_BODY_BYTES; retry after Retry-After', quiet: true },
  // A write or sync of the log failed with an I/O error (a bad flash page): the store moved to a new segment; sent with Retry-After.
  disk_io_error: { status: 503, message: 'Service Unavailable: the disk returned an I/O error writing the event log; nothing was stored. The store writes to a new segment from now on; retry after Retry-After' },
  // Back-pressure: THUMBNAIL_QUEUE_MAX thumbnails already wait to be made; sent with Retry-After (src/events/thumbnails.ts).
  thumbnails_busy: { status: 503, message: 'Service Unavailable: too many thumbnails are waiting to be made; retry after Retry-After', quiet: true },
  store_failure: { status: 500, message: 'Internal store failure' },
  // LMDB found a page of the index that is not what it should be (a bad flash page): the log still holds every event.
  index_damaged: { status: 500, message: 'The index (db/data.mdb or a block in blocks/) is damaged: stop the store and run `edge-events check --repair`, which rebuilds it from the log' },
  upstream_unreachable: { status: 502, message: 'Hosted API unreachable' },
  search_request_invalid: { status: 400, message: 'Invalid search request' }, // the hosted API's 400, answered on the device (docs/API.md, "Search gateway")
} as const satisfies Record<string, { status: number; message: string; quiet?: true }>;

export type ErrorCode = keyof typeof registry;

/** One registered error: its HTTP status and the message a client reads when no detail is given. */
export interface RegisteredError {
  status: number;
  message: string;
}

/** The registry, read-only: code -> status and default message (docs/API.md, "Errors"). */
export const errorRegistry: Readonly<Record<ErrorCode, RegisteredError>> = registry;

/**
 * True when a failure with this code is reported to the log: every 5xx but the `quiet` ones
 * (expected answers under load, logged where their state changes). 4xx are the client's.
 */
export function isLoggedFailure(code: ErrorCode): boolean {
  const entry: { status: number; quiet?: true } = registry[code];
  return entry.status >= 500 && entry.quiet !== true;
}

/** What an AppError carries besides its code and detail. */
export interface AppErrorOptions {
  /** Extra response headers, e.g. `Content-Range` on 416 or `Allow` on 405. */
  headers?: Record<string, string>;
  /**
   * The lower error this one stands for (an fs or LMDB error, a worker's failure, a parser's
   * error): kept as the standard `Error.cause`, logged with the failure, never sent to the client.
   */
  cause?: unknown;
  /**
   * Each problem of a string `detail` on its own, shaped as a 422's issues: sent as `errors`
   * beside the detail (`event_data_invalid`, E2, whose detail the contract keeps a string).
   */
  issues?: ValidationIssue[];
}

/**
 * A failure with a registered code. `detail` is what the client reads: a string, or for
 * `validation_failed` a list of FastAPI-shaped issues (default: the registry's message).
 * `headers` are extra response headers; `cause` is the error wrapped, if any; `issues` the
 * problems of a string detail one by one, sent as `errors`.
 */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly detail: string | ValidationIssue[];
  readonly headers: Record<string, string>;
  readonly issues: ValidationIssue[] | undefined;

  constructor(code: ErrorCode, detail?: string | ValidationIssue[], options: AppErrorOptions = {}) {
    const entry = registry[code];
    const message = typeof detail === 'string' ? detail : entry.message;
    // Only an error that has a cause carries the property (`'cause' in err` says so).
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.status = entry.status;
    this.detail = detail ?? entry.message;
    this.headers = options.headers ?? {};
    this.issues = options.issues;
  }
}

/**
 * Builds a 422 `validation_failed` error from one issue; `loc` as FastAPI spells it.
 * @param cause the error that showed the input invalid (e.g. JSON.parse's), kept for the log
 */
export function validationError(loc: (string | number)[], msg: string, type = 'value_error', cause?: unknown): AppError {
  return new AppError('validation_failed', [{ loc, msg, type }], { cause });
}

/**
 * Maps an error of a disk write or an LMDB commit to the registry, keeping it as the cause:
 * ENOSPC/EDQUOT become `disk_full` (507), anything else `store_failure` (500); an AppError (a
 * refusal decided below) is returned as it is.
 */
export function fromDiskError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOSPC' || code === 'EDQUOT') return new AppError('disk_full', undefined, { cause: err });
  return fromUnexpectedError(err);
}

/**
 * LMDB's codes for a page of the index that does not read as the B-tree says it should (lmdb.h:
 * MDB_PAGE_NOTFOUND, MDB_CORRUPTED), which lmdb-js sets as the `code` of the error it throws
 * (its src/misc.cpp, `throwLmdbError`).
 */
const LMDB_DAMAGE_CODES: ReadonlySet<unknown> = new Set([-30797, -30796]);

/** The error a block file that does not read back as written throws (src/store/block/block-format.ts; docs/STORAGE.md, "Blocks"). */
const BLOCK_DAMAGED = 'BlockDamaged';

/**
 * Maps an error no layer decided on to the registry, keeping it as the cause: `index_damaged`
 * (500, naming `edge-events check --repair`: docs/OPERATIONS.md, "Checking and repairing a data
 * folder") when it, or an error in its cause chain, is LMDB finding a damaged page or a block
 * failing its CRC32C; else
 * `store_failure` (500). An AppError is returned as it is.
 */
export function fromUnexpectedError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  for (let e = err; e instanceof Error; e = e.cause) {
    if (LMDB_DAMAGE_CODES.has((e as { code?: unknown }).code) || e.name === BLOCK_DAMAGED) return new AppError('index_damaged', undefined, { cause: err });
  }
  return new AppError('store_failure', undefined, { cause: err });
}

/**
 * Maps an error of an append to the segment log (a create or a change) as `fromDiskError` does,
 * but for EIO: `disk_io_error` (503 with Retry-After), since the log has given that segment up
 * and the next append goes to a new one (docs/STORAGE.md, "An I/O error in the log").
 */
export function fromLogWriteError(err: unknown): AppError {
  if ((err as NodeJS.ErrnoException | undefined)?.code === 'EIO') return new AppError('disk_io_error', undefined, { cause: err, headers: { 'Retry-After': '1' } });
  return fromDiskError(err);
}

/**
 * An error as plain data, for crossing a thread boundary: postMessage's structured clone keeps
 * only an Error's name, message and stack, not the `code`, `errno`, `syscall` or `path` an fs
 * error carries, nor an AppError's code, detail, headers and cause.
 */
export interface ErrorReport {
  name: string;
  message: string;
  stack?: string;
  code?: string;
  errno?: number;
  syscall?: string;
  path?: string;
  /** An AppError's own fields. */
  app?: { code: ErrorCode; detail: string | ValidationIssue[]; headers: Record<string, string>; issues?: ValidationIssue[] };
  /** The report of its `cause`, if it has one. */
  cause?: ErrorReport;
}

/** The report of `err` (anything thrown), to post to another thread. */
export function errorReport(err: unknown): ErrorReport {
  if (!(err instanceof Error)) return { name: 'Error', message: String(err) };
  const { code, errno, syscall, path } = err as NodeJS.ErrnoException;
  const report: ErrorReport = { name: err.name, message: err.message, stack: err.stack, code, errno, syscall, path };
  if (err instanceof AppError) report.app = { code: err.code, detail: err.detail, headers: err.headers, issues: err.issues };
  if ('cause' in err) report.cause = errorReport(err.cause);
  return report;
}

/** An Error made again from a report (another thread's error), with its stack, fs fields and cause; an AppError as one. */
export function errorFromReport(report: ErrorReport): Error {
  const { name, message, stack, app, cause, ...fields } = report;
  const causeOption = cause === undefined ? undefined : errorFromReport(cause);
  if (app) {
    const err = new AppError(app.code, app.detail, { headers: app.headers, cause: causeOption, issues: app.issues });
    if (stack !== undefined) err.stack = stack;
    return err;
  }
  const err = Object.assign(new Error(message, causeOption === undefined ? undefined : { cause: causeOption }),
    Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)));
  err.name = name;
  if (stack !== undefined) err.stack = stack;
  return err;
}
