/**
 * The HTTP server on uWebSockets.js: refuses to start on the JavaScript fallback, registers the
 * route table, listens, and stops gracefully (no new connections, in-flight writes finished,
 * store closed).
 */
import uws from 'uWebSockets.js';
import type { Config } from '../config.js';
import type { Lifecycle } from '../lifecycle/lifecycle-manager.js';
import { ResetTokens } from '../lifecycle/reset.js';
import type { Logger } from '../logger.js';
import type { EventStore } from '../store/event-store.js';
import { adminRoutes } from './admin-routes.js';
import { docsRoutes } from './docs.js';
import { assertNativeServer } from './native-check.js';
import { registerRoutes, type Route } from './route-table.js';
import { gatewayMode, searchProxyRoutes } from './search-proxy-routes.js';
import { storeRoutes } from './store-routes.js';

const LISTEN_EXCLUSIVE_PORT = 1; // uws.ListenOptions.LIBUS_LISTEN_EXCLUSIVE_PORT

/** Every route the server can answer; the security tests walk this table. */
export const allRoutes: Route[] = [...storeRoutes, ...adminRoutes, ...docsRoutes, ...searchProxyRoutes];

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
  /** Stops accepting, waits up to `graceMs` (ms) for in-flight requests, closes the store. */
  close(graceMs?: number): Promise<void>;
}

/**
 * Starts the HTTP server on `config.host:config.port` over an open store.
 * @throws NativeServerUnavailable when uWebSockets.js fell back to JavaScript
 * @throws Error when the port cannot be bound
 */
export async function startServer(config: Config, store: EventStore, lifecycle: Lifecycle, log: Logger): Promise<RunningServer> {
  assertNativeServer(uws);
  const app = uws.App();
  const inFlight = registerRoutes(app, routesFor(config), { config, store, log, lifecycle, resetTokens: new ResetTokens() });
  const listenSocket = await new Promise<uws.us_listen_socket>((resolve, reject) => {
    // Exclusive: without it, uWS binds with SO_REUSEPORT and a second store shares the port.
    // The native listen takes (host, port, options, cb); the package's typings lack that overload.
    const listen = app.listen as unknown as (host: string, port: number, options: number, cb: (s: uws.us_listen_socket | false) => void) => void;
    listen.call(app, config.host, config.port, LISTEN_EXCLUSIVE_PORT, (socket) => {
      if (socket) resolve(socket);
      else reject(new Error(`cannot listen on ${config.host}:${config.port} (in use?)`));
    });
  });
  const port = uws.us_socket_local_port(listenSocket);
  log.info({ host: config.host, port, dataDir: config.dataDir }, 'edge-event-store listening');
  warnAboutGateway(config, log);
  return {
    port,
    async close(graceMs = 10_000) {
      uws.us_listen_socket_close(listenSocket);
      await inFlight.drained(graceMs);
      await store.close();
      log.info('edge-event-store stopped');
    },
  };
}
