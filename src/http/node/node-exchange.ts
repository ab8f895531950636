/**
 * The Exchange contract over `node:http` (Node's reference, "Class: http.IncomingMessage" and
 * "Class: http.ServerResponse"): the body is the request stream (paused and resumed for
 * backpressure), writes follow `res.write`'s return value and `'drain'`, an abort is the
 * response closing before it ended, and `Connection: close` closes the connection after the
 * response. An answer given before the body was read lingers (exchange.ts `LingeringClose`): it is
 * written whole at once, the rest of the body is read and dropped, and the response is ended only
 * once the body is in: Node destroys the socket when a response ends on a connection the client
 * asked to close, which reset it under the client's writes.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Exchange, statusText, type AfterAnswer, type LingeringClose } from '../exchange.js';
import type { RequestTarget } from './route-match.js';

const EMPTY = Buffer.alloc(0);

/** A header's first value ('' when absent). */
function header(req: IncomingMessage, name: string): string {
  const value = req.headers[name];
  return (Array.isArray(value) ? value[0] : value) ?? '';
}

/**
 * The Host a request names: an absolute-form target's authority (RFC 9112, 3.2.2), else its Host
 * header, several Host lines joined with `, ` (Node keeps the first alone), which no check takes
 * for a host ('' when absent).
 */
function hostOf(req: IncomingMessage, target: RequestTarget): string {
  if (target.authority !== undefined) return target.authority;
  const values: string[] = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2) if (req.rawHeaders[i].toLowerCase() === 'host') values.push(req.rawHeaders[i + 1]);
  return values.join(', ');
}

export class NodeExchange extends Exchange {
  private head: { status: number; reason: string; headers: (readonly [string, string])[]; total: number | undefined } | undefined;
  /** A stream of unknown length: closed when a write stalls, not when the socket idles. */
  private watchStalls = false;
  /** Armed while such a stream's write waits for the client to read. */
  private stalled: NodeJS.Timeout | undefined;
  /** What `onBody` listens to the request with (`dropBody` takes them off). */
  private bodyListeners: { data: (chunk: Buffer) => void; end: () => void } | undefined;

  /**
   * Copies what the exchange needs from `req` and attaches the abort handling.
   * @param target the request target: path as sent, query, and an absolute form's authority (route-match.ts `splitTarget`)
   * @param rawParams route parameters as sent (percent-encoded)
   * @param stallMs how long a request body or a streamed response may move no byte, and a write
   *   of a stream of unknown length wait for the client to read, before the connection is closed
   *   (ms; node-engine.ts IDLE_TIMEOUT_MS). With no 'timeout' listener, Node's server destroys a
   *   socket whose timeout passes (Node's reference, "server.timeout").
   * @param lingering how much of an unread body an early answer still reads (exchange.ts `LingeringClose`)
   */
  constructor(private readonly req: IncomingMessage, private readonly res: ServerResponse, target: RequestTarget, rawParams: string[], private readonly stallMs: number, lingering: LingeringClose) {
    const length = header(req, 'content-length');
    super({
      method: (req.method ?? 'GET').toUpperCase(),
      url: target.url,
      query: target.query,
      rawParams,
      headers: {
        apiKey: header(req, 'x-api-key'),
        contentType: header(req, 'content-type'),
        contentLength: length === '' ? undefined : Number(length),
        range: header(req, 'range'),
        lastEventId: header(req, 'last-event-id'),
        host: hostOf(req, target),
        origin: header(req, 'origin'),
        fetchSite: header(req, 'sec-fetch-site'),
      },
      chunked: header(req, 'transfer-encoding') !== '',
    }, lingering);
    // A body cut short errors the request stream; the response's 'close' reports the abort.
    req.on('error', () => undefined);
    // A body that stops coming: the socket's idle timeout closes it (until the body is read).
    if (Number(length) > 0 || header(req, 'transfer-encoding') !== '') req.socket.setTimeout(stallMs);
    res.on('close', () => {
      clearTimeout(this.stalled);
      if (!res.writableEnded) this.markAborted();
    });
  }

  protected sendWhole(status: number, body: string | Buffer, headers: [string, string][], after: AfterAnswer): void {
    // writeHead fixes the head at once, so Node cannot add Content-Length itself at end().
    const flat = [...headers.flat(), 'Content-Length', String(Buffer.byteLength(body))];
    // Node reads this header: no keep-alive, the socket ends once the response is out.
    if (after === 'close') flat.push('Connection', 'close');
    this.res.writeHead(status, statusText(status) || undefined, flat);
    if (after !== 'linger') {
      this.res.end(body);
      return;
    }
    // The whole answer goes out now; its end, which may close the connection, once the body is in.
    this.res.write(body);
    this.dropBody();
    this.startLingering(() => this.res.end());
  }

  /**
   * Reads the rest of the body and drops it, in place of the handler that stopped reading it,
   * counting it (`countBody`, which closes the connection past LINGERING_CLOSE_MAX_BYTES); the
   * socket's idle timeout still closes a body that stops coming.
   */
  private dropBody(): void {
    if (this.bodyListeners) {
      this.req.off('data', this.bodyListeners.data);
      this.req.off('end', this.bodyListeners.end);
    }
    const ended = () => {
      this.req.socket.setTimeout(0);
      this.markBodyRead();
    };
    if (this.req.readableEnded) return ended();
    this.req.on('data', (chunk: Buffer) => this.countBody(chunk.length));
    this.req.once('end', ended);
    this.req.resume();
  }

  onBody(handler: (chunk: Buffer, isLast: boolean) => void): void {
    this.bodyListeners = {
      data: (chunk: Buffer) => {
        this.countBody(chunk.length);
        handler(chunk, false);
      },
      end: () => {
        this.req.socket.setTimeout(0); // the body is in: the answer may take its time
        this.markBodyRead();
        handler(EMPTY, true);
      },
    };
    this.req.on('data', this.bodyListeners.data);
    this.req.on('end', this.bodyListeners.end);
  }

  pauseBody(): void {
    this.req.pause();
  }

  resumeBody(): void {
    this.req.resume();
  }

  protected beginStream(status: number, reason: string, headers: (readonly [string, string])[], totalBytes: number | undefined): void {
    this.head = { status, reason, headers, total: totalBytes };
    if (totalBytes !== undefined) {
      this.req.socket.setTimeout(this.stallMs); // a download the client stopped reading
      return;
    }
    // A stream of unknown length may be idle for longer than the socket's idle timeout (the
    // live stream between heartbeats): it is closed when a write stalls instead (writeChunk).
    this.watchStalls = true;
    this.req.socket.setTimeout(0);
    this.res.on('drain', () => {
      clearTimeout(this.stalled);
      this.stalled = undefined;
    });
  }

  /** Writes the recorded head once, before the first body bytes. */
  private writeHead(): void {
    if (!this.head) return;
    const { status, reason, headers, total } = this.head;
    const flat = headers.flatMap(([name, value]) => [name, value]);
    if (total !== undefined) flat.push('Content-Length', String(total));
    this.res.writeHead(status, reason || undefined, flat);
    this.head = undefined;
  }

  protected writeChunk(chunk: Buffer, released?: () => void): boolean {
    if (this.aborted || this.res.writableEnded) {
      released?.();
      return true;
    }
    this.writeHead();
    // The callback runs once the socket wrote the chunk or gave up on it (Node's reference,
    // "writable.write": it runs with an error then); Node drops it when the socket is already
    // destroyed, and the chunk is then left to the garbage collector.
    const written = released ? this.res.write(chunk, () => released()) : this.res.write(chunk);
    if (!written && this.watchStalls) this.stalled ??= setTimeout(() => this.res.destroy(), this.stallMs);
    return written;
  }

  protected whenWritable(): Promise<void> {
    if (this.aborted || !this.res.writableNeedDrain) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        this.res.off('drain', done);
        this.res.off('close', done);
        resolve();
      };
      this.res.on('drain', done);
      this.res.on('close', done);
    });
  }

  protected endStream(chunk?: Buffer): void {
    if (this.aborted || this.res.writableEnded) return;
    this.writeHead();
    this.res.end(chunk ?? EMPTY);
    if (!this.watchStalls) return;
    // Ended (its last message says where to resume): no longer a stall to cut short, but a
    // client that reads nothing of the tail for the idle timeout is dropped, like any socket.
    clearTimeout(this.stalled);
    this.req.socket.setTimeout(this.stallMs);
  }

  protected destroyConnection(): void {
    if (!this.aborted) this.res.destroy();
  }
}
