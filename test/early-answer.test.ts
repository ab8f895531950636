/**
 * An answer given before the request body was read (a 409 to an upload for a finalized event, a
 * 413 to a body past its limit, a 503 to a create the body budget cannot hold) lets the client
 * finish sending: the store answers at once, reads the rest and drops it (lingering close,
 * exchange.ts `LingeringClose`; LINGERING_CLOSE_MAX_BYTES, LINGERING_CLOSE_SECONDS), then keeps the
 * connection for the next request, or closes it when the client asked so. Closing at once reset
 * the connection under the client's writes: Node's fetch failed with EPIPE, and Python's urllib
 * and requests, which send the whole body before reading, raised BrokenPipeError instead of the 413.
 */
import { execFile } from 'node:child_process';
import net from 'node:net';
import t from 'tap';
import { postJson, smallEvent } from './support/events.js';
import { requireProgram } from './support/host-program.js';
import { startStore } from './support/store-server.js';
import { until } from './support/waiting.js';

const MiB = 1024 * 1024;

t.test('a refused upload is read to its end and the connection serves the next request', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const finalized = (await postJson(`${store.url}/v2/events`, smallEvent())).body.id;
  const boundary = 'edge-test-boundary';
  const part = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="clip.mp4"\r\nContent-Type: video/mp4\r\n\r\n`),
    Buffer.alloc(200_000, 7),
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  const socket = net.connect(Number(new URL(store.url).port), '127.0.0.1');
  t.teardown(() => socket.destroy());
  let received = '';
  let closed = false;
  socket.on('data', (data) => (received += data.toString('latin1')));
  socket.on('close', () => (closed = true));
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(`POST /v2/events/${finalized}/videos HTTP/1.1\r\nHost: localhost\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${part.length}\r\n\r\n`);
  socket.write(part.subarray(0, 1000));

  await until('the answer, before the body is all sent', () => received.includes('\r\n\r\n{'));
  t.match(received, /^HTTP\/1\.1 409 /, 'the upload is refused at once');
  t.notMatch(received, /connection: close/i, 'without closing the connection');
  socket.write(part.subarray(1000));
  socket.write('GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n');
  await until('the next answer on the same connection', () => closed || (received.match(/HTTP\/1\.1 \d+/g) ?? []).length === 2);
  t.same(received.match(/HTTP\/1\.1 \d+/g), ['HTTP/1.1 409', 'HTTP/1.1 200'], 'the rest of the body was dropped and the next request answered');
  t.notOk(closed, 'the connection is still open');
});

t.test('a create refused 503 body_budget_full before its 12 MiB were read is drained too: its client reads the answer and goes on', async (t) => {
  // 12 MiB, within MAX_RECORD_SIZE_BYTES (20 MiB) and LINGERING_CLOSE_MAX_BYTES (64 MiB).
  const length = 12 * 1024 * 1024;
  const store = await startStore();
  t.teardown(store.stop);
  const port = Number(new URL(store.url).port);
  const head = `POST /v2/events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;
  // The first create holds 12 MiB of the 64 MiB budget and 53 MiB more for 700,000 `[1,2],` its body has so far (what
  // parsing them will add), its body unfinished: the second does not fit.
  const holder = net.connect(port, '127.0.0.1');
  t.teardown(() => holder.destroy());
  holder.on('error', () => undefined);
  await new Promise((resolve) => holder.once('connect', resolve));
  holder.write(head);
  holder.write(`{"custom_metadata": {"k": [${'[1,2],'.repeat(700_000)}`);
  const held = async () => Number((await (await fetch(`${store.url}/metrics`)).text()).match(/^edge_events_inflight_body_bytes (\d+)/m)![1]);
  await until('the first body and what parsing it will add held', async () => (await held()) > 64 * 1024 * 1024 - length);

  const socket = net.connect(port, '127.0.0.1');
  t.teardown(() => socket.destroy());
  let received = '';
  let closed = false;
  socket.on('data', (data) => (received += data.toString('latin1')));
  socket.on('close', () => (closed = true));
  socket.on('error', () => undefined);
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(head);
  await until('the answer, before any of the body is sent', () => received.includes('\r\n\r\n{'));
  t.match(received, /^HTTP\/1\.1 503 /, 'refused at once');
  t.match(received, /retry-after: 1/i);
  t.notMatch(received, /connection: close/i, 'without closing the connection');
  socket.write(Buffer.alloc(length, 0x20));
  socket.write('GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n');
  await until('the next answer on the same connection', () => closed || (received.match(/HTTP\/1\.1 \d+/g) ?? []).length === 2, 30_000);
  t.same(received.match(/HTTP\/1\.1 \d+/g), ['HTTP/1.1 503', 'HTTP/1.1 200'], 'the body was dropped and the next request answered');
  t.notOk(closed, 'the connection is still open');
});

/**
 * A Python client that sends its whole body before it reads the answer, as pipelines do: urllib
 * (which sends `Connection: close`) or requests (keep-alive), the body with a Content-Length or
 * chunked (a generator). Prints `{"status", "body"}`, or `{"error", "message"}` when the client
 * raised (BrokenPipeError, ConnectionError).
 */
const PYTHON_CLIENT = `
import json, sys, urllib.error, urllib.request
spec = json.loads(sys.argv[1])
def chunks():
    yield spec['prefix'].encode()
    left = spec['bytes'] - len(spec['prefix'])
    filler = b'x' * 65536
    while left > 0:
        yield filler[:min(left, len(filler))]
        left -= len(filler)
body = b''.join(chunks()) if spec['framing'] == 'length' else chunks()
headers = {'Content-Type': spec['type']}
try:
    if spec['client'] == 'urllib':
        request = urllib.request.Request(spec['url'], data=body, headers=headers, method='POST')
        try:
            with urllib.request.urlopen(request, timeout=60) as res:
                status, text = res.status, res.read()
        except urllib.error.HTTPError as err:
            status, text = err.code, err.read()
    else:
        import requests
        res = requests.post(spec['url'], data=body, headers=headers, timeout=60)
        status, text = res.status_code, res.content
    print(json.dumps({'status': status, 'body': text.decode('utf-8', 'replace')}))
except Exception as err:
    print(json.dumps({'error': type(err).__name__, 'message': str(err)}))
`;

interface Upload {
  client: 'urllib' | 'requests';
  framing: 'length' | 'chunked';
  url: string;
  /** Bytes of the whole body. */
  bytes: number;
  type: string;
  /** The body's first bytes (a multipart part's head); the rest is filler. */
  prefix?: string;
}

/** Runs PYTHON_CLIENT for `upload` (asynchronously: the store answers on this process's event loop). */
function pythonUpload(python: string, upload: Upload): Promise<{ status?: number; body?: string; error?: string; message?: string }> {
  return new Promise((resolve, reject) => {
    execFile(python, ['-c', PYTHON_CLIENT, JSON.stringify({ prefix: '', ...upload })], { timeout: 90_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`python3 failed: ${stderr || err.message}`));
      else resolve(JSON.parse(stdout));
    });
  });
}

/** Debian's python3 with its requests module (package python3-requests; .ci/run installs both). */
function pythonWithRequests(): Promise<string> {
  const python = requireProgram('python3');
  return new Promise((resolve, reject) => execFile(python, ['-c', 'import requests'], (err) => (err
    ? reject(new Error(`${python} has no requests module: apt-get install python3-requests (.ci/run does)`))
    : resolve(python))));
}

t.test('a refused upload reaches Python\'s urllib and requests as its 413, not as a broken pipe, whether sent with a length or chunked', async (t) => {
  const python = await pythonWithRequests();
  const store = await startStore({ MAX_RECORD_SIZE_BYTES: String(MiB), MAX_VIDEO_UPLOAD_BYTES: String(MiB), MAX_LOCAL_ONLY_FILE_UPLOAD_BYTES: String(MiB) });
  t.teardown(store.stop);
  const draft = (await postJson(`${store.url}/v2/events`, smallEvent({ draft: true }))).body.id;
  const multipart = 'multipart/form-data; boundary=edge-test-boundary';
  const part = (name: string) => `--edge-test-boundary\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: video/mp4\r\n\r\n`;
  const create = { url: `${store.url}/v2/events`, type: 'application/json', prefix: '{"custom_metadata": {"pad": "' };
  const video = { url: `${store.url}/v2/events/${draft}/videos`, type: multipart, prefix: part('clip.mp4') };
  const localOnly = { url: `${store.url}/v2/events/${draft}/local-only-files`, type: multipart, prefix: part('clip.mp4') };
  const record = /^Record (of \d+ bytes )?exceeds the limit of 1048576 bytes$/;
  const upload = /^Upload exceeds the limit of 1048576 bytes$/;
  // Refused at the head (a declared length past the limit) or mid-body (a chunked body passing it).
  const cases: [Upload, RegExp][] = [
    [{ client: 'urllib', framing: 'length', bytes: 40 * MiB, ...create }, record],
    [{ client: 'urllib', framing: 'length', bytes: 8 * MiB, ...localOnly }, upload],
    [{ client: 'urllib', framing: 'chunked', bytes: 8 * MiB, ...video }, upload],
    [{ client: 'requests', framing: 'chunked', bytes: 30_000_000, ...video }, upload],
    [{ client: 'requests', framing: 'chunked', bytes: 8 * MiB, ...create }, record],
    [{ client: 'requests', framing: 'length', bytes: 8 * MiB, ...localOnly }, upload],
  ];
  for (const [sent, detail] of cases) {
    const what = `${sent.client}, ${sent.framing === 'length' ? 'Content-Length' : 'chunked'}, ${sent.bytes} bytes to ${new URL(sent.url).pathname.replace(draft, '{id}')}`;
    const answer = await pythonUpload(python, sent);
    t.equal(answer.status, 413, `${what}: ${answer.error ? `${answer.error}: ${answer.message}` : answer.status}`);
    t.match(answer.body && JSON.parse(answer.body), { detail }, `${what}: the error's message`);
  }
  const event = (await (await fetch(`${store.url}/v2/events/${draft}`)).json()) as { videos: unknown[]; local_only_files: unknown[] };
  t.same([event.videos, event.local_only_files], [[], []], 'nothing attached');
});

/** A raw connection that writes a chunked body to `head`'s request until the store closes it. */
async function chunkedUntilClosed(port: number, head: string, pace: { chunk: number; everyMs: number }) {
  const socket = net.connect(port, '127.0.0.1');
  let received = '';
  let closed = false;
  let sent = 0;
  socket.on('data', (data) => (received += data.toString('latin1')));
  socket.on('close', () => (closed = true));
  socket.on('error', () => undefined);
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(head);
  const chunk = Buffer.concat([Buffer.from(`${pace.chunk.toString(16)}\r\n`), Buffer.alloc(pace.chunk, 0x20), Buffer.from('\r\n')]);
  const writing = (async () => {
    while (!closed) {
      sent += pace.chunk;
      if (!socket.write(chunk)) await new Promise((resolve) => { socket.once('drain', resolve); socket.once('close', resolve); });
      if (pace.everyMs > 0) await new Promise((resolve) => setTimeout(resolve, pace.everyMs)); // the client's pace, not a wait for the store
    }
  })();
  return { socket, writing, received: () => received, closed: () => closed, sent: () => sent };
}

t.test('lingering is bounded: the connection is closed past LINGERING_CLOSE_MAX_BYTES more bytes, or after LINGERING_CLOSE_SECONDS, and at once when off', async (t) => {
  const head = 'POST /v2/events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n';
  const portOf = (store: { url: string }) => Number(new URL(store.url).port);

  // A client that keeps sending as fast as it can: closed once 1 MiB more came after the 413, long
  // before the 30 s would pass.
  const bytesBound = await startStore({ MAX_RECORD_SIZE_BYTES: '1024', LINGERING_CLOSE_MAX_BYTES: String(MiB), LINGERING_CLOSE_SECONDS: '30' });
  t.teardown(bytesBound.stop);
  const fast = await chunkedUntilClosed(portOf(bytesBound), head, { chunk: 64 * 1024, everyMs: 0 });
  t.teardown(() => fast.socket.destroy());
  await until('the store closed the connection past the byte bound', fast.closed, 20_000);
  await fast.writing;
  t.match(fast.received(), /^HTTP\/1\.1 413 /, 'the 413 came first');
  t.ok(fast.sent() < 16 * MiB, `closed after ${fast.sent()} bytes handed to the socket: 1 MiB read, and what the sockets' buffers held`);

  // A client that keeps sending, slowly enough that no idle timeout (10 s) fires: closed after a second.
  const timeBound = await startStore({ MAX_RECORD_SIZE_BYTES: '1024', LINGERING_CLOSE_SECONDS: '1' });
  t.teardown(timeBound.stop);
  const slow = await chunkedUntilClosed(portOf(timeBound), head, { chunk: 2048, everyMs: 100 });
  t.teardown(() => slow.socket.destroy());
  await until('the store closed the slow connection after LINGERING_CLOSE_SECONDS', slow.closed, 8_000);
  await slow.writing;
  t.match(slow.received(), /^HTTP\/1\.1 413 /, 'the 413 came first');

  // Off: a refused body is cut off at once.
  const off = await startStore({ MAX_RECORD_SIZE_BYTES: '1024', LINGERING_CLOSE_MAX_BYTES: '0' });
  t.teardown(off.stop);
  const cut = await chunkedUntilClosed(portOf(off), head, { chunk: 2048, everyMs: 100 });
  t.teardown(() => cut.socket.destroy());
  await until('the store closed the connection', cut.closed, 8_000);
  await cut.writing;
  t.match(cut.received(), /^HTTP\/1\.1 413 [^]*connection: close/i, 'answered 413 with Connection: close');
});

t.test('a client that stops sending to read the answer gets it whole, whether it asked to close or not, with a length or chunked', async (t) => {
  const store = await startStore({ MAX_RECORD_SIZE_BYTES: '1024' });
  t.teardown(store.stop);
  const port = Number(new URL(store.url).port);
  const pad = Buffer.alloc(4096, 0x20);
  const heads: [string, Buffer][] = [
    ['Connection: close, chunked', Buffer.concat([Buffer.from('Connection: close\r\nTransfer-Encoding: chunked\r\n\r\n1000\r\n'), pad, Buffer.from('\r\n')])],
    ['Connection: close, 1 MiB declared', Buffer.concat([Buffer.from(`Connection: close\r\nContent-Length: ${MiB}\r\n\r\n`), pad])],
    ['kept, chunked', Buffer.concat([Buffer.from('Transfer-Encoding: chunked\r\n\r\n1000\r\n'), pad, Buffer.from('\r\n')])],
  ];
  for (const [what, rest] of heads) {
    // A curl that sees an error while uploading stops sending and reads the answer; it must not
    // wait for LINGERING_CLOSE_SECONDS.
    const socket = net.connect(port, '127.0.0.1');
    t.teardown(() => socket.destroy());
    let received = Buffer.alloc(0);
    socket.on('data', (data) => (received = Buffer.concat([received, data])));
    socket.on('error', () => undefined);
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(Buffer.concat([Buffer.from('POST /v2/events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n'), rest]));
    const whole = await until(`${what}: the whole answer`, () => {
      const end = received.indexOf('\r\n\r\n');
      const length = end < 0 ? NaN : Number(/content-length: (\d+)/i.exec(received.subarray(0, end).toString('latin1'))?.[1]);
      return received.length >= end + 4 + length && received;
    }, 10_000);
    t.match(whole.toString('latin1'), /^HTTP\/1\.1 413 [^]*\r\n\r\n\{"detail":"Record (of \d+ bytes )?exceeds the limit of 1024 bytes"\}$/, `${what}: 413 and its message`);
  }
});
