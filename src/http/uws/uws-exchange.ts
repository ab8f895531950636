/**
 * The Exchange contract over uWebSockets.js, following its pitfalls (docs of uWebSockets.js,
 * "Backpressure" and the `HttpResponse` reference): the request is copied in the route callback,
 * `onAborted` is attached at once, `res` is never touched after abort or end, every write from
 * async code happens inside `res.cork()`, and a streamed body with a known length goes through
 * `tryEnd` with one `onWritable` handler per response that resends the pending chunk from its
 * offset. A request with a body has its data handler from the start, so the body's end is known
 * whatever the route reads of it.
 *
 * An answer given before the body was read lingers (exchange.ts `LingeringClose`), in one of two
 * ways, since uWebSockets.js offers no call that closes a connection once its response has ended
 * (the response object is discarded), and closes it itself the moment a response ends on a
 * connection the client asked to close (its HttpResponse.h `internalEnd`: "force close after
 * sending FIN since we want to hinder clients from keeping to send their huge data"), which reset
 * it under the client's writes:
 * - a body of declared length on a connection the client keeps: the answer ends at once, and
 *   uWebSockets' parser reads the rest of the body past it and drops it (uWebSockets source:
 *   src/HttpParser.h, `remainingStreamingBytes`), up to the declared length, which is at most
 *   LINGERING_CLOSE_MAX_BYTES, within uWS's own timeout (10 s without 16 KB/s);
 * - a client that asked to close the connection (`Connection: close`, as urllib sends; uWS takes
 *   any 5-character value for it, HttpContext.h), or a chunked body: the answer goes out with its
 *   Content-Length but its last byte, the rest of the body is read and dropped, and the last byte
 *   ends the response once the body is in, or once no byte of it came for LINGER_IDLE_MS (a client
 *   that stopped sending to read the answer, as curl does after an error); uWS then keeps the
 *   connection, or closes it cleanly, all of the body read. Past the bounds it is closed.
 */
import { Exchange, statusLine, type AfterAnswer, type LingeringClose } from '../exchange.js';
import type { UwsRequest, UwsResponse } from './uws-api.js';

const EMPTY = Buffer.alloc(0);

/** How long a lingering answer whose last byte is held waits for the next byte of the body before it ends anyway (ms). */
const LINGER_IDLE_MS = 1000;

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
  /** The data handler is registered (`listenToBody`). */
  private listening = false;
  /** The client asked to close the connection: uWS closes it as the response ends. */
  private readonly clientCloses: boolean;
  /** The body is chunked: its end is unknown until its last chunk. */
  private readonly chunkedBody: boolean;
  /** Armed while a lingering answer holds its last byte: it ends the answer when the body stops coming. */
  private lingerIdle: NodeJS.Timeout | undefined;
  private bodyPaused = false;

  /**
   * Copies what the exchange needs from `req` (valid only during the uWS callback) and attaches
   * the abort handler. Call synchronously at the start of the route callback.
   * @param paramCount number of `:param` segments of the route pattern
   * @param lingering how much of an unread body an early answer still reads (exchange.ts `LingeringClose`)
   */
  constructor(private readonly res: UwsResponse, req: UwsRequest, paramCount: number, lingering: LingeringClose) {
    const length = req.getHeader('content-length');
    const chunked = req.getHeader('transfer-encoding') !== '';
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
      chunked,
    }, lingering);
    this.clientCloses = req.getHeader('connection').length === 5;
    this.chunkedBody = chunked;
    // uWS drops body chunks that come while no handler is registered, its last one too.
    if (chunked || (length !== '' && Number(length) > 0)) this.listenToBody();
    res.onAborted(() => {
      clearTimeout(this.lingerIdle);
      this.markAborted();
      // uWS holds no reference to a pending chunk (write copies what it takes): let it go.
      const pending = this.pending;
      this.pending = undefined;
      pending?.released?.();
      this.wake();
    });
  }

  protected sendWhole(status: number, body: string | Buffer, headers: [string, string][], after: AfterAnswer): void {
    const bytes = typeof body === 'string' ? Buffer.from(body) : body;
    const linger = after === 'linger';
    // The last byte is held where uWS would close as the answer ends, or the body's end is unknown; an empty answer has none.
    const holdLast = linger && (this.clientCloses || this.chunkedBody) && bytes.length > 0;
    if (linger) this.bodyHandler = undefined; // the rest of the body is dropped as it comes
    this.res.cork(() => {
      // uWS's resume restores the events saved by a pause; without one it stops the socket's reads.
      if (linger && this.bodyPaused) {
        this.bodyPaused = false;
        this.res.resume();
      }
      this.res.writeStatus(statusLine(status));
      for (const [name, value] of headers) this.res.writeHeader(name, value);
      // uWebSockets.js writes a body even for HEAD: the head alone, with the body's length. Its
      // 20.30 then reads no further request on the connection: close it rather than leave it hanging.
      if (this.method === 'HEAD') this.res.endWithoutBody(bytes.length, true);
      // Into the cork buffer (16 KiB): an error's few hundred bytes are taken whole.
      else if (holdLast) this.res.tryEnd(bytes.subarray(0, bytes.length - 1), bytes.length);
      else this.res.end(bytes, after === 'close');
    });
    if (!holdLast) return;
    this.startLingering(() => {
      clearTimeout(this.lingerIdle);
      this.res.cork(() => this.res.tryEnd(bytes.subarray(bytes.length - 1), bytes.length));
    });
    this.armLingerIdle();
  }

  /** (Re)arms the wait for the next byte of a lingering answer's body (LINGER_IDLE_MS). */
  private armLingerIdle(): void {
    clearTimeout(this.lingerIdle);
    this.lingerIdle = setTimeout(() => this.endLingering(), LINGER_IDLE_MS).unref();
  }

  /**
   * Registers the one data handler: counts each chunk, notes the last, and hands it to the
   * handler `onBody` set, if any (dropped otherwise). uWS keeps timing the body out while a
   * handler is registered (10 s without its throughput) and clears the timeout once it is in.
   */
  private listenToBody(): void {
    this.listening = true;
    this.res.onData((chunk, isLast) => {
      this.countBody(chunk.byteLength);
      if (this.lingeringNow) this.armLingerIdle();
      if (isLast) this.markBodyRead();
      this.bodyHandler?.(Buffer.from(chunk), isLast);
    });
  }

  onBody(handler: (chunk: Buffer, isLast: boolean) => void): void {
    this.bodyHandler = handler;
    // A request that declared no body: uWS still hands its (empty) last chunk to a handler.
    if (!this.listening) this.listenToBody();
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
