/**
 * Registration of routes on an HTTP engine (engine.ts): one wrapper gives every route the same
 * treatment: exchange set up before any await, the browser guard (browser-guard.ts), X-API-Key
 * check (all routes but the public ones), the capacity gate, JSON body streamed within
 * MAX_RECORD_SIZE_BYTES and held within MAX_INFLIGHT_BODY_BYTES over all requests (body-budget.ts)
 * until the request is over, errors mapped to responses in one place, and the count of in-flight
 * requests that a graceful stop waits for. Every request's Host is checked first, before its route
 * is matched (400 `malformed_host`, 421 `misdirected_request`: browser-guard.ts `createHostCheck`).
 * A known path asked with another method answers 405 with `Allow` (an allowed origin's CORS
 * preflight 204); an unknown path 404 (docs/API.md, "Errors").
 */
import type { StoreMetrics } from '../operations/metrics.js';
import type { MqttSink } from '../sinks/mqtt-sink.js';
import type { StreamFanout } from '../stream/stream-fanout.js';
import type { Config } from '../config.js';
import { AppError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { CapacityGate, GateUse } from '../lifecycle/capacity-gate.js';
import type { NatsSource } from '../hub/nats-source.js';
import type { DiskWrites } from '../operations/disk-writes.js';
import type { LifecycleWorkerHandle } from '../lifecycle/worker-handle.js';
import type { ResetTokens } from '../operations/reset.js';
import type { EventStore } from '../store/index.js';
import type { Thumbnails } from '../events/thumbnails.js';
import { createKeyChecker } from './auth.js';
import { corsHeaders, createBrowserGuard, createHostCheck, crossSiteReadProblem, jsonContentTypeProblem, preflightHeaders } from './browser-guard.js';
import type { HttpEngine, RuntimeInfo } from './engine.js';
import type { ErrorShape, Exchange } from './exchange.js';
import { readBodyText } from './json-body.js';
import type { CreatePreparer } from '../events/create-preparer.js';
import type { BodyBudget, BodyHold } from './body-budget.js';
import type { RouteDoc } from './route-docs.js';

/** A reply whose body is sent as JSON. */
export interface JsonReply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** A reply whose body is already bytes (a list page, a stored event, a static asset), sent as it is. */
export interface BytesReply {
  status: number;
  bytes: string | Buffer;
  /** Content-Type included. */
  headers: Record<string, string>;
}

/**
 * What a route handler answers: a reply for the route table to send, or nothing when the handler
 * took the response over (Exchange.takeOver) and writes it itself.
 */
export type RouteReply = JsonReply | BytesReply;

/** Shared state the handlers reach. */
export interface ServerContext {
  config: Config;
  store: EventStore;
  log: Logger;
  lifecycle: LifecycleWorkerHandle;
  resetTokens: ResetTokens;
  /** Node version and HTTP engine in use (reported by /stats). */
  runtime: RuntimeInfo;
  /** Subscribers of the live event stream (src/stream/stream-fanout.ts). */
  stream: StreamFanout;
  /** The Prometheus metrics (src/operations/metrics.ts); absent in a bench ceiling's bare server. */
  metrics?: StoreMetrics;
  /** The MQTT publisher (src/sinks/mqtt-sink.ts); absent unless MQTT_URL is set. */
  mqtt?: MqttSink;
  /** Bytes written against bytes accepted (src/operations/disk-writes.ts); absent in a bench ceiling's bare server. */
  diskWrites?: DiskWrites;
  /** Hub mode's consumer of the fleet stream (src/hub/nats-source.ts); absent unless NATS_SOURCE_URL is set. */
  hub?: NatsSource;
  /** Thumbnails of stored images, made and kept in memory (src/events/thumbnails.ts). */
  thumbnails: Thumbnails;
  /** Parses and prepares create bodies, heavy ones off the HTTP thread (src/events/create-preparer.ts). */
  creates: CreatePreparer;
  /** The JSON bodies held at once, against MAX_INFLIGHT_BODY_BYTES (body-budget.ts); `json` routes hold theirs through the route table. */
  bodies: BodyBudget;
}

export interface Route {
  method: 'get' | 'post';
  /** Pattern, e.g. `/v2/events/:event_id`; a trailing slash is tolerated too. */
  path: string;
  /** What /openapi.json says of the route beyond what its other fields tell (route-docs.ts). */
  doc: RouteDoc;
  /** Reachable without X-API-Key (/health and the interactive docs). */
  public?: boolean;
  /**
   * A GET answered whole that HEAD answers too: the same head, no body (RFC 9110, 9.3.2), for
   * monitors and browsers that probe with HEAD (`/`, `/health`).
   */
  head?: true;
  /**
   * A browser's cross-origin request is refused (403) as if it changed state, though it is a GET:
   * the live stream, which a page on the LAN could otherwise hold open to make the store buffer
   * for it (docs/RELIABILITY.md, "Security").
   */
  refusesCrossOrigin?: boolean;
  /**
   * A browser's request from another site's page (`Sec-Fetch-Site: cross-site`) is refused (403)
   * unless its origin is listed in CORS_ALLOWED_ORIGINS: images and thumbnails, which an `<img>`
   * of any page could otherwise make the store read and decode (browser-guard.ts `crossSiteReadProblem`).
   */
  refusesCrossSite?: true;
  /**
   * The body is data the store keeps: `event` for a create, `file` for an attachment. A 2xx
   * answer counts its body as accepted (/stats `disk_writes`, /metrics `ingested_bytes_total`).
   */
  stores?: 'event' | 'file';
  /**
   * The store's key may come as the `api_key` query parameter too (the search proxy: hosted
   * clients send their key that way and cannot send X-API-Key).
   */
  keyInQuery?: boolean;
  /**
   * `hosted`: errors answer `{"error": "..."}` as the hosted search API's do (the search gateway);
   * `page`: errors answer a small HTML page saying what went wrong (the operator page's HTML).
   */
  errorShape?: ErrorShape;
  /**
   * Answers 529 while the store is capacity-blocked, before any body is read (`capacity_blocked`); `create`
   * also closes the gate when this create would overfill the store (docs/API.md, "Capacity and 529").
   */
  gated?: GateUse;
  /**
   * `json`: the body is read whole, within MAX_RECORD_SIZE_BYTES and held in the body budget,
   * before the handler runs; the handler gets its text and weight (JsonBody) and parses it.
   * Otherwise the handler runs synchronously when the request's head arrived and reads any
   * body itself (Exchange.onBody, before any await).
   */
  body?: 'json';
  /** Bytes: the most a `json` route's body may have (413 `record_too_large` past it); default MAX_RECORD_SIZE_BYTES. */
  bodyLimit?: number;
  /** The handler reads a JSON body itself (the search gateway): application/json is required too. */
  jsonBody?: boolean;
  handler: (ex: Exchange, ctx: ServerContext, body: JsonBody | undefined) => Promise<RouteReply | void> | RouteReply | void;
}

/** A `json` route's body, read and held, not yet parsed. */
export interface JsonBody {
  /** Its bytes (UTF-8 JSON; empty for an empty body), the body's own buffer. */
  text: Buffer;
  /** Bytes: what it holds of the body budget, its bytes plus what parsing will add (body-budget.ts). */
  weight: number;
}

/** Counts requests under way, so a graceful stop can wait for in-flight writes. */
export class InFlight {
  count = 0;
  private waiters: (() => void)[] = [];

  enter(): void {
    this.count++;
  }

  leave(): void {
    this.count--;
    if (this.count === 0) for (const wake of this.waiters.splice(0)) wake();
  }

  /** Resolves when no request is under way, or after `timeoutMs` (ms). */
  drained(timeoutMs: number): Promise<void> {
    if (this.count === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      this.waiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}

/** The key a request presents: X-API-Key, else (on `keyInQuery` routes) the `api_key` parameter. */
function presentedKey(ex: Exchange, route: Route): string {
  if (ex.headers.apiKey !== '' || !route.keyInQuery) return ex.headers.apiKey;
  return ex.searchParams().get('api_key') ?? '';
}

/** Sends a handler's reply: JSON, or bytes as they are. */
function sendReply(ex: Exchange, reply: RouteReply): void {
  if ('bytes' in reply) ex.send(reply.status, reply.bytes, reply.headers);
  else ex.json(reply.status, reply.body, reply.headers);
}

/** The routes of each path, for 405's `Allow` (e.g. `/v2/events` -> GET, POST). */
function routesByPath(routes: Route[]): Map<string, Route[]> {
  const byPath = new Map<string, Route[]>();
  for (const route of routes) byPath.set(route.path, [...(byPath.get(route.path) ?? []), route]);
  return byPath;
}

/**
 * The checks a request passes before its route's handler runs, built once per server
 * (`createAdmission`) and shared by the routes and the WebSocket endpoint.
 */
export interface Admission {
  /**
   * The Host check every request passes first, whatever its path and method (browser-guard.ts
   * `createHostCheck`; docs/API.md, "Browsers").
   * @returns AppError malformed_host (400) or misdirected_request (421); undefined to go on
   */
  checkHost(ex: Exchange): AppError | undefined;
  /**
   * Runs the checks in order: the Host, the browser guard, the key, a JSON Content-Type where one is
   * required, and the capacity gate (docs/API.md, "Authentication", "Browsers", "Capacity and
   * 529"). Also sets the exchange's response defaults.
   * @param changesState the request changes state, or (a WebSocket) reads outside CORS's reach: a
   *   browser's cross-origin request is refused (default: the route's method is POST)
   * @returns the refusal to answer, or undefined to go on
   */
  admit(ex: Exchange, route: Route, changesState?: boolean): AppError | undefined;
  /** The origins of CORS_ALLOWED_ORIGINS: answered with CORS headers, their preflights with a 204 (browser-guard.ts). */
  allowedOrigins: ReadonlySet<string>;
}

/** The admission checks of a server with `ctx`'s settings. */
export function createAdmission(ctx: ServerContext): Admission {
  const checkKey = createKeyChecker(ctx.config.apiKey);
  const { gate } = ctx.lifecycle;
  const guard = createBrowserGuard(ctx.config);
  const hostCheck = createHostCheck(ctx.config.allowedHosts);
  const checkHost = (ex: Exchange) => hostCheck(ex.headers.host);
  const allowedOrigins = new Set(ctx.config.corsAllowedOrigins);
  const admit: Admission['admit'] = (ex, route, changesState = route.method === 'post' || route.refusesCrossOrigin === true) => {
    ex.setResponseDefaults({ errorShape: route.errorShape ?? 'store', headers: corsHeaders(ex.headers.origin, allowedOrigins) });
    const refused = checkHost(ex) ?? guard(ex.headers, { changesState });
    if (refused) return refused;
    const crossSite = route.refusesCrossSite ? crossSiteReadProblem(ex.headers, allowedOrigins) : undefined;
    if (crossSite) return crossSite;
    if (!route.public && !checkKey(presentedKey(ex, route))) return new AppError('unauthorized');
    const notJson = route.body === 'json' || route.jsonBody === true ? jsonContentTypeProblem(ex.headers.contentType) : undefined;
    if (notJson) return notJson;
    if (route.gated && !gate.admit(route.gated)) return new AppError('capacity_blocked');
    return undefined;
  };
  return { checkHost, admit, allowedOrigins };
}

/** What the wrappers of one `registerRoutes` call share. */
interface Registration {
  ctx: ServerContext;
  inFlight: InFlight;
  admission: Admission;
  /** The capacity gate a `create` route settles when its request is over. */
  gate: CapacityGate;
  /** Logs a failed request (`request failed`). */
  logError: (err: AppError) => void;
}

/**
 * Registers `routes` on `engine`, a 405 for every known path asked with another method, and a
 * catch-all 404.
 * @param ctx the server's state; `json` routes hold their bodies in `ctx.bodies`, from the first
 *   byte to the end of the request
 * @param admission the server's admission checks (default: built from `ctx`)
 * @returns the in-flight counter of these routes
 */
export function registerRoutes(engine: HttpEngine, routes: Route[], ctx: ServerContext, admission: Admission = createAdmission(ctx)): InFlight {
  const inFlight = new InFlight();
  const logError = (err: AppError) => {
    // A damaged index page is counted, and this thread's read transaction renewed (store-view.ts).
    if (err.code === 'index_damaged') ctx.store.noteIndexDamage(err);
    ctx.log.error({ err }, 'request failed');
  };
  const registration: Registration = { ctx, inFlight, admission, gate: ctx.lifecycle.gate, logError };
  for (const route of routes) {
    const handle = routeHandler(route, registration);
    for (const method of methodsOf(route)) {
      engine.route(method, route.path, handle);
      if (route.path !== '/') engine.route(method, `${route.path}/`, handle);
    }
  }
  for (const [path, sharing] of routesByPath(routes)) {
    const notAllowed = notAllowedHandler(path, sharing, registration);
    engine.route('any', path, notAllowed);
    if (path !== '/') engine.route('any', `${path}/`, notAllowed);
  }
  engine.route('any', '/*', (ex) => {
    ex.fail(admission.checkHost(ex) ?? new AppError('not_found'), logError);
    observeRequest(ctx, ex, { path: 'unmatched' }, performance.now());
  });
  return inFlight;
}

/** The engine methods a route answers: its own, and `head` too for a `head` route. */
function methodsOf(route: Route): string[] {
  return route.head ? [route.method, 'head'] : [route.method];
}

/** Counts an answered request in /metrics (the route pattern, not the path: bounded labels). */
function observeRequest(ctx: ServerContext, ex: Exchange, route: Pick<Route, 'path' | 'stores'>, started: number): void {
  const stored = route.stores !== undefined && ex.status >= 200 && ex.status < 300 ? ex.bodyBytesRead : 0;
  if (stored > 0) ctx.diskWrites?.accept(stored, route.stores === 'event' ? 1 : 0);
  ctx.metrics?.observeRequest(route.path, ex.method, ex.status, (performance.now() - started) / 1000, stored);
}

/**
 * The engine handler of `route`: the admission checks, then the handler, its reply sent and its
 * failure answered (Exchange.fail), the request counted in flight until it is over.
 */
function routeHandler(route: Route, registration: Registration): (ex: Exchange) => void {
  const { ctx, inFlight, gate, logError } = registration;
  const { admit } = registration.admission;
  // A refusal before the body was read reads the rest and drops it, or closes (Exchange.fail's default: lingering close).
  return (ex: Exchange) => {
    const started = performance.now();
    const observe = () => observeRequest(ctx, ex, route, started);
    const refused = admit(ex, route);
    if (refused) {
      ex.fail(refused, logError);
      observe();
      return;
    }
    inFlight.enter();
    let counted = true;
    const leave = () => {
      if (counted) inFlight.leave();
      if (counted && route.gated === 'create') gate.settle();
      if (counted) observe();
      counted = false;
    };
    // A client gone mid-body never completes its request: it must not hold up a graceful stop.
    ex.onAbort(leave);
    // A JSON body, and so what the handler makes of it, is held until the request is over:
    // answered, failed, or (readBodyText settles then) cut off mid-body (docs/OPERATIONS.md, "Memory").
    const hold = route.body === 'json' ? ctx.bodies.hold() : undefined;
    Promise.resolve(callHandler(ex, route, ctx, hold))
      .then((value) => sendAnswer(ex, route, value))
      // A failure answered before the body was read lingers over the rest, or closes (Exchange.fail).
      .catch((err: unknown) => ex.fail(err, logError))
      .finally(() => {
        hold?.release();
        leave();
      });
  };
}

/**
 * Runs `route`'s handler: synchronously, or for a `json` route (`hold` given) once its body was
 * read within the route's limit into `hold`. A handler's throw becomes a rejected reply.
 */
function callHandler(ex: Exchange, route: Route, ctx: ServerContext, hold: BodyHold | undefined): Promise<RouteReply | void> | RouteReply | void {
  const bodyLimit = route.bodyLimit ?? ctx.config.maxRecordSizeBytes;
  try {
    // Handlers run synchronously here, so a streaming handler attaches onData in time.
    return hold
      ? readBodyText(ex, bodyLimit, hold).then((text) => route.handler(ex, ctx, { text, weight: hold.bytes }))
      : route.handler(ex, ctx, undefined);
  } catch (err) {
    return Promise.reject(err);
  }
}

/**
 * Sends a handler's reply.
 * @throws Error when the handler returned none, did not take the response over, and the request
 *   is neither answered nor aborted: a bug of the route, answered 500 `store_failure` (Exchange.fail)
 */
function sendAnswer(ex: Exchange, route: Route, reply: RouteReply | void): void {
  if (reply) sendReply(ex, reply);
  else if (!ex.takenOver && !ex.responded && !ex.aborted) throw new Error(`${route.method.toUpperCase()} ${route.path}: the handler returned no reply and did not take the response over`);
}

/**
 * The handler of `path` asked with a method none of its routes (`sharing`) has: a 405
 * `method_not_allowed` with `Allow`, or an allowed origin's CORS preflight answered 204
 * (docs/API.md, "Errors", "Browsers").
 */
function notAllowedHandler(path: string, sharing: Route[], registration: Registration): (ex: Exchange) => void {
  const { ctx, logError } = registration;
  const { allowedOrigins } = registration.admission;
  const allow = sharing.flatMap(methodsOf).map((method) => method.toUpperCase()).join(', ');
  return (ex: Exchange) => {
    // A 405 is a client's mistake, not a page a person opened: the page's HTML errors stay its GET's.
    const shape = sharing[0].errorShape === 'page' ? 'store' : sharing[0].errorShape ?? 'store';
    ex.setResponseDefaults({ errorShape: shape, headers: [] });
    const misdirected = registration.admission.checkHost(ex);
    if (misdirected) {
      ex.fail(misdirected, logError);
      observeRequest(ctx, ex, { path }, performance.now());
      return;
    }
    const preflight = ex.method === 'OPTIONS' ? preflightHeaders(ex.headers.origin, allowedOrigins, allow) : undefined;
    if (preflight) {
      ex.send(204, '', preflight);
      return;
    }
    ex.fail(new AppError('method_not_allowed', `Method ${ex.method} not allowed on ${ex.url}; allowed: ${allow}`, { headers: { Allow: allow } }), logError);
    observeRequest(ctx, ex, { path }, performance.now());
  };
}
