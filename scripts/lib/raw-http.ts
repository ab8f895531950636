/**
 * Raw HTTP/1.1 over a socket to 127.0.0.1, for what fetch will not send: paths with `..` left
 * as written, huge or malformed headers, bodies sent slowly, cut short or abandoned. Shared by
 * the tests and the fuzz harness (scripts/lib is the one place for harness code both use).
 */
import net from 'node:net';

/** A parsed answer. */
export interface RawAnswer {
  status: number;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  body: Buffer;
}

export interface RawOptions {
  /** Pause between chunks (ms), for slow clients. */
  delayMs?: number;
  /** Hang up after the chunks instead of waiting for an answer. */
  abort?: boolean;
  /** Deadline for the answer (ms); passing it rejects: a hang is a failure. */
  timeoutMs?: number;
}

function parseHead(head: string): { status: number; headers: Record<string, string> } {
  const [statusLine, ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine.split(' ')[1]), headers };
}

/**
 * Sends `chunks` (the request, written as given) to `port` and reads one answer.
 * @returns the answer; 'closed' when the server closed the connection without a complete one
 *   (or, with `abort`, once the chunks are sent and the socket destroyed)
 * @throws Error when no answer and no close came within `timeoutMs`
 */
export function rawRequest(port: number, chunks: (string | Buffer)[], options: RawOptions = {}): Promise<RawAnswer | 'closed'> {
  const { delayMs = 0, abort = false, timeoutMs = 10_000 } = options;
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = Buffer.alloc(0);
    let settled = false;
    const finish = (value: RawAnswer | 'closed' | Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (value instanceof Error) reject(value);
      else resolve(value);
    };
    const timer = setTimeout(() => finish(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    socket.on('data', (data) => {
      received = Buffer.concat([received, data]);
      const end = received.indexOf('\r\n\r\n');
      if (end < 0) return;
      const { status, headers } = parseHead(received.subarray(0, end).toString('latin1'));
      const body = received.subarray(end + 4);
      if (body.length >= Number(headers['content-length'] ?? 0)) finish({ status, headers, body: body.subarray(0, Number(headers['content-length'] ?? 0)) });
    });
    socket.on('error', () => finish('closed'));
    socket.on('close', () => finish('closed'));
    socket.on('connect', async () => {
      for (const chunk of chunks) {
        if (settled || socket.destroyed) return;
        await new Promise((written) => socket.write(chunk, written));
        if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
      }
      if (abort) finish('closed');
    });
  });
}

/** A port on 127.0.0.1 with nothing listening (bound, then released). */
export function unusedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
