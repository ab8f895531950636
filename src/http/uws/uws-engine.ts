/** The HttpEngine on a loaded native uWebSockets.js build. */
import type { EngineWebSocket, HttpEngine, RuntimeInfo, WebSocketEndpoint, WebSocketSession } from '../engine.js';
import type { Exchange, LingeringClose } from '../exchange.js';
import { listenFailure } from '../listen-failure.js';
import type { UwsApp, UwsHandler, UwsListenSocket, UwsWebSocket } from './uws-api.js';
import type { LoadedUws } from './uws-loader.js';
import { UwsExchange } from './uws-exchange.js';
import { framingProblem } from './uws-framing.js';

const LISTEN_EXCLUSIVE_PORT = 1; // uws.ListenOptions.LIBUS_LISTEN_EXCLUSIVE_PORT

/** uWS names its DELETE route method `del`. */
const appMethod = (method: string): string => (method === 'delete' ? 'del' : method);

/** What uWS keeps on each WebSocket of ours: the endpoint's session. */
interface SocketData {
  session: WebSocketSession;
}

/**
 * An engine serving through `loaded.uws`.
 * @param runtime what /stats reports (http_engine `uws`, uws_build the loaded build)
 * @param lingering how much of an unread body an early answer still reads (exchange.ts `LingeringClose`)
 */
export function createUwsEngine(loaded: LoadedUws, runtime: RuntimeInfo, lingering: LingeringClose): HttpEngine {
  const { uws } = loaded;
  const app = uws.App();
  let listenSocket: UwsListenSocket | undefined;
  return {
    name: 'uws',
    runtime,
    route(method, pattern, handler: (ex: Exchange) => void) {
      addRoute(app, method, pattern, handler, lingering);
    },
    webSocket(pattern, endpoint) {
      addWebSocket(app, pattern, endpoint, lingering);
    },
    listen(host, port) {
      return new Promise((resolve, reject) => {
        // Exclusive: without it, uWS binds with SO_REUSEPORT and a second store shares the port.
        app.listen(host, port, LISTEN_EXCLUSIVE_PORT, (socket) => {
          if (!socket) return void listenFailure(host, port).then(reject);
          listenSocket = socket;
          resolve(uws.us_socket_local_port(socket));
        });
      });
    },
    stopListening() {
      if (listenSocket) uws.us_listen_socket_close(listenSocket);
      listenSocket = undefined;
    },
    closeIdleConnections() {
      // uWS has no call for idle connections alone; after the drain, the connections left are
      // idle keep-alive ones (and any request past the grace), which uWS would otherwise keep for
      // its own 10 s idle timeout, holding an in-process server's event loop open that long.
      app.close?.();
      listenSocket = undefined;
    },
  };
}

/** How many `:name` segments `pattern` has: the route parameters uWS hands over by index. */
function paramCountOf(pattern: string): number {
  return pattern.split('/').filter((s) => s.startsWith(':')).length;
}

/**
 * Registers `handler` for `method` on `pattern` (HttpEngine.route); a request whose framing is
 * refused (uws-framing.ts) is answered and closed before any handler runs.
 * @throws Error `uWebSockets.js has no route method <method>`
 */
function addRoute(app: UwsApp, method: string, pattern: string, handler: (ex: Exchange) => void, lingering: LingeringClose): void {
  const paramCount = paramCountOf(pattern);
  const register = (app as unknown as Record<string, (pattern: string, handler: UwsHandler) => UwsApp>)[appMethod(method)];
  if (typeof register !== 'function') throw new Error(`uWebSockets.js has no route method ${method}`);
  register.call(app, pattern, (res, req) => {
    const ex = new UwsExchange(res, req, paramCount, lingering);
    const refused = framingProblem(req);
    // The body's end is unknown: answer and close, whatever the route.
    if (refused) ex.fail(refused, () => undefined, true);
    else handler(ex);
  });
}

/** Serves `endpoint`'s WebSocket upgrades on `pattern` (HttpEngine.webSocket). */
function addWebSocket(app: UwsApp, pattern: string, endpoint: WebSocketEndpoint, lingering: LingeringClose): void {
  const paramCount = paramCountOf(pattern);
  app.ws<SocketData>(pattern, {
    // Clients only listen; uWS pings idle sockets, and our own bound (the stream's queue)
    // decides when a client is too slow, so uWS's backpressure limit is set above it.
    maxPayloadLength: 4 * 1024,
    idleTimeout: 120,
    sendPingsAutomatically: true,
    maxBackpressure: 1024 * 1024 * 1024,
    upgrade: (res, req, context) => {
      const key = req.getHeader('sec-websocket-key');
      const protocol = req.getHeader('sec-websocket-protocol');
      const extensions = req.getHeader('sec-websocket-extensions');
      const ex = new UwsExchange(res, req, paramCount, lingering);
      const refused = framingProblem(req);
      if (refused) return void ex.fail(refused, () => undefined, true);
      const session = endpoint.upgrade(ex);
      if (session) res.upgrade({ session }, key, protocol, extensions, context);
    },
    open: (ws) => ws.getUserData().session.open(engineWebSocket(ws)),
    drain: (ws) => ws.getUserData().session.drain(),
    close: (ws) => ws.getUserData().session.close(),
  });
}

/** `ws` as the engine gives it to a session (EngineWebSocket). */
function engineWebSocket(ws: UwsWebSocket<SocketData>): EngineWebSocket {
  return {
    sendAll(messages) {
      // One cork: the messages leave in one syscall (uWebSockets.js docs/index.d.ts, WebSocket.cork).
      let accepted = true;
      ws.cork(() => {
        for (const message of messages) accepted = ws.send(message, false, false) === 1 && accepted;
      });
      return accepted;
    },
    end: (code, reason) => ws.end(code, reason),
  };
}
