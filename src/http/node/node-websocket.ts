/**
 * WebSocket upgrades on the node:http engine, with the `ws` library (its README, "Multiple
 * servers sharing a single HTTP/S server" and "How to detect and close broken connections"), so
 * the live stream's WebSocket form serves on every engine (docs/API.md, "Live stream").
 *
 * An upgrade request is first answered through an ordinary ServerResponse on its socket, so an
 * endpoint refuses it with the same Exchange and the same HTTP errors as any route, and a request
 * with an Upgrade header on another path gets that path's ordinary answer. Only an accepted
 * upgrade is handed to `ws`.
 */
import http, { type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { EngineWebSocket, WebSocketEndpoint, WebSocketSession } from '../engine.js';
import type { Exchange, LingeringClose } from '../exchange.js';
import { NodeExchange } from './node-exchange.js';
import { splitTarget, type RouteMatcher } from './route-match.js';

/** Largest message a client may send (bytes): clients only listen. As the native engine's. */
const MAX_PAYLOAD_BYTES = 4 * 1024;
/** A socket that answered no ping within this long (ms) is closed. As the native engine's idle timeout. */
const IDLE_MS = 120_000;
/** Bytes buffered by `ws` past which `sendAll` answers false and the session waits for `drain`. */
const HIGH_WATER_BYTES = 1024 * 1024;

/** A request handler as the engine registers it. */
export type RequestHandler = (ex: Exchange) => void;

/** The WebSocket routes of one node:http server. */
export class NodeWebSockets {
  private readonly server = new WebSocketServer({ noServer: true, maxPayload: MAX_PAYLOAD_BYTES });
  private readonly endpoints = new Map<string, WebSocketEndpoint>();

  /**
   * @param routes the engine's request routes, which answer upgrade requests on other paths
   * @param stallMs handed to each NodeExchange (node-engine.ts IDLE_TIMEOUT_MS)
   * @param lingering handed to each NodeExchange (exchange.ts `LingeringClose`)
   */
  constructor(private readonly routes: RouteMatcher<RequestHandler>, private readonly stallMs: number, private readonly lingering: LingeringClose) {}

  /**
   * Serves upgrades on the exact path `pattern` (no parameters) with `endpoint`.
   * @returns how many WebSocket routes there were before this one
   * @throws Error for a pattern with parameters or a wildcard
   */
  add(pattern: string, endpoint: WebSocketEndpoint): number {
    if (/[:*]/.test(pattern)) throw new Error(`WebSocket route ${pattern}: the node engine serves exact paths only`);
    const before = this.endpoints.size;
    this.endpoints.set(pattern, endpoint);
    return before;
  }

  /** The server's `'upgrade'` listener (Node's reference, "Event: 'upgrade'"). */
  readonly onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', () => undefined); // a client gone mid-handshake; 'close' follows
    const target = splitTarget(req.url ?? '/');
    const { url } = target;
    const res = new http.ServerResponse(req);
    res.assignSocket(socket as Parameters<typeof res.assignSocket>[0]);
    res.shouldKeepAlive = false;
    res.on('finish', () => socket.end()); // no keep-alive after an answer on an upgrade request
    const endpoint = this.endpoints.get(url);
    if (!endpoint) {
      const found = this.routes.match(req.method ?? 'GET', url);
      if (!found) return void socket.destroy();
      return found.value(new NodeExchange(req, res, target, found.params, this.stallMs, this.lingering));
    }
    const session = endpoint.upgrade(new NodeExchange(req, res, target, [], this.stallMs, this.lingering));
    if (!session) return; // refused through `res`
    res.detachSocket(socket as Parameters<typeof res.detachSocket>[0]);
    this.server.handleUpgrade(req, socket, head, (ws) => open(ws, session));
  };
}

/** Runs `session` on an accepted socket: sends with backpressure, pings while idle. */
function open(ws: WebSocket, session: WebSocketSession): void {
  let alive = true;
  let draining = false;
  const pinger = setInterval(() => {
    if (!alive) return void ws.terminate();
    alive = false;
    ws.ping();
  }, IDLE_MS / 2);
  ws.on('pong', () => (alive = true));
  ws.on('message', () => (alive = true));
  ws.on('error', () => undefined); // 'close' follows
  ws.on('close', () => {
    clearInterval(pinger);
    session.close();
  });
  const socket: EngineWebSocket = {
    sendAll(messages) {
      if (messages.length === 0) return !draining;
      const last = messages.length - 1;
      // Each text frame is queued in order; the callback of the last one runs once it is written.
      messages.forEach((message, i) => ws.send(message, { binary: false }, i === last ? written : undefined));
      if (ws.bufferedAmount <= HIGH_WATER_BYTES) return true;
      draining = true;
      return false;
    },
    end: (code, reason) => ws.close(code, reason),
  };
  function written(err?: Error): void {
    if (err || !draining || ws.bufferedAmount > HIGH_WATER_BYTES) return;
    draining = false;
    session.drain();
  }
  session.open(socket);
}
