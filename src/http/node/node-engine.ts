/**
 * The HttpEngine on Node's own `node:http`, for where no native uWebSockets.js build loads. Its
 * limits follow the native engine's where Node lets them (Node's reference, `http.createServer`
 * options and `server.timeout`):
 * - a request head up to MAX_HEAD_BYTES (a larger one answers 431, a malformed one 400, and the
 *   connection is closed), received within IDLE_TIMEOUT_MS (`headersTimeout`); a request without
 *   a Host is left to the route table's Host check (`requireHostHeader: false`), as any other;
 * - a connection idle between requests for IDLE_TIMEOUT_MS is closed (`keepAliveTimeout`), and
 *   so is one on which a request body or a download moves no byte for that long (the socket's
 *   timeout, set by NodeExchange while it reads a body or streams a file): an upload that
 *   stalls (its staging file is then removed, as for any cut upload), a download the client
 *   stopped reading. The time the store takes to answer is never cut short. uWebSockets.js
 *   closes the same connections after 10 s (its HTTP_IDLE_TIMEOUT_S);
 * - a stream of unknown length (the live stream's SSE, idle between heartbeats for longer) is
 *   closed only when a write waits IDLE_TIMEOUT_MS for the client to read (node-exchange.ts);
 * - no `requestTimeout`, as uWebSockets.js has none: a large upload over a slow but moving link
 *   may take longer than Node's default 5 minutes.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { MAX_HEAD_BYTES, type HttpEngine, type RuntimeInfo } from '../engine.js';
import type { LingeringClose } from '../exchange.js';
import { listenFailure } from '../listen-failure.js';
import { NodeExchange } from './node-exchange.js';
import { NodeWebSockets, type RequestHandler } from './node-websocket.js';
import { RouteMatcher, splitTarget } from './route-match.js';

/** How long a connection may go without a byte read or written (ms): uWebSockets.js's 10 s. */
export const IDLE_TIMEOUT_MS = 10_000;

/**
 * An engine serving through a `node:http` server.
 * @param runtime what /stats reports (http_engine `node`)
 * @param lingering how much of an unread body an early answer still reads (exchange.ts `LingeringClose`)
 */
export function createNodeEngine(runtime: RuntimeInfo, lingering: LingeringClose): HttpEngine {
  const routes = new RouteMatcher<RequestHandler>();
  const webSockets = new NodeWebSockets(routes, IDLE_TIMEOUT_MS, lingering);
  const server = http.createServer({
    requestTimeout: 0,
    headersTimeout: IDLE_TIMEOUT_MS,
    keepAliveTimeout: IDLE_TIMEOUT_MS,
    connectionsCheckingInterval: 1000, // how often headersTimeout is checked (default 30 s)
    maxHeaderSize: MAX_HEAD_BYTES,
    // An HTTP/1.1 request without a Host reaches the route table, whose Host check answers it 400
    // `malformed_host` with the registry's body (Node's own 400 has none).
    requireHostHeader: false,
  }, (req, res) => {
    const target = splitTarget(req.url ?? '/');
    const found = routes.match(req.method ?? 'GET', target.url);
    // The route table registers a catch-all; without one, close like a server with no route.
    if (!found) return void res.destroy();
    found.value(new NodeExchange(req, res, target, found.params, IDLE_TIMEOUT_MS, lingering));
  });
  return {
    name: 'node',
    runtime,
    route(method, pattern, handler) {
      routes.add(method, pattern, handler);
    },
    webSocket(pattern, endpoint) {
      if (webSockets.add(pattern, endpoint) === 0) server.on('upgrade', webSockets.onUpgrade);
    },
    listen(host, port) {
      return new Promise((resolve, reject) => {
        const failed = (err: NodeJS.ErrnoException) => void listenFailure(host, port, err).then(reject);
        server.once('error', failed);
        // Node binds without SO_REUSEPORT: a second server on the port fails with EADDRINUSE.
        server.listen({ host, port, exclusive: true }, () => {
          server.off('error', failed);
          resolve((server.address() as AddressInfo).port);
        });
      });
    },
    stopListening() {
      server.close();
    },
    closeIdleConnections() {
      server.closeIdleConnections();
    },
  };
}
