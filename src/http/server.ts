/**
 * The HTTP server: picks the engine (engine-choice.ts), registers the route table on it over the
 * parts the composition root (src/serve.ts) built, listens, and stops gracefully in two steps the
 * root orders around its own parts: no new connections, then in-flight requests finished. It
 * closes only what it opened, its listener and its connections (docs/ARCHITECTURE.md, "Threads").
 */
import type { NatsSource } from '../hub/nats-source.js';
import type { DiskWrites } from '../operations/disk-writes.js';
import type { StoreMetrics } from '../operations/metrics.js';
import type { MqttSink } from '../sinks/mqtt-sink.js';
import type { StreamFanout } from '../stream/stream-fanout.js';
import { eventStreamRoutes, eventStreamSocket } from './event-stream-routes.js';
import { exportRoutes } from './export-routes.js';
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import type { LifecycleWorkerHandle } from '../lifecycle/worker-handle.js';
import { ResetTokens } from '../operations/reset.js';
import { Thumbnails } from '../events/thumbnails.js';
import type { EventStore } from '../store/index.js';
import { BodyBudget } from './body-budget.js';
import { CreatePreparer } from '../events/create-preparer.js';
import { adminRoutes } from './admin-routes.js';
import { docsRoutes } from './docs.js';
import { createEngine } from './engine-choice.js';
import type { RuntimeInfo } from './engine.js';
import { operatorPageRoutes } from './operator-page-routes.js';
import { createAdmission, registerRoutes, type Route, type ServerContext } from './route-table.js';
import { gatewayMode, searchProxyRoutes } from './search-proxy-routes.js';
import { storeRoutes } from './store-routes.js';

/**
 * Every route the server can answer: what it registers (`routesFor`), what /openapi.json
 * describes, and what the tests walk.
 */
export const allRoutes: Route[] = [...eventStreamRoutes, ...storeRoutes, ...exportRoutes, ...adminRoutes, ...docsRoutes(() => allRoutes), ...operatorPageRoutes, ...searchProxyRoutes];

/**
 * The routes a store with `config` answers: the search gateway's only when it serves (modes
 * `keyed` and `open`), so that otherwise its paths are unknown paths (404) like any other.
 */
export function routesFor(config: Config): Route[] {
  const mode = gatewayMode(config);
  return mode === 'keyed' || mode === 'open' ? allRoutes : allRoutes.filter((route) => !searchProxyRoutes.includes(route));
}

/** Says at start-up when the gateway is open to anyone, or off for want of a store key. */
function warnAboutGateway(config: Config, log: Logger): void {
  const mode = gatewayMode(config);
  if (mode === 'open') {
    log.warn({ workspace: config.searchWorkspace ?? 'any' }, 'search gateway open without API_KEY (SEARCH_PROXY_OPEN=true): anyone who reaches this port can search with the device\'s hosted key');
  } else if (mode === 'no-store-key') {
    log.warn('search gateway off: API_KEY is unset, and serving it would lend the device\'s hosted key to anyone on the network; set API_KEY, or SEARCH_PROXY_OPEN=true to accept that');
  }
}

/**
 * The long-lived parts of the HTTP thread a server answers over: built, started and closed by the
 * composition root (src/serve.ts `startService`), never by the server.
 */
export interface ServerParts {
  config: Config;
  /** The open store; the root closes it after the server drained. */
  store: EventStore;
  log: Logger;
  /** The lifecycle worker's handle (its capacity gate admits gated routes). */
  lifecycle: LifecycleWorkerHandle;
  /** The live stream's fan-out (src/stream/stream-fanout.ts). */
  stream: StreamFanout;
  /** The Prometheus metrics (src/operations/metrics.ts). */
  metrics: StoreMetrics;
  /** Bytes written against bytes accepted (src/operations/disk-writes.ts). */
  diskWrites: DiskWrites;
  /** The MQTT publisher (src/sinks/mqtt-sink.ts); absent unless MQTT_URL is set. */
  mqtt?: MqttSink;
  /** Hub mode's consumer of the fleet stream (src/hub/nats-source.ts); absent unless NATS_SOURCE_URL is set. */
  hub?: NatsSource;
}

export interface RunningServer {
  /** The port listened on (useful with PORT=0). */
  port: number;
  /** Node version and HTTP engine in use. */
  runtime: RuntimeInfo;
  /** Stops accepting connections; requests under way go on. */
  stopListening(): void;
  /**
   * Waits up to `graceMs` (ms) for the requests under way, then closes idle connections. Live
   * streams count as under way until the stream fan-out is closed.
   */
  drained(graceMs?: number): Promise<void>;
}

/**
 * Starts the HTTP server on `config.host:config.port` over the parts the composition root built.
 * @throws UwsUnavailable when HTTP_ENGINE=uws and no native uWebSockets.js build loads
 * @throws Error when the port cannot be bound
 */
export async function startServer(parts: ServerParts): Promise<RunningServer> {
  const { config, log } = parts;
  const engine = createEngine(config, log);
  // What only requests use, the server's own: the create preparer's worker stops once they drained.
  const ctx: ServerContext = {
    ...parts,
    resetTokens: new ResetTokens(),
    runtime: engine.runtime,
    thumbnails: new Thumbnails({ maxQueued: config.thumbnailQueueMax }),
    creates: new CreatePreparer(config),
    bodies: new BodyBudget(config.maxInflightBodyBytes),
  };
  const admission = createAdmission(ctx);
  // Before the routes: the WebSocket route takes the path's upgrade requests first.
  engine.webSocket('/v2/events/stream', eventStreamSocket(ctx, admission));
  parts.metrics.followBodyBudget(ctx.bodies);
  parts.metrics.followCreatePreparer(ctx.creates);
  const inFlight = registerRoutes(engine, routesFor(config), ctx, admission);
  const port = await engine.listen(config.host, config.port);
  log.info({ version: engine.runtime.version, host: config.host, port, dataDir: config.dataDir, httpEngine: engine.name }, 'edge-event-store listening');
  warnAboutGateway(config, log);
  return {
    port,
    runtime: engine.runtime,
    stopListening: () => engine.stopListening(),
    async drained(graceMs = 10_000) {
      await inFlight.drained(graceMs);
      engine.closeIdleConnections();
      await ctx.creates.close();
    },
  };
}
