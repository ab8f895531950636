/**
 * The part of the uWebSockets.js API the store uses, typed here rather than imported from one
 * package: the builds are optional dependencies (uws-builds.ts), so the store must build without
 * any of them. Names and shapes follow uWebSockets.js's own `index.d.ts` (v20), which every
 * supported build shares.
 */

/** A listen socket (opaque native handle). */
export type UwsListenSocket = object;

/** `uWS.HttpResponse`: valid until abort or until a response was ended. */
export interface UwsResponse {
  onAborted(handler: () => void): UwsResponse;
  /** Body chunks; the ArrayBuffer is detached when the handler returns. */
  onData(handler: (chunk: ArrayBuffer, isLast: boolean) => void): UwsResponse;
  /** Called when the socket drained after backpressure; `offset` is the response's write offset. */
  onWritable(handler: (offset: number) => boolean): UwsResponse;
  writeStatus(status: string): UwsResponse;
  writeHeader(name: string, value: string): UwsResponse;
  /** Writes a chunk (chunked encoding); false when backpressure built up (uWS keeps the chunk). */
  write(chunk: Uint8Array | string): boolean;
  end(body?: Uint8Array | string, closeConnection?: boolean): UwsResponse;
  /** Ends with a head only, its Content-Length `reportedContentLength` (the answer to HEAD). */
  endWithoutBody(reportedContentLength?: number, closeConnection?: boolean): UwsResponse;
  /** Upgrades to a WebSocket (in the upgrade handler, synchronously or corked). */
  upgrade<UserData>(userData: UserData, secWebSocketKey: string, secWebSocketProtocol: string, secWebSocketExtensions: string, context: unknown): void;
  /** Writes as much of `chunk` as fits, for a body of `totalSize` bytes: [accepted, finished]. */
  tryEnd(chunk: Uint8Array | string, totalSize: number): [boolean, boolean];
  cork(fn: () => void): UwsResponse;
  pause(): void;
  resume(): void;
  /** Closes the connection at once. */
  close(): UwsResponse;
}

/** `uWS.HttpRequest`: valid only during the route callback. */
export interface UwsRequest {
  getMethod(): string;
  getUrl(): string;
  getQuery(): string | undefined;
  getParameter(index: number): string | undefined;
  /** Lower-case name; '' when absent. The first of repeated headers. */
  getHeader(name: string): string;
  /** Every header line in order, repeated ones included (lower-case names). */
  forEach(callback: (name: string, value: string) => void): void;
}

export type UwsHandler = (res: UwsResponse, req: UwsRequest) => void;

/** `uWS.TemplatedApp`. */
/** `uWS.WebSocket`: valid from `open` to `close`. */
export interface UwsWebSocket<UserData> {
  /** 1: sent; 0: sent, backpressure built up (wait for `drain`); 2: dropped (over maxBackpressure). */
  send(message: Uint8Array, isBinary?: boolean, compress?: boolean): number;
  getBufferedAmount(): number;
  /** Runs `cb` with the socket corked: its sends leave in one syscall. */
  cork(cb: () => void): UwsWebSocket<UserData>;
  /** Closes with a close frame (`close` handler runs at once). */
  end(code?: number, shortMessage?: string): void;
  getUserData(): UserData;
}

/** `uWS.WebSocketBehavior`: settings and handlers of a WebSocket route. */
export interface UwsWebSocketBehavior<UserData> {
  maxPayloadLength?: number;
  idleTimeout?: number;
  maxBackpressure?: number;
  sendPingsAutomatically?: boolean;
  upgrade?: (res: UwsResponse, req: UwsRequest, context: unknown) => void;
  open?: (ws: UwsWebSocket<UserData>) => void;
  drain?: (ws: UwsWebSocket<UserData>) => void;
  close?: (ws: UwsWebSocket<UserData>, code: number, message: ArrayBuffer) => void;
}

export interface UwsApp {
  ws<UserData>(pattern: string, behavior: UwsWebSocketBehavior<UserData>): UwsApp;
  get(pattern: string, handler: UwsHandler): UwsApp;
  post(pattern: string, handler: UwsHandler): UwsApp;
  any(pattern: string, handler: UwsHandler): UwsApp;
  /** The native listen takes (host, port, options, cb); options 1 is LIBUS_LISTEN_EXCLUSIVE_PORT. */
  listen(host: string, port: number, options: number, cb: (socket: UwsListenSocket | false) => void): UwsApp;
  /**
   * Closes every socket of the app, its listen socket included: each connection is cut at once
   * (uWebSockets.js index.d.ts, `TemplatedApp.close`). Every pinned build has it; the trufflesuite
   * build's index.d.ts leaves it out, its binary exports it. Optional: the official package is
   * whatever release the user installed.
   */
  close?(): UwsApp;
}

/** The module a build exports. */
export interface UwsModule {
  App(): UwsApp;
  us_listen_socket_close(socket: UwsListenSocket): void;
  us_socket_local_port(socket: UwsListenSocket): number;
}
