/**
 * The HTTP server: picks the engine (engine-choice.ts), registers the route table on it, listens,
 * and stops gracefully (no new connections, in-flight writes finished, store closed).
 */
import type { NatsSource } from '../hub/nats-source.js';
import { DiskWrites } from '../operations/disk-writes.js';
import { StoreMetrics } from '../operations/metrics.js';
import { MqttSink } from '../sinks/mqtt-sink.js';
import { DEFAULT_STREAM_OPTIONS, StreamHub } from '../stream/stream-hub.js';
import { eventStreamRoutes, eventStreamSocket } from './event-stream-routes.js';
import { exportRoutes } from './export-routes.js';
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import type { Lifecycle } from '../operations/lifecycle-manager.js';
import { ResetTokens } from '../operations/reset.js';
import { Thumbnails } from '../events/thumbnails.js';
import type { EventStore } from '../store/event-store.js';
import { adminRoutes } from './admin-routes.js';
import { docsRoutes } from './docs.js';
import { createEngine } from './engine-choice.js';
import type { RuntimeInfo } from './engine.js';
import { operatorPageRoutes } from './operator-page-routes.js';
import { createAdmission, registerRoutes, type Route } from './route-table.js';
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

export interface RunningServer {
  /** The port listened on (useful with PORT=0). */
  port: number;
  /** Node version and HTTP engine in use. */
  runtime: RuntimeInfo;
  /** Stops accepting, waits up to `graceMs` (ms) for in-flight requests, closes the store. */
  close(graceMs?: number): Promise<void>;
}

/**
 * Starts the HTTP server on `config.host:config.port` over an open store.
 * @throws UwsUnavailable when HTTP_ENGINE=uws and no native uWebSockets.js build loads
 * @throws Error when the port cannot be bound
 */
export async function startServer(config: Config, store: EventStore, lifecycle: Lifecycle, log: Logger, hub?: NatsSource): Promise<RunningServer> {
  const engine = createEngine(config.httpEngine, log);
  const stream = new StreamHub(store, { ...DEFAULT_STREAM_OPTIONS, maxQueuedBytes: config.streamSubscriberBufferBytes });
  const mqtt = config.mqttUrl === undefined ? undefined : new MqttSink({ ...config, mqttUrl: config.mqttUrl }, store, stream, log.child({ sink: 'mqtt' }));
  const diskWrites = new DiskWrites();
  const metrics = new StoreMetrics({ config, store, lifecycle, stream, mqtt, diskWrites, hub });
  const ctx = { config, store, log, lifecycle, resetTokens: new ResetTokens(), runtime: engine.runtime, stream, metrics, mqtt, diskWrites, hub, thumbnails: new Thumbnails() };
  // One admission for the WebSocket route and the others: the same checks, built once.
  const admission = createAdmission(ctx);
  // Before the routes: the WebSocket route takes the path's upgrade requests first.
  engine.webSocket('/v2/events/stream', eventStreamSocket(ctx, admission));
  const inFlight = registerRoutes(engine, routesFor(config), ctx, admission);
  const port = await engine.listen(config.host, config.port);
  log.info({ host: config.host, port, dataDir: config.dataDir, httpEngine: engine.name }, 'edge-event-store listening');
  warnAboutGateway(config, log);
  return {
    port,
    runtime: engine.runtime,
    async close(graceMs = 10_000) {
      engine.stopListening();
      await mqtt?.stop(); // its cursor written; what it had not published is published at the next start
      stream.close(); // streams end with their resume point; in-flight writes finish
      await inFlight.drained(graceMs);
      engine.closeIdleConnections();
      await store.close();
      log.info('edge-event-store stopped');
    },
  };
}
