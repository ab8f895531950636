/**
 * Hardening of the HTTP surface against a client on the LAN, each test replaying the request
 * that once went wrong (docs/RELIABILITY.md, "Security"): a Range header built to backtrack, an
 * uploaded HTML page served as HTML, `/docs/<name>` looked up as an object property.
 */
import { once } from 'node:events';
import net from 'node:net';
import t from 'tap';
import { MAX_RANGE_HEADER_LENGTH, resolveRange } from '../src/http/range.js';
import { downloadHeaders, isPassiveEssence, servedContentType } from '../src/http/download-headers.js';
import { expectedEngine } from './support/engines.js';
import { fixture, getJson, imageEvent, postJson, smallEvent } from './support/events.js';
import { postFile } from './support/multipart.js';
import { rawRequest } from '../scripts/lib/raw-http.js';
import { spawnStore } from '../scripts/lib/spawned-store.js';
import { startStore, tempDataDir } from './support/store-server.js';
import { until } from './support/waiting.js';

const store = await startStore();
t.teardown(store.stop);
const port = Number(new URL(store.url).port);
const image = fixture('cat.jpg');
const created = await postJson(`${store.url}/v2/events`, imageEvent());
const imageUrl = `/images/${created.body.image_ids[0]}`;

t.test('a Range header of 125,000 spaces answers 416 at once, and the store keeps serving', async (t) => {
  // The old pattern /^bytes=\s*(\d*)\s*-\s*(\d*)\s*$/ backtracked quadratically on this (12.4 s).
  const range = `bytes=${' '.repeat(125_000)}x`;
  const answer = await rawRequest(port, [`GET ${imageUrl} HTTP/1.1\r\nHost: localhost\r\nRange: ${range}\r\n\r\n`]);
  t.not(answer, 'closed');
  if (answer === 'closed') return;
  t.equal(answer.status, 416, 'refused for its length, not parsed');
  t.equal(answer.headers['content-range'], `bytes */${image.length}`);
  t.equal((await getJson(`${store.url}/health`)).status, 200, 'the store still answers');

  for (const header of [`bytes=${' '.repeat(MAX_RANGE_HEADER_LENGTH)}0-1`, `bytes=0-1${','.repeat(300)}`]) {
    const res = await fetch(`${store.url}${imageUrl}`, { headers: { range: header } });
    t.equal(res.status, 416, `a ${header.length}-character header answers 416`);
    await res.arrayBuffer();
  }
  const spaced = await fetch(`${store.url}${imageUrl}`, { headers: { range: 'bytes= 10 - 19 ' } });
  t.equal(spaced.status, 206, 'spaces around the numbers are still accepted');
  t.same(Buffer.from(await spaced.arrayBuffer()), image.subarray(10, 20));
});

t.test('resolveRange reads one range linearly; other forms fall back to the whole file', async (t) => {
  t.same(resolveRange('bytes=0-9', 100), { start: 0, end: 9 });
  t.same(resolveRange('bytes=90-', 100), { start: 90, end: 99 });
  t.same(resolveRange('bytes=-10', 100), { start: 90, end: 99 });
  for (const ignored of ['bytes=-', 'items=0-1', 'bytes=0-1,5-6', 'bytes=a-b', 'bytes 0-1', 'bytes=0x1-2', `bytes=${' '.repeat(200)}x`]) {
    t.equal(resolveRange(ignored, 100), undefined, `${JSON.stringify(ignored.slice(0, 20))}: whole file`);
  }
  for (const refused of ['bytes=100-', 'bytes=-0', 'bytes=5-4', `bytes=0-1${' '.repeat(MAX_RANGE_HEADER_LENGTH)}`]) {
    t.throws(() => resolveRange(refused, 100), { code: 'range_not_satisfiable', status: 416, headers: { 'Content-Range': 'bytes */100' } }, JSON.stringify(refused.slice(0, 20)));
  }
});

t.test('an uploaded HTML or SVG page downloads as a sandboxed attachment, never as a page', async (t) => {
  const draft = (await postJson(`${store.url}/v2/events`, smallEvent({ draft: true }))).body;
  const page = Buffer.from('<!doctype html><script>fetch("/admin/cleanup", {method: "POST"})</script>');
  const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(document.domain)</script></svg>');
  const uploads: [string, Buffer, boolean][] = [
    ['text/html', page, false],
    ['text/html; charset=utf-8', page, false],
    ['TEXT/HTML', page, false],
    ['application/xhtml+xml', page, false],
    ['image/svg+xml', svg, false],
    ['text/xml', svg, false],
    ['application/javascript', page, false],
    ['application/pdf', page, false],
    ['text/csv', Buffer.from('a,b\n1,2\n'), true],
    ['text/plain', page, true],
  ];
  for (const [contentType, bytes, inline] of uploads) {
    const attached = await postFile(`${store.url}/v2/events/${draft.id}/local-only-files`, bytes, { content_type: contentType }, 'application/octet-stream');
    t.equal(attached.status, 201, `${contentType} accepted`);
    const res = await fetch(`${store.url}/local-only-files/${attached.body.file_id}`);
    t.equal(res.status, 200);
    t.equal(res.headers.get('content-type'), contentType.replace('TEXT/HTML', 'text/html'), `${contentType}: the declared type is kept (its essence lower-cased)`);
    t.equal(res.headers.get('x-content-type-options'), 'nosniff', `${contentType}: nosniff`);
    t.equal(res.headers.get('content-disposition'), inline ? null : 'attachment', `${contentType}: ${inline ? 'inline' : 'attachment'}`);
    t.equal(res.headers.get('content-security-policy'), 'sandbox', `${contentType}: a sandbox, inline or not`);
    t.same(Buffer.from(await res.arrayBuffer()), bytes, `${contentType}: bytes unchanged`);
  }
  const ranged = await postFile(`${store.url}/v2/events/${draft.id}/local-only-files`, page, { content_type: 'text/html' }, 'text/html');
  const partial = await fetch(`${store.url}/local-only-files/${ranged.body.file_id}`, { headers: { range: 'bytes=0-4' } });
  t.equal(partial.status, 206);
  t.same([partial.headers.get('content-disposition'), partial.headers.get('content-security-policy')], ['attachment', 'sandbox'], 'a Range request gets the same headers');
  await partial.arrayBuffer();
});

t.test('images and videos stay inline, with nosniff', async (t) => {
  const res = await fetch(`${store.url}${imageUrl}`);
  t.equal(res.headers.get('content-type'), 'image/jpeg');
  t.equal(res.headers.get('x-content-type-options'), 'nosniff');
  t.equal(res.headers.get('content-disposition'), null);
  await res.arrayBuffer();
  const draft = (await postJson(`${store.url}/v2/events`, smallEvent({ draft: true }))).body;
  const video = await postFile(`${store.url}/v2/events/${draft.id}/videos`, fixture('cat-zoom.mp4'));
  const clip = await fetch(`${store.url}/videos/${video.body.file_id}`);
  t.same([clip.headers.get('content-type'), clip.headers.get('x-content-type-options'), clip.headers.get('content-disposition')], ['video/mp4', 'nosniff', null]);
  await clip.arrayBuffer();

  const passive = ['image/png', 'image/jpeg', 'video/webm', 'audio/ogg', 'text/plain; charset=utf-8', 'application/json', 'application/octet-stream'];
  const active = ['text/html', 'image/svg+xml', 'IMAGE/SVG+XML', 'application/xml', 'application/rss+xml', 'text/javascript', 'application/ecmascript', 'application/x-shockwave-flash', 'multipart/x-mixed-replace'];
  const essence = (type: string) => servedContentType(type).split(';', 1)[0];
  for (const type of passive) t.ok(isPassiveEssence(essence(type)), `${type} inline`);
  for (const type of active) t.notOk(isPassiveEssence(essence(type)), `${JSON.stringify(type)} attachment`);
});

t.test('a content_type that is not exactly one clean MIME type is refused at upload, and never served as stored', async (t) => {
  // A quoted parameter that hides a second type: Chromium read the list and ran text/html.
  const listed = 'image/png; a="x\\"; b=", text/html; c="';
  const hostile = [listed, 'text/plain\r\nSet-Cookie: a=b', 'image/png\r\n\r\n<script>alert(1)</script>', 'text/html, image/png', 'image/png; a="b c"', 'image/png\u0000', 'a'.repeat(300) + '/b'];
  const draft = (await postJson(`${store.url}/v2/events`, smallEvent({ draft: true }))).body;
  for (const contentType of hostile) {
    const refused = await postFile(`${store.url}/v2/events/${draft.id}/local-only-files`, Buffer.from('<script>alert(1)</script>'), { content_type: contentType }, 'application/octet-stream');
    t.equal(refused.status, 422, `${JSON.stringify(contentType.slice(0, 40))}: 422`);
    t.match(refused.body.detail[0].msg, 'content_type must be one MIME type', 'says what it must be');
  }
  t.equal((await getJson(`${store.url}/v2/events/${draft.id}`)).body.local_only_files.length, 0, 'nothing stored');
  // A store written before the check may hold such a type: it is served as opaque bytes.
  for (const stored of ['text/plain\r\nSet-Cookie: a=b', 'text/html, image/png']) {
    t.same(downloadHeaders(stored), [['Content-Type', 'application/octet-stream'], ['X-Content-Type-Options', 'nosniff'], ['Content-Security-Policy', 'sandbox']], `${JSON.stringify(stored.slice(0, 30))} served as octet-stream`);
  }
  t.same(downloadHeaders(listed)[0], ['Content-Type', 'image/png'], 'the listed one: only its essence reaches the header, never its parameters');
  t.same(downloadHeaders('Text/CSV; charset=UTF-8; x=y')[0], ['Content-Type', 'text/csv; charset=UTF-8'], 'a clean type keeps its essence and charset');
});

t.test('/docs/<name> finds only its own assets: constructor, __proto__, toString answer 404', async (t) => {
  const names = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__', 'isPrototypeOf'];
  for (const name of names) {
    const res = await getJson(`${store.url}/docs/${name}`);
    t.same([res.status, res.body], [404, { detail: 'Not Found' }], `/docs/${name}`);
  }
  const css = await fetch(`${store.url}/docs/swagger-ui.css`);
  t.equal(css.status, 200, 'a real asset is still served');
  await css.arrayBuffer();

  // The process's own log: nothing about these names, and never the install path.
  const spawned = await spawnStore({ PORT: '0', DATA_DIR: tempDataDir() });
  t.teardown(() => spawned.child.kill('SIGKILL'));
  for (const name of names) t.equal((await fetch(`${spawned.url}/docs/${name}`)).status, 404, `spawned store: /docs/${name}`);
  t.equal((await fetch(`${spawned.url}/health`)).status, 200);
  t.notMatch(spawned.output(), /swagger-ui-dist|node_modules|ENOENT|"level":50/, 'no error and no install path in the log');
});

t.test('small holes in validation and headers (#31 item 12)', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  for (const limit of ['0x10', '1e3', '%205', '5.0', '+5', '-1', '0', '1001', '']) {
    const res = await getJson(`${store.url}/v2/events?limit=${limit}`);
    t.equal(res.status, 422, `limit=${limit} is refused: decimal digits only`);
  }
  t.equal((await getJson(`${store.url}/v2/events?limit=0010`)).status, 200, 'limit=0010 is ten');
  for (const time of ['2026-02-30T00:00:00Z', '2026-04-31', '2025-02-29T12:00:00Z']) {
    const res = await getJson(`${store.url}/v2/events?start_time=${encodeURIComponent(time)}`);
    t.equal(res.status, 400, `start_time=${time} is refused, not rolled over to the next month`);
  }
  t.equal((await getJson(`${store.url}/v2/events?start_time=2024-02-29T00:00:00Z`)).status, 200, 'a leap day is a day');
  const proto = await postJson(`${store.url}/v2/events`, JSON.parse('{"inference_timestamp":"2026-01-01T00:00:00Z","event_schema":"custom","event_data":{},"custom_metadata":{"__proto__":1}}'));
  t.equal(proto.status, 422);
  t.same(proto.body.detail, [{ loc: ['body', 'custom_metadata', '__proto__'], msg: 'the key __proto__ is not allowed', type: 'value_error.key' }], 'the message names the refused key, not its length');
  const docs = await fetch(`${store.url}/docs`);
  await docs.arrayBuffer();
  t.match(docs.headers.get('content-security-policy'), /frame-ancestors 'none'/, '/docs cannot be framed');
  t.match(docs.headers.get('content-security-policy'), /script-src 'self'/, 'and runs only its own scripts');
  t.equal(docs.headers.get('x-content-type-options'), 'nosniff');
  const bundle = await fetch(`${store.url}/docs/swagger-ui-bundle.js`);
  await bundle.arrayBuffer();
  t.equal(bundle.headers.get('x-content-type-options'), 'nosniff', 'Swagger UI\'s files too');
});

t.test('HEAD / and HEAD /health answer the GET head without a body (#31 item 12)', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  for (const path of ['/', '/health']) {
    const get = await fetch(`${store.url}${path}`);
    const length = (await get.arrayBuffer()).byteLength;
    // HEAD, then (once its head is in) a GET on the same connection: the GET's status line must
    // follow the HEAD's head at once, with no body between them; or the store closes the
    // connection after the head (uWebSockets.js does after a head-only answer), sending nothing more.
    const socket = net.connect(Number(new URL(store.url).port), '127.0.0.1');
    await once(socket, 'connect');
    let text = '';
    let closed = false;
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => (closed = true));
    socket.write(`HEAD ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    await until(`the head of HEAD ${path}`, () => text.includes('\r\n\r\n'));
    if (!closed) socket.write('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    await until(`the next answer, or the close, after HEAD ${path}`, () => closed || ((text.match(/HTTP\/1\.1 /g) ?? []).length === 2 && text.endsWith('}')));
    socket.destroy();
    const end = text.indexOf('\r\n\r\n') + 4;
    const [head, rest] = [text.slice(0, end), text.slice(end)];
    t.match(head, /^HTTP\/1\.1 200/, `HEAD ${path}: 200`);
    t.match(head, new RegExp(`\\r\\ncontent-length: ${length}\\r\\n`, 'i'), `HEAD ${path}: the GET's Content-Length`);
    // docs/API.md, "Routes": HEAD answers the head without the body, and uWebSockets.js then
    // closes the connection; node:http keeps it open for the next request.
    if (expectedEngine().engine === 'uws') t.same([rest, closed], ['', true], `HEAD ${path}: no body after the head, the connection then closed (uWebSockets.js)`);
    else t.match(rest, /^HTTP\/1\.1 200/, `HEAD ${path}: no body after the head, the next answer follows (node:http)`);
  }
  const other = await fetch(`${store.url}/v2/events`, { method: 'HEAD' });
  t.equal(other.status, 405, 'other routes keep answering 405 to HEAD');
});
