/**
 * What the route table and the server need from an HTTP engine (docs/OPERATIONS.md, "HTTP
 * engines"): routes registered by method and uWebSockets.js-style pattern, each request handed over
 * as an Exchange; an exclusive listen; a stop that refuses new connections and lets the requests
 * under way finish.
 */
import type { Exchange } from './exchange.js';

/** The engines: native uWebSockets.js, or the fallback on Node's own `node:http`. */
export type EngineName = 'uws' | 'node';

/** What /stats reports of the runtime, so operators of a fleet see what each device runs. */
export interface RuntimeInfo {
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
   * @throws Error `cannot listen on host:port (in use?)`
   */
  listen(host: string, port: number): Promise<number>;
  /** Stops accepting connections; requests under way go on. */
  stopListening(): void;
  /** After a graceful stop: closes the connections left idle (keep-alive). */
  closeIdleConnections(): void;
}
