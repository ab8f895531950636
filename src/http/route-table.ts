/**
 * Registration of routes on the uWS app: one wrapper gives every route the same treatment:
 * exchange set up before any await, X-API-Key check (all routes but the public ones), JSON body
 * streamed within MAX_RECORD_SIZE_BYTES, errors mapped to responses in one place, and the count
 * of in-flight requests that a graceful stop waits for.
 */
import type { HttpRequest, HttpResponse, TemplatedApp } from 'uWebSockets.js';
import type { Config } from '../config.js';
import { AppError } from '../errors.js';
import type { Lifecycle } from '../lifecycle/lifecycle-manager.js';
import type { ResetTokens } from '../lifecycle/reset.js';
import type { Logger } from '../logger.js';
import type { EventStore } from '../store/event-store.js';
import { createKeyChecker } from './auth.js';
import { Exchange } from './exchange.js';
import { readJsonBody } from './json-body.js';

/** What a route handler may answer: a JSON reply, or nothing when it has sent the response. */
export interface JsonReply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** Shared state the handlers reach. */
export interface ServerContext {
  config: Config;
  store: EventStore;
  log: Logger;
  lifecycle: Lifecycle;
  resetTokens: ResetTokens;
}

export interface Route {
  method: 'get' | 'post';
  /** uWS pattern, e.g. `/v2/events/:event_id`; a trailing slash is tolerated too. */
  path: string;
  /** Reachable without X-API-Key (only /health). */
  public?: boolean;
  /** Answers 529 while the store is capacity-blocked, before any body is read (spec B, E10). */
  gated?: boolean;
  /**
   * `json`: the body is read and parsed before the handler runs (within MAX_RECORD_SIZE_BYTES).
   * Otherwise the handler runs synchronously in the uWS callback and reads any body itself.
   */
  body?: 'json';
  handler: (ex: Exchange, ctx: ServerContext, body: unknown) => Promise<JsonReply | void> | JsonReply | void;
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

/**
 * Registers `routes` on `app`, plus a catch-all 404.
 * @returns the in-flight counter of these routes
 */
export function registerRoutes(app: TemplatedApp, routes: Route[], ctx: ServerContext): InFlight {
  const inFlight = new InFlight();
  const checkKey = createKeyChecker(ctx.config.apiKey);
  const logError = (err: unknown) => ctx.log.error({ err }, 'request failed');

  for (const route of routes) {
    const paramCount = route.path.split('/').filter((s) => s.startsWith(':')).length;
    const handle = (res: HttpResponse, req: HttpRequest) => {
      const ex = new Exchange(res, req, paramCount);
      if (!route.public && !checkKey(ex.headers.apiKey)) {
        ex.fail(new AppError('unauthorized'), logError, ex.bodyPending);
        return;
      }
      if (route.gated && ctx.lifecycle.isBlocked()) {
        ex.fail(new AppError('capacity_blocked'), logError, ex.bodyPending);
        return;
      }
      inFlight.enter();
      let counted = true;
      const leave = () => {
        if (counted) inFlight.leave();
        counted = false;
      };
      // A client gone mid-body never completes its request: it must not hold up a graceful stop.
      ex.onAbort(leave);
      let reply: Promise<JsonReply | void> | JsonReply | void;
      try {
        // Handlers run synchronously here, so a streaming handler attaches onData in time.
        reply = route.body === 'json'
          ? readJsonBody(ex, ctx.config.maxRecordSizeBytes).then((parsed) => route.handler(ex, ctx, parsed))
          : route.handler(ex, ctx, undefined);
      } catch (err) {
        reply = Promise.reject(err);
      }
      Promise.resolve(reply)
        .then((value) => {
          if (value) ex.json(value.status, value.body, value.headers);
        })
        // A response sent before the body was read closes the connection (nothing else can).
        .catch((err: unknown) => ex.fail(err, logError, ex.bodyPending))
        .finally(leave);
    };
    app[route.method](route.path, handle);
    if (route.path !== '/') app[route.method](`${route.path}/`, handle);
  }

  app.any('/*', (res, req) => {
    const ex = new Exchange(res, req, 0);
    ex.fail(new AppError('not_found'), logError, ex.bodyPending);
  });
  return inFlight;
}
