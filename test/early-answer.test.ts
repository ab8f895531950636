/**
 * An answer given before a short request body was read (a 409 to an upload for a finalized event)
 * lets the client finish sending: the store reads the rest and drops it, and the connection serves
 * the next request (exchange.ts `DRAIN_MAX_BYTES`; a create's body up to MAX_RECORD_SIZE_BYTES).
 * Closing at once reset the connection under the client's writes, and Node's fetch failed with EPIPE.
 */
import net from 'node:net';
import t from 'tap';
import { DRAIN_MAX_BYTES } from '../src/http/exchange.js';
import { postJson, smallEvent } from './support/events.js';
import { startStore } from './support/store-server.js';
import { until } from './support/waiting.js';

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
  // 12 MiB, more than DRAIN_MAX_BYTES, within MAX_RECORD_SIZE_BYTES (20 MiB): the create route drains any body within its limit.
  const length = 12 * 1024 * 1024;
  t.ok(length > DRAIN_MAX_BYTES);
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
