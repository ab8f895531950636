/**
 * Forwarding half of the store's search gateway (docs/API.md, "Search gateway"): checks a
 * client's body with the hosted client's own validators, sends it to the hosted path it names
 * with the device's `api_key`, and hands back the hosted status, the headers a client needs
 * (Content-Type, Retry-After, RateLimit-*) and the body as a stream of chunks with the device key
 * masked. No retries: the client decides (it sees Retry-After). Knows nothing of HTTP serving;
 * `src/http/search-proxy-routes.ts` writes the answer out.
 */
import { AppError, errorFromReport, errorReport } from '../errors.js';
import { REDACTED, redact, secretsRegex } from '../redact.js';
import { validateProjectSearchBody, validateQuery, validateWorkspaceSearchBody } from './request-validation.js';
import { SearchArgumentError } from './errors.js';
import { QuerySyntaxError } from '../query-language/query-syntax-error.js';

/**
 * The hosted calls the gateway forwards: the two searches, the export flow, and the read-only
 * calls the public SDK bootstraps with (which workspace a key belongs to, the workspace, a project).
 */
export type ProxiedSearch = 'project' | 'workspace' | 'export-start' | 'export-status' | 'key-workspace' | 'workspace-info' | 'project-info';

interface HostedCall {
  method: 'GET' | 'POST';
  /** The hosted path's segments, from the route's decoded path parameters. */
  segments: (params: readonly string[]) => string[];
  /** Local checks of the JSON body, as the hosted client makes them; absent: no body is read. */
  validate?: (body: object) => void;
}

/** Every forwarded call: method, hosted path, local checks (docs/API.md, "Search gateway"). */
export const HOSTED_CALLS: Record<ProxiedSearch, HostedCall> = {
  project: { method: 'POST', segments: ([w, p]) => [w, p, 'search'], validate: validateProjectSearchBody },
  workspace: { method: 'POST', segments: ([w]) => [w, 'search', 'v1'], validate: validateWorkspaceSearchBody },
  'export-start': { method: 'POST', segments: ([w]) => [w, 'search', 'export'], validate: validateExportBody },
  'export-status': { method: 'GET', segments: ([w, id]) => [w, 'search', 'export', id] },
  'key-workspace': { method: 'POST', segments: () => [] },
  'workspace-info': { method: 'GET', segments: ([w]) => [w] },
  'project-info': { method: 'GET', segments: ([w, p]) => [w, p] },
};

/** Where the hosted API is and the device's key for it (SEARCH_BASE_URL, SEARCH_API_KEY). */
export interface HostedTarget {
  /** Absolute http(s) URL, no trailing slash (as `loadConfig` leaves it). */
  baseUrl: string;
  apiKey: string;
}

export interface ForwardOptions {
  /** Whole exchange with the hosted API, body included (ms). */
  timeoutMs: number;
  /** Aborts the hosted request, e.g. when the client went away. */
  signal?: AbortSignal;
}

/**
 * The hosted answer, ready to relay: nothing of it has been read but the status and headers.
 * The device key is masked in all of it, in every form `redact` knows.
 */
export interface HostedAnswer {
  status: number;
  /** The hosted reason phrase ('' when it sent none), redacted. */
  statusText: string;
  /** The pass-through headers present on the hosted answer, canonically spelled, values redacted. */
  headers: [string, string][];
  /**
   * The body, chunk by chunk, with every occurrence of the device key replaced by `***`. Read it
   * once. Breaking out of the loop cancels the hosted body.
   * @throws AppError upstream_unreachable when the hosted body fails or times out midway
   */
  body: AsyncGenerator<Buffer, void, undefined>;
}

/**
 * Response headers passed through unchanged: the type, and the rate-limit headers of a 429
 * (docs/API.md, "Search gateway").
 */
const PASS_THROUGH_HEADERS = ['Content-Type', 'Retry-After', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'];

/**
 * The hosted path for a proxied request, from the route's decoded path parameters
 * (`[workspace, project]`, `[workspace, exportId]` or `[workspace]`), each segment re-encoded.
 * @throws AppError not_found (404) for an empty, `.` or `..` parameter: it names no hosted
 *   resource, and URL resolution would turn it into a different hosted path
 */
export function hostedSearchPath(kind: ProxiedSearch, params: readonly string[]): string {
  if (params.some((segment) => segment === '' || segment === '.' || segment === '..')) throw new AppError('not_found');
  return '/' + HOSTED_CALLS[kind].segments(params).map(encodeURIComponent).join('/');
}

/** An export start body: a JSON object with a valid `query` (the export itself is the hosted API's). */
function validateExportBody(body: object): void {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new SearchArgumentError('The request body must be a JSON object');
  validateQuery((body as { query?: unknown }).query);
}

/**
 * Validates a client's body locally, with the hosted client's validators (project: fields,
 * `limit` 1..250, `offset`, flags, `mediaTypes`; workspace: non-empty parseable `query`,
 * `pageSize` 1..250, fields, `mediaTypes`, `continuationToken`).
 * @param body the parsed JSON body; undefined when the request had none
 * @throws AppError search_request_invalid (400, `{"detail": "<why>"}`) naming the first bad member
 */
export function validateSearchBody(kind: ProxiedSearch, body: unknown): void {
  try {
    HOSTED_CALLS[kind].validate?.(body as object);
  } catch (err) {
    if (err instanceof SearchArgumentError || err instanceof QuerySyntaxError) throw new AppError('search_request_invalid', err.message, { cause: err });
    throw err;
  }
}

/**
 * Sends a call to `${baseUrl}${path}?api_key=<device key>` with the method of `kind` (a POST
 * with `body` as JSON; a GET with none); nothing of the client's query string travels, its
 * `api_key` least of all. Resolves as soon as the hosted status and headers are in, whatever the
 * status (401/403/404/429/5xx included).
 * @param path from `hostedSearchPath`
 * @param body the parsed JSON body (POST calls; undefined sends none)
 * @throws AppError upstream_unreachable (502) when no answer came: refused or reset connection,
 *   DNS or TLS failure, or no answer within `timeoutMs`; its message is redacted
 */
export async function forwardSearch(target: HostedTarget, kind: ProxiedSearch, path: string, body: unknown, options: ForwardOptions): Promise<HostedAnswer> {
  const url = new URL(`${target.baseUrl}${path}`);
  url.searchParams.set('api_key', target.apiKey);
  const signals = [AbortSignal.timeout(options.timeoutMs), ...(options.signal ? [options.signal] : [])];
  const { method } = HOSTED_CALLS[kind];
  const withBody = method === 'POST' && body !== undefined;
  let response: Response;
  try {
    response = await fetch(url, {
      method,
      headers: withBody ? { 'content-type': 'application/json', accept: 'application/json' } : { accept: 'application/json' },
      body: withBody ? JSON.stringify(body) : undefined,
      signal: AbortSignal.any(signals),
    });
  } catch (err) {
    throw unreachable(err, target, options.timeoutMs);
  }
  const headers: [string, string][] = [];
  for (const name of PASS_THROUGH_HEADERS) {
    const value = response.headers.get(name);
    if (value !== null) headers.push([name, redact(value, target.apiKey)]);
  }
  return {
    status: response.status,
    statusText: redact(response.statusText, target.apiKey),
    headers,
    body: maskedChunks(response.body, target, options.timeoutMs),
  };
}

async function* maskedChunks(stream: ReadableStream<Uint8Array> | null, target: HostedTarget, timeoutMs: number): AsyncGenerator<Buffer, void, undefined> {
  if (!stream) return;
  const masker = new SecretMasker([target.apiKey]);
  const reader = stream.getReader();
  try {
    for (;;) {
      let next: ReadableStreamReadResult<Uint8Array>;
      try {
        next = await reader.read();
      } catch (err) {
        throw unreachable(err, target, timeoutMs);
      }
      if (next.done) break;
      const safe = masker.push(next.value);
      if (safe.length > 0) yield safe;
    }
    const tail = masker.flush();
    if (tail.length > 0) yield tail;
  } finally {
    // A no-op once the body ended; releases the hosted connection when the relay stopped early.
    reader.cancel().catch(() => undefined);
  }
}

/** The 502 of a hosted call that failed with `err`; `err`, masked of the key, is its cause. */
function unreachable(err: unknown, target: HostedTarget, timeoutMs: number): AppError {
  const error = err as Error & { cause?: Error };
  const origin = new URL(target.baseUrl).origin;
  const message = error?.name === 'TimeoutError'
    ? `Hosted search API at ${origin} did not answer within ${timeoutMs} ms`
    : `Hosted search API at ${origin} unreachable: ${[error?.message, error?.cause?.message].filter(Boolean).join(': ')}`;
  return new AppError('upstream_unreachable', redact(message, target.apiKey), { cause: maskedError(err, target.apiKey) });
}

/** How many causes deep `maskedError` copies (fetch's "fetch failed" -> the socket's error -> ...). */
const MASKED_CAUSE_DEPTH = 4;

/**
 * A copy of `err` and its causes, fit for the log: messages, stacks and paths masked of the key
 * (the hosted URL carries it as `api_key`), errno fields kept (`code`, `errno`, `syscall`).
 */
function maskedError(err: unknown, apiKey: string, depth = 0): Error {
  const report = errorReport(err);
  const mask = (text: string | undefined) => (text === undefined ? undefined : redact(text, apiKey));
  const masked = errorFromReport({ ...report, cause: undefined, message: redact(report.message, apiKey), stack: mask(report.stack), path: mask(report.path) });
  const cause = (err as { cause?: unknown } | undefined)?.cause;
  if (cause !== undefined && depth < MASKED_CAUSE_DEPTH) masked.cause = maskedError(cause, apiKey, depth + 1);
  return masked;
}

/**
 * Replaces every form of the given secrets (see redact.ts: raw, percent-, JSON-, HTML- and
 * base64-encoded) in a byte stream by `***`, across chunk boundaries: it holds back the last
 * (longest form - 1) bytes of each chunk until the next one shows whether they start a secret.
 * Bytes are matched as Latin-1, so a secret's UTF-8 bytes match whatever the stream's encoding.
 */
export class SecretMasker {
  private readonly regex: RegExp | undefined;
  private readonly holdBack: number;
  private carry = '';

  /** @param secrets the texts to mask; empty ones and duplicates are ignored */
  constructor(secrets: string[]) {
    const compiled = secretsRegex(secrets);
    this.regex = compiled?.regex;
    this.holdBack = Math.max(0, (compiled?.maxLength ?? 0) - 1);
  }

  /** Feeds `chunk`; returns the bytes now known to be safe (possibly none). */
  push(chunk: Uint8Array): Buffer {
    const data = this.carry + Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString('latin1');
    // A match starting before `settled` lies wholly within `data`: no form is longer than holdBack + 1.
    const settled = data.length - this.holdBack;
    const out: string[] = [];
    let from = 0;
    if (this.regex) {
      this.regex.lastIndex = 0;
      for (let match = this.regex.exec(data); match !== null && match.index < settled; match = this.regex.exec(data)) {
        out.push(data.slice(from, match.index), REDACTED);
        from = match.index + match[0].length;
        if (match[0].length === 0) this.regex.lastIndex++;
      }
    }
    const keepFrom = Math.max(from, settled);
    out.push(data.slice(from, keepFrom));
    this.carry = data.slice(keepFrom);
    return Buffer.from(out.join(''), 'latin1');
  }

  /** Returns what is still held back, masked (the stream ended: nothing more can complete it). */
  flush(): Buffer {
    const rest = this.carry;
    this.carry = '';
    return Buffer.from(this.regex ? rest.replace(this.regex, REDACTED) : rest, 'latin1');
  }
}
