/**
 * The search proxy on the store (issue 5 part 4; DESIGN.md, "Search"): the hosted paths served
 * unchanged, `POST /:workspace/:project/search` and `POST /:workspace/search/v1`, so a client
 * switches to the store by changing only its base URL. Behind the store's own X-API-Key (the
 * route wrapper); the hosted call carries the device's SEARCH_API_KEY. Order of checks: X-API-Key
 * (401), proxy configured (404 like an unknown route), body within 64 KiB (413), JSON and local
 * validation (400), then one hosted call whose status, Content-Type, Retry-After, RateLimit-*
 * and body are relayed as they stream in; 502 when the hosted API does not answer.
 */
import { AppError } from '../errors.js';
import { forwardSearch, hostedSearchPath, validateSearchBody } from '../search/proxy-forward.js';
import type { HostedAnswer, ProxiedSearch } from '../search/proxy-forward.js';
import { statusLine, type Exchange } from './exchange.js';
import { readJsonBody } from './json-body.js';
import type { Route, ServerContext } from './route-table.js';

/** Largest search request body accepted (bytes); search bodies are a few hundred bytes. */
export const MAX_SEARCH_BODY_BYTES = 64 * 1024;

/**
 * Proxy tunables. `timeoutMs` bounds the whole hosted exchange, body included (default 30 s);
 * tests shorten it. Not an environment setting (DESIGN.md, "Settings", lists none).
 */
export const searchProxySettings = { timeoutMs: 30_000 };

/**
 * Handles one proxied search. Runs synchronously up to the body read (it attaches `onData`).
 * @returns nothing: the hosted answer is written to `ex` as it streams in
 * @throws AppError not_found (404) when SEARCH_BASE_URL or SEARCH_API_KEY is unset or a path
 *   segment is `.`/`..`; record_too_large (413) past MAX_SEARCH_BODY_BYTES;
 *   search_request_invalid (400) for malformed JSON or a body the validators refuse;
 *   upstream_unreachable (502) when the hosted API gives no answer in time
 */
function proxySearch(kind: ProxiedSearch, ex: Exchange, ctx: ServerContext): Promise<void> {
  const { searchBaseUrl, searchApiKey } = ctx.config;
  if (searchBaseUrl === undefined || searchApiKey === undefined) throw new AppError('not_found');
  const path = hostedSearchPath(kind, ex.params);
  return readJsonBody(ex, MAX_SEARCH_BODY_BYTES)
    .catch((err: unknown) => {
      throw asSearchBodyError(err);
    })
    .then(async (body) => {
      validateSearchBody(kind, body);
      const clientGone = new AbortController();
      ex.onAbort(() => clientGone.abort());
      const answer = await forwardSearch({ baseUrl: searchBaseUrl, apiKey: searchApiKey }, path, body, {
        timeoutMs: searchProxySettings.timeoutMs,
        signal: clientGone.signal,
      });
      ctx.log.debug({ route: kind, path, status: answer.status }, 'search proxied');
      await relay(ex, answer, ctx);
    })
    .catch((err: unknown) => {
      if (!ex.aborted) throw err; // a client gone mid-way is no failure to report
    });
}

/** readJsonBody's 413 and 422 in the proxy's terms: the hosted API answers a bad body 400. */
function asSearchBodyError(err: unknown): unknown {
  if (!(err instanceof AppError)) return err;
  if (err.code === 'record_too_large') return new AppError('record_too_large', `Search request body exceeds ${MAX_SEARCH_BODY_BYTES} bytes`);
  if (err.code === 'validation_failed') {
    const why = Array.isArray(err.detail) ? err.detail.map((issue) => issue.msg).join('; ') : err.detail;
    return new AppError('search_request_invalid', why);
  }
  return err;
}

/**
 * Writes the hosted answer to the client chunk by chunk with backpressure (one `onWritable`
 * handler per response, writes inside `cork`). The first chunk is awaited before the status
 * line, so a body failing at once still answers a clean 502; a failure after that closes the
 * connection (the status is gone).
 */
async function relay(ex: Exchange, answer: HostedAnswer, ctx: ServerContext): Promise<void> {
  const first = await answer.body.next();
  if (ex.aborted) {
    await answer.body.return();
    return;
  }
  ex.done = true;
  const { res } = ex;
  let wake: (() => void) | undefined;
  const resume = () => {
    wake?.();
    wake = undefined;
  };
  res.onWritable(() => {
    resume();
    return true;
  });
  ex.onAbort(resume);

  let writable = true;
  res.cork(() => {
    res.writeStatus(answer.statusText ? `${answer.status} ${answer.statusText}` : statusLine(answer.status));
    for (const [name, value] of answer.headers) res.writeHeader(name, value);
    if (first.done) res.end();
    else writable = res.write(first.value);
  });
  if (first.done) return;
  try {
    for (;;) {
      if (!writable) await new Promise<void>((resolve) => (wake = resolve));
      if (ex.aborted) break;
      const next = await answer.body.next();
      if (ex.aborted) break;
      if (next.done) {
        res.cork(() => res.end());
        return;
      }
      res.cork(() => {
        writable = res.write(next.value);
      });
    }
    await answer.body.return();
  } catch (err) {
    ctx.log.warn({ err }, 'hosted search answer broke off; connection closed');
    if (!ex.aborted) res.close();
  }
}

const handler = (kind: ProxiedSearch): Route['handler'] => (ex, ctx) => proxySearch(kind, ex, ctx);

/** The proxy's routes; registered whatever the settings (unset: they answer 404). */
export const searchProxyRoutes: Route[] = [
  { method: 'post', path: '/:workspace/:project/search', handler: handler('project') },
  { method: 'post', path: '/:workspace/search/v1', handler: handler('workspace') },
];
