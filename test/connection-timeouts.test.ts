/**
 * Connections that stop moving are closed by either engine (docs/OPERATIONS.md, "HTTP engines";
 * src/http/node/node-engine.ts): an upload that stalls mid-body (its staging file removed), a
 * request head that never ends, and an idle keep-alive connection. uWebSockets.js closes them
 * after its 10 s; the node:http engine had no such limit, and 200 stalled uploads held 200
 * staging files and 400 descriptors for minutes (#31 item 11). A stop closes the keep-alive
 * connections left idle on either engine. Raw sockets over real TCP.
 */
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import t from 'tap';
import { fixture, postJson, smallEvent } from './support/events.js';
import { startStore } from './support/store-server.js';
import { until } from './support/waiting.js';

/** A raw connection to `url`'s port that resolves once connected; `closed` resolves when the server closes it. */
async function connection(url: string): Promise<{ socket: net.Socket; closed: Promise<unknown> }> {
  const socket = net.connect(Number(new URL(url).port), '127.0.0.1');
  socket.on('error', () => undefined); // a reset counts as closed
  const closed = once(socket, 'close');
  socket.resume(); // read whatever answers come, so only the server's timer can close it
  await once(socket, 'connect');
  return { socket, closed };
}

t.test('an upload that stalls, a head that never ends and an idle keep-alive are closed; nothing is left in staging', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const staging = path.join(store.dataDir, 'staging');
  const draft = await postJson(`${store.url}/v2/events`, smallEvent({ draft: true }));
  t.equal(draft.status, 201);

  const upload = await connection(store.url);
  const boundary = 'stalled-upload';
  const preamble = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="clip.mp4"\r\nContent-Type: video/mp4\r\n\r\n`;
  upload.socket.write(`POST /v2/events/${draft.body.id}/videos HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${preamble.length + 50 * 1024 * 1024}\r\n\r\n${preamble}`);
  upload.socket.write(fixture('cat-zoom.mp4'));

  const head = await connection(store.url);
  head.socket.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: '); // and nothing more

  const idle = await connection(store.url);
  idle.socket.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
  const [answer] = await once(idle.socket, 'data') as [Buffer];
  t.match(answer.toString('latin1'), /^HTTP\/1\.1 200/, 'the keep-alive connection was answered');

  await until('the stalled upload is staging', async () => fs.readdirSync(staging).length === 1);
  await Promise.all([upload.closed, head.closed, idle.closed]);
  t.pass('the server closed all three connections');
  await until('the stalled upload\'s staging file is removed', async () => fs.readdirSync(staging).length === 0);
  t.equal((await fetch(`${store.url}/v2/events/${draft.body.id}`)).status, 200, 'the store answers');
  const event = await (await fetch(`${store.url}/v2/events/${draft.body.id}`)).json();
  t.same(event.videos, [], 'nothing of the stalled upload was attached');
});

t.test('a stop closes the keep-alive connections left idle: a request on one after the stop is not answered', async (t) => {
  const store = await startStore();
  let stopped = false;
  t.teardown(() => (stopped ? undefined : store.stop()));
  const idle = await connection(store.url);
  idle.socket.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
  const [answer] = await once(idle.socket, 'data') as [Buffer];
  t.match(answer.toString('latin1'), /^HTTP\/1\.1 200/, 'the keep-alive connection was answered');

  await store.stop();
  stopped = true;
  // Left open, the connection would answer this (uWS keeps it for its 10 s idle timeout, and
  // keeps an in-process server's event loop open as long: 4 s per test file on Node 20).
  const reply = new Promise<string>((resolve) => idle.socket.once('data', (chunk: Buffer) => resolve(chunk.toString('latin1'))));
  idle.socket.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
  const outcome = await Promise.race([idle.closed.then(() => 'closed'), reply]);
  t.equal(outcome, 'closed', 'the server closed the connection instead of answering');
});
