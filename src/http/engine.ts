/**
 * What the route table and the server need from an HTTP engine (docs/OPERATIONS.md, "HTTP
 * engines"): routes registered by method and uWebSockets.js-style pattern, each request handed over
 * as an Exchange; an exclusive listen; a stop that refuses new connections and lets the requests
 * under way finish.
 */
import type { Exchange } from './exchange.js';

/**
 * Largest request head (bytes) either engine parses, instead of Node's default 16 KiB, so long
 * query strings pass (docs/RELIABILITY.md, "Limits"). node:http answers a larger head 431;
 * uWebSockets.js builds from 20.50 on take it from UWS_HTTP_MAX_HEADERS_SIZE (uws-loader.ts sets
 * it), while 20.30 keeps at most 4 KiB of a head that arrives in more than one read.
 */
export const MAX_HEAD_BYTES = 128 * 1024;

/** The engines: native uWebSockets.js, or the fallback on Node's own `node:http`. */
export type EngineName = 'uws' | 'node';

/** What /stats reports of the runtime, so operators of a fleet see what each device runs. */
export interface RuntimeInfo {
  /** The store's own version (package.json). */
  version: string;
  /** `process.version`, e.g. `v24.11.1`. */
  node_version: string;
  /** `process.versions.modules`, e.g. `137`. */
  node_abi: string;
  http_engine: EngineName;
  /** `package@version` of the native build in use; null on the node engine. */
  uws_build: string | null;
  /** glibc version found (Linux with glibc), else null. */
  glibc: string | null;
}

export interface HttpEngine {
  readonly name: EngineName;
  readonly runtime: RuntimeInfo;
  /**
   * Registers `handler` for `method` (lower case: `get`, `post`, ..., or `any`) on `pattern`
   * (`/v2/events/:event_id`, `/*`). The handler runs synchronously when the request's head has
   * arrived, with an Exchange whose params follow the pattern's `:name` segments in order.
   */
  route(method: string, pattern: string, handler: (ex: Exchange) => void): void;
  /**
   * Listens on `host:port` exclusively (a second server on the same port fails).
   * @returns the port listened on (useful with port 0)
   * @throws Error `cannot listen on host:port: <cause and fix>` (listen-failure.ts)
   */
  listen(host: string, port: number): Promise<number>;
  /**
   * Serves WebSocket upgrades on `pattern` (an exact path on the node:http engine); requests
   * without an Upgrade reach the route of the same path. Register before that route.
   */
  webSocket(pattern: string, endpoint: WebSocketEndpoint): void;
  /** Stops accepting connections; requests under way go on. */
  stopListening(): void;
  /**
   * After a graceful stop, once requests drained or their grace ran out: closes the connections
   * left idle (keep-alive). uWebSockets.js closes every connection left, a request past the grace
   * included; node:http lets that one finish.
   */
  closeIdleConnections(): void;
}

/** A WebSocket as the engine gives it to an endpoint: valid from `open` to `close`. */
export interface EngineWebSocket {
  /**
   * Sends text messages, in order, in one write (copied by the engine).
   * @returns false when the client is behind: wait for the session's `drain`
   */
  sendAll(messages: Buffer[]): boolean;
  /** Closes with a close frame: `code` (1000 normal, 1001 going away), a short reason. */
  end(code: number, reason: string): void;
}

/** What happens on one WebSocket, once accepted. */
export interface WebSocketSession {
  open(socket: EngineWebSocket): void;
  /** The client took what was sent after `send` answered false. */
  drain(): void;
  /** The socket closed (either side); nothing may be sent on it any more. */
  close(): void;
}

/** A WebSocket route: decides on each upgrade request. */
export interface WebSocketEndpoint {
  /**
   * Runs when an upgrade request's head arrived, with an Exchange over it.
   * @returns the session to open, or undefined after answering the refusal on `ex` (Exchange.fail)
   */
  upgrade(ex: Exchange): WebSocketSession | undefined;
}
