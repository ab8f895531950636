/**
 * The search gateway on the store (docs/API.md, "Search gateway"): the hosted paths served
 * unchanged (the two searches, the export flow, and the SDK's read-only bootstrap calls), so a
 * hosted client switches to the store by changing only its base URL. Behind the store's own key,
 * given as X-API-Key or, as hosted clients send it, as `api_key` in the query (the route
 * wrapper); the hosted call carries the device's SEARCH_API_KEY instead. Order of checks: key
 * (401), gateway configured (404 like an unknown route), body within 64 KiB (413), JSON and local
 * validation (400), then one hosted call whose status, Content-Type, Retry-After, RateLimit-*
 * and body are relayed as they stream in; 502 when the hosted API does not answer. Errors the
 * gateway answers itself have the hosted shape `{"error": "..."}`.
 */
import type { Config } from '../config.js';
import { AppError } from '../errors.js';
import { forwardSearch, hostedSearchPath, HOSTED_CALLS, validateSearchBody } from '../search/proxy-forward.js';
import type { HostedAnswer, ProxiedSearch } from '../search/proxy-forward.js';
import type { Exchange } from './exchange.js';
import { readJsonBody } from './json-body.js';
import type { RouteDoc } from './route-docs.js';
import type { Route, ServerContext } from './route-table.js';

/** Largest search request body accepted (bytes); search bodies are a few hundred bytes. */
export const MAX_SEARCH_BODY_BYTES = 64 * 1024;

/**
 * Proxy tunables. `timeoutMs` bounds the whole hosted exchange, body included (default 30 s);
 * tests shorten it. Not an environment setting (docs/OPERATIONS.md, "Settings", lists none).
 */
export const searchProxySettings = { timeoutMs: 30_000 };

/**
 * Handles one proxied call. Runs synchronously up to the body read (it attaches `onBody`); a
 * POST's body is read (and checked, for the searches and the export start), a GET's is not.
 * @returns nothing: the hosted answer is written to `ex` as it streams in
 * @throws AppError not_found (404) when SEARCH_BASE_URL or SEARCH_API_KEY is unset, the
 *   workspace is not SEARCH_WORKSPACE (when set), or a path segment is `.`/`..`; record_too_large (413) past MAX_SEARCH_BODY_BYTES;
 *   body_budget_full (503, Retry-After) when the body would pass MAX_INFLIGHT_BODY_BYTES;
 *   search_request_invalid (400) for malformed JSON or a body the validators refuse;
 *   upstream_unreachable (502) when the hosted API gives no answer in time
 */
function proxySearch(kind: ProxiedSearch, ex: Exchange, ctx: ServerContext): Promise<void> {
  const { searchBaseUrl, searchApiKey, searchWorkspace } = ctx.config;
  if (searchBaseUrl === undefined || searchApiKey === undefined) throw new AppError('not_found');
  // The device's key is lent for its own workspace only.
  if (searchWorkspace !== undefined && kind !== 'key-workspace' && ex.params[0] !== searchWorkspace) throw new AppError('not_found');
  const path = hostedSearchPath(kind, ex.params);
  // A POST's body is held in the body budget, as a create's, until the call is over (docs/OPERATIONS.md, "Memory").
  const hold = HOSTED_CALLS[kind].method === 'POST' ? ctx.bodies.hold() : undefined;
  const read = hold ? readJsonBody(ex, MAX_SEARCH_BODY_BYTES, hold) : Promise.resolve(undefined);
  return read
    .catch((err: unknown) => {
      throw asSearchBodyError(err);
    })
    .then(async (body) => {
      validateSearchBody(kind, body);
      const clientGone = new AbortController();
      ex.onAbort(() => clientGone.abort());
      const answer = await forwardSearch({ baseUrl: searchBaseUrl, apiKey: searchApiKey }, kind, path, body, {
        timeoutMs: searchProxySettings.timeoutMs,
        signal: clientGone.signal,
      });
      ctx.log.debug({ route: kind, path, status: answer.status }, 'search proxied');
      await relay(ex, answer, ctx);
    })
    .catch((err: unknown) => {
      if (!ex.aborted) throw err; // a client gone mid-way is no failure to report
    })
    .finally(() => hold?.release());
}

/** readJsonBody's 413 and 422 in the proxy's terms: the hosted API answers a bad body 400. */
function asSearchBodyError(err: unknown): unknown {
  if (!(err instanceof AppError)) return err;
  if (err.code === 'record_too_large') return new AppError('record_too_large', `Search request body exceeds ${MAX_SEARCH_BODY_BYTES} bytes`, { cause: err });
  if (err.code === 'validation_failed') {
    const why = Array.isArray(err.detail) ? err.detail.map((issue) => issue.msg).join('; ') : err.detail;
    return new AppError('search_request_invalid', why, { cause: err });
  }
  return err;
}

/**
 * Writes the hosted answer to the client chunk by chunk with backpressure, taking the response
 * of `ex` over (Exchange.takeOver). The first chunk is awaited before the status line, so a body
 * failing at once still answers a clean 502 (thrown, for the route table to answer); a failure
 * after that closes the connection (the status is gone).
 */
async function relay(ex: Exchange, answer: HostedAnswer, ctx: ServerContext): Promise<void> {
  const response = ex.takeOver();
  const first = await answer.body.next();
  if (response.aborted || !response.start(answer.status, answer.headers, undefined, answer.statusText || undefined)) {
    await answer.body.return();
    return;
  }
  if (first.done) {
    response.end();
    return;
  }
  let writable = response.write(first.value);
  try {
    for (;;) {
      if (!writable) await response.writable();
      if (response.aborted) break;
      const next = await answer.body.next();
      if (response.aborted) break;
      if (next.done) {
        response.end();
        return;
      }
      writable = response.write(next.value);
    }
    await answer.body.return();
  } catch (err) {
    ctx.log.warn({ err }, 'hosted search answer broke off; connection closed');
    response.destroy();
  }
}

/**
 * Whether the gateway serves (docs/API.md, "Search gateway"): `off` without the search settings;
 * `keyed` behind API_KEY; `open` without API_KEY when SEARCH_PROXY_OPEN=true; `no-store-key`
 * when the settings are there but API_KEY is not (off: it would lend the hosted key to anyone).
 */
export type GatewayMode = 'off' | 'keyed' | 'open' | 'no-store-key';

/** The gateway's mode under `config` (see GatewayMode). */
export function gatewayMode(config: Config): GatewayMode {
  if (config.searchBaseUrl === undefined || config.searchApiKey === undefined) return 'off';
  if (config.apiKey !== undefined) return 'keyed';
  return config.searchProxyOpen ? 'open' : 'no-store-key';
}

const AVAILABLE = 'Forwarded to the hosted search API with the device\'s SEARCH_API_KEY; available when SEARCH_BASE_URL and '
  + 'SEARCH_API_KEY are set (404 otherwise). The hosted status, body, Content-Type, Retry-After and RateLimit-* are relayed.';

/** What /openapi.json says of a gateway route: the hosted API's bodies and answers are described, not typed. */
function gatewayDoc(summary: string, operationId: string, checksBody: boolean, extra = ''): RouteDoc {
  return {
    tag: 'search gateway',
    summary,
    operationId,
    description: `${AVAILABLE}${extra}`,
    ...(checksBody ? { requestBody: { required: true, content: { 'application/json': { schema: { type: 'object' } } } } } : {}),
    responses: { 200: { description: 'The hosted answer, relayed.' } },
    errors: {
      ...(checksBody ? {
        search_request_invalid: 'Body refused locally, as the hosted API would refuse it.',
        record_too_large: 'Body over 64 KiB.',
        body_budget_full: 'Request bodies held in memory would pass MAX_INFLIGHT_BODY_BYTES; retry after Retry-After.',
      } : {}),
      not_found: 'Gateway off (search settings unset).',
      upstream_unreachable: 'Hosted API unreachable.',
    },
  };
}

/** One gateway route: the key may come as `api_key`, errors have the hosted shape. */
const gatewayRoute = (method: Route['method'], path: string, kind: ProxiedSearch, doc: RouteDoc): Route => ({
  method,
  path,
  keyInQuery: true,
  errorShape: 'hosted',
  jsonBody: HOSTED_CALLS[kind].validate !== undefined,
  doc,
  handler: (ex, ctx) => proxySearch(kind, ex, ctx),
});

/**
 * The gateway's routes, registered in modes `keyed` and `open` (server.ts).
 * The store's own routes keep precedence: uWS matches a literal segment before a parameter.
 */
export const searchProxyRoutes: Route[] = [
  gatewayRoute('post', '/:workspace/:project/search', 'project', gatewayDoc('Project search', 'proxyProjectSearch', true, ' limit 1..250 (default 50).')),
  gatewayRoute('post', '/:workspace/search/v1', 'workspace', gatewayDoc('Workspace search (query language)', 'proxyWorkspaceSearch', true, ' query is required; pageSize default 50.')),
  gatewayRoute('post', '/:workspace/search/export', 'export-start', gatewayDoc('Start a search export', 'proxyStartExport', true, ' Answers 202 {link: exportId}.')),
  gatewayRoute('get', '/:workspace/search/export/:export_id', 'export-status', gatewayDoc('Poll a search export', 'proxyExportStatus', false, ' Answers {ready, link}.')),
  gatewayRoute('post', '/', 'key-workspace', gatewayDoc('Workspace of the key (SDK bootstrap)', 'proxyKeyWorkspace', false)),
  gatewayRoute('get', '/:workspace', 'workspace-info', gatewayDoc('Workspace (SDK bootstrap)', 'proxyWorkspace', false)),
  gatewayRoute('get', '/:workspace/:project', 'project-info', gatewayDoc('Project (SDK bootstrap)', 'proxyProject', false)),
];
