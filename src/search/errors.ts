/**
 * Typed errors of the hosted search client (docs/SEARCH.md, "SDK" and "The hosted API").
 *
 * - `SearchArgumentError`: a malformed argument, raised before any request (the SDK's
 *   `ValueError`). A malformed query raises the query language's own `QuerySyntaxError`
 *   (src/query-language/query-syntax-error.ts), which the SDK exports too.
 * - `SearchCredentialsError`: no API key or no workspace to search in.
 * - `SearchApiError`: the hosted API answered non-2xx; carries `status` and the hosted `body`.
 *   Subclasses name the statuses a caller branches on (401, 403, 404, 429, 5xx).
 * - `SearchNetworkError`: no HTTP answer at all (DNS, refused connection, TLS, timeout).
 * - `SearchResponseError`: a 2xx answer whose body is not of the documented shape.
 * - `SearchExportTimeoutError`: an export still not ready when its time ran out.
 *
 * Every message is built from redacted text: the API key never appears in one.
 */

/** Base class of every error the search client raises, but for a malformed query's `QuerySyntaxError` (the query language's). */
export class SearchError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A malformed argument (ValueError-style): nothing was sent to the hosted API. */
export class SearchArgumentError extends SearchError {}

/** Which credential is missing; either maps to CLI exit code 2, like a 401. */
export type MissingCredential = 'apiKey' | 'workspace';

/** No API key or no workspace is configured: CLI exit code 2 (docs/SEARCH.md, "The hosted API"). */
export class SearchCredentialsError extends SearchError {
  constructor(readonly missing: MissingCredential, message: string) {
    super(message);
  }
}

/**
 * The hosted API answered with a non-2xx status. `body` is the parsed JSON body (or the raw text
 * when it is not JSON), already redacted; `hostedMessage` is the human text found in it (the
 * `error` string, `error.message`, `message` or `detail`); `hostedHint` the body's `hint`.
 */
export class SearchApiError extends SearchError {
  readonly status: number;
  readonly body: unknown;
  readonly hostedMessage: string;
  readonly hostedHint: string | undefined;
  /** Method and path of the failed request, e.g. `POST /acme/search/v1` (never the query string). */
  readonly request: string;

  constructor(status: number, body: unknown, request: string) {
    const hostedMessage = hostedMessageOf(body) ?? `HTTP ${status}`;
    super(`Hosted search API answered ${status} to ${request}: ${hostedMessage}`);
    this.status = status;
    this.body = body;
    this.hostedMessage = hostedMessage;
    this.hostedHint = hostedHintOf(body);
    this.request = request;
  }
}

/** 401: missing or invalid key, or a key lacking the required scope. Never retried. */
export class SearchAuthError extends SearchApiError {}

/** 403: the key authenticates but has no access to the workspace or resource. Never retried. */
export class SearchForbiddenError extends SearchApiError {}

/** 404: workspace, project, export or other resource absent or invisible. Never retried. */
export class SearchNotFoundError extends SearchApiError {}

/** 429 after the retries ran out; `retryAfterSeconds` is the last `Retry-After`, if any. */
export class SearchRateLimitError extends SearchApiError {
  constructor(status: number, body: unknown, request: string, readonly retryAfterSeconds: number | undefined) {
    super(status, body, request);
  }
}

/** 5xx after the retries ran out. */
export class SearchServerError extends SearchApiError {}

/** No HTTP answer: DNS, refused or reset connection, TLS failure, timeout. */
export class SearchNetworkError extends SearchError {}

/** A 2xx answer whose body does not have the shape docs/SEARCH.md, "The hosted API", describes. */
export class SearchResponseError extends SearchError {}

/** A search export that did not become ready within its `timeoutMs`. */
export class SearchExportTimeoutError extends SearchError {}

/**
 * Builds the `SearchApiError` subclass that names `status`.
 * @param retryAfterSeconds the `Retry-After` of a 429, when it had one
 */
export function apiErrorFor(status: number, body: unknown, request: string, retryAfterSeconds?: number): SearchApiError {
  if (status === 401) return new SearchAuthError(status, body, request);
  if (status === 403) return new SearchForbiddenError(status, body, request);
  if (status === 404) return new SearchNotFoundError(status, body, request);
  if (status === 429) return new SearchRateLimitError(status, body, request, retryAfterSeconds);
  if (status >= 500) return new SearchServerError(status, body, request);
  return new SearchApiError(status, body, request);
}

/**
 * The human text of a hosted error body: its top-level `error` string, or the `message` of an
 * `error` object (docs/SEARCH.md, "The hosted API"); else a `message` or `detail` string.
 */
function hostedMessageOf(body: unknown): string | undefined {
  if (typeof body === 'string') return body.trim() === '' ? undefined : body.trim();
  if (typeof body !== 'object' || body === null) return undefined;
  const record = body as Record<string, unknown>;
  const error = record.error;
  if (typeof error === 'string') return error;
  if (typeof error === 'object' && error !== null && typeof (error as Record<string, unknown>).message === 'string') {
    return (error as Record<string, string>).message;
  }
  for (const key of ['message', 'detail'] as const) {
    if (typeof record[key] === 'string') return record[key] as string;
  }
  return undefined;
}

function hostedHintOf(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const hint = (body as Record<string, unknown>).hint;
  return typeof hint === 'string' ? hint : undefined;
}
