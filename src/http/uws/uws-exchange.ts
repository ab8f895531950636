/**
 * The Exchange contract over uWebSockets.js, following its pitfalls (docs of uWebSockets.js,
 * "Backpressure" and the `HttpResponse` reference): the request is copied in the route callback,
 * `onAborted` is attached at once, `res` is never touched after abort or end, every write from
 * async code happens inside `res.cork()`, and a streamed body with a known length goes through
 * `tryEnd` with one `onWritable` handler per response that resends the pending chunk from its
 * offset. An answer given before a short body was read (exchange.ts `DRAIN_MAX_BYTES`) keeps the
 * connection: uWebSockets' parser reads the rest of the body past the response and drops it
 * (uWebSockets source: src/HttpParser.h, `remainingStreamingBytes`), where `end(body, true)` closed
 * the socket under the client's writes.
 */
import { Exchange, statusLine } from '../exchange.js';
import type { UwsRequest, UwsResponse } from './uws-api.js';

const EMPTY = Buffer.alloc(0);

export class UwsExchange extends Exchange {
  private head: { status: string; headers: (readonly [string, string])[] } | undefined;
  private total: number | undefined;
  /** Bytes handed to `write` so far (the body offset where the next chunk starts). */
  private handed = 0;
  /** A chunk uWS did not take whole (tryEnd), its offset in the body, and whom to tell once taken. */
  private pending: { chunk: Buffer; start: number; released: (() => void) | undefined } | undefined;
  private backpressured = false;
  private wakers: (() => void)[] = [];
  /** Where body chunks go; swapped, not re-registered, so uWS never drops a handler it is calling. */
  private bodyHandler: ((chunk: Buffer, isLast: boolean) => void) | undefined;
  private bodyPaused = false;

  /**
   * Copies what the exchange needs from `req` (valid only during the uWS callback) and attaches
   * the abort handler. Call synchronously at the start of the route callback.
   * @param paramCount number of `:param` segments of the route pattern
   */
  constructor(private readonly res: UwsResponse, req: UwsRequest, paramCount: number) {
    const length = req.getHeader('content-length');
    super({
      method: req.getMethod().toUpperCase(),
      url: req.getUrl(),
      query: req.getQuery() ?? '',
      rawParams: Array.from({ length: paramCount }, (_, i) => req.getParameter(i) ?? ''),
      headers: {
        apiKey: req.getHeader('x-api-key'),
        contentType: req.getHeader('content-type'),
        contentLength: length === '' ? undefined : Number(length),
        range: req.getHeader('range'),
        lastEventId: req.getHeader('last-event-id'),
        host: req.getHeader('host'),
        origin: req.getHeader('origin'),
        fetchSite: req.getHeader('sec-fetch-site'),
      },
      chunked: req.getHeader('transfer-encoding') !== '',
    });
    res.onAborted(() => {
      this.markAborted();
      // uWS holds no reference to a pending chunk (write copies what it takes): let it go.
      const pending = this.pending;
      this.pending = undefined;
      pending?.released?.();
      this.wake();
    });
  }

  protected sendWhole(status: number, body: string | Buffer, headers: [string, string][], closeConnection: boolean): void {
    const drain = closeConnection && this.bodyDrainable;
    if (drain) this.dropBody();
    this.res.cork(() => {
      // uWS's resume restores the events saved by a pause; without one it stops the socket's reads.
      if (drain && this.bodyPaused) {
        this.bodyPaused = false;
        this.res.resume();
      }
      this.res.writeStatus(statusLine(status));
      for (const [name, value] of headers) this.res.writeHeader(name, value);
      // uWebSockets.js writes a body even for HEAD: the head alone, with the body's length. Its
      // 20.30 then reads no further request on the connection: close it rather than leave it hanging.
      if (this.method === 'HEAD') this.res.endWithoutBody(Buffer.byteLength(body), true);
      else this.res.end(body, closeConnection && !drain);
    });
  }

  /**
   * Drops the rest of the body as it comes. A listener stays registered so that uWS keeps timing
   * the body out (10 s without its throughput) and clears the timeout once it is in.
   */
  private dropBody(): void {
    this.onBody(() => undefined);
  }

  onBody(handler: (chunk: Buffer, isLast: boolean) => void): void {
    const listening = this.bodyHandler !== undefined;
    this.bodyHandler = handler;
    if (listening) return;
    this.res.onData((chunk, isLast) => {
      this.countBody(chunk.byteLength);
      if (isLast) this.markBodyRead();
      this.bodyHandler?.(Buffer.from(chunk), isLast);
    });
  }

  // Once answered, the body is dropped (sendWhole) or the connection closes: no more throttling.
  pauseBody(): void {
    if (this.aborted || this.responded || this.bodyPaused) return;
    this.bodyPaused = true;
    this.res.pause();
  }

  resumeBody(): void {
    if (this.aborted || this.responded || !this.bodyPaused) return;
    this.bodyPaused = false;
    this.res.resume();
  }

  protected beginStream(status: number, reason: string, headers: (readonly [string, string])[], totalBytes: number | undefined): void {
    this.head = { status: statusLine(status, reason), headers };
    this.total = totalBytes;
    this.res.onWritable((offset) => this.resend(offset));
  }

  /** Writes the recorded status line and headers (inside a cork, before the first body bytes). */
  private writeHead(): void {
    if (!this.head) return;
    this.res.writeStatus(this.head.status);
    for (const [name, value] of this.head.headers) this.res.writeHeader(name, value);
    this.head = undefined;
  }

  protected writeChunk(chunk: Buffer, released?: () => void): boolean {
    if (this.aborted) {
      released?.();
      return true;
    }
    const start = this.handed;
    this.handed += chunk.length;
    let accepted = true;
    this.res.cork(() => {
      this.writeHead();
      if (this.total === undefined) accepted = this.res.write(chunk);
      else [accepted] = this.res.tryEnd(chunk, this.total);
    });
    // write() and tryEnd() copy what they take (into the cork buffer, the socket, or uWS's own
    // backpressure buffer), so uWS never holds `chunk` after the call (uWebSockets source:
    // src/HttpResponse.h `internalEnd`, src/AsyncSocket.h `write`).
    if (!accepted) {
      this.backpressured = true;
      // tryEnd keeps nothing it did not take: the rest is resent from onWritable.
      if (this.total !== undefined) {
        this.pending = { chunk, start, released };
        return false;
      }
    }
    released?.();
    return accepted;
  }

  /** onWritable: resends the rest of the pending chunk; wakes writers once it is all taken. */
  private resend(offset: number): boolean {
    if (this.pending && this.total !== undefined) {
      const { chunk, start, released } = this.pending;
      const [accepted] = this.res.tryEnd(chunk.subarray(offset - start), this.total);
      if (!accepted) return false;
      this.pending = undefined;
      released?.();
    }
    this.backpressured = false;
    this.wake();
    return true;
  }

  private wake(): void {
    for (const wake of this.wakers.splice(0)) wake();
  }

  protected whenWritable(): Promise<void> {
    if (!this.backpressured || this.aborted) return Promise.resolve();
    return new Promise((resolve) => this.wakers.push(resolve));
  }

  protected endStream(chunk?: Buffer): void {
    if (this.aborted) return;
    if (this.total !== undefined) {
      // The response completes when `total` bytes were taken by tryEnd.
      if (chunk && chunk.length > 0) this.writeChunk(chunk);
      else if (this.head) this.writeChunk(EMPTY);
      return;
    }
    this.res.cork(() => {
      this.writeHead();
      this.res.end(chunk ?? EMPTY);
    });
  }

  protected destroyConnection(): void {
    if (!this.aborted) this.res.close();
  }
}
