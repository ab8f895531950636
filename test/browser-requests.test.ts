/**
 * What a page an operator visits, or a client speaking odd HTTP, cannot make the store do
 * (docs/RELIABILITY.md, "Security"), over real HTTP on the engine the test process runs
 * (one of the files `npm run test:engine` runs on each engine): cross-site writes, DNS rebinding,
 * the Host checked before routing (malformed, missing, absolute form), text/plain JSON, ambiguous
 * framing, and pipelined requests. DNS rebinding is shown in Chromium
 * too: a page at `http://evil.test:<port>` resolved to the store.
 */
import os from 'node:os';
import t from 'tap';
import { expectedEngine } from './support/engines.js';
import { launchBrowser } from './support/browser.js';
import { getJson, imageEvent, smallEvent } from './support/events.js';
import { rawRequest } from '../scripts/lib/raw-http.js';
import { startStore } from './support/store-server.js';
import net from 'node:net';

const store = await startStore({ CORS_ALLOWED_ORIGINS: 'http://dashboard.plant:3000' });
t.teardown(store.stop);
const port = Number(new URL(store.url).port);
const event = JSON.stringify(smallEvent());

async function total(): Promise<number> {
  return (await getJson(`${store.url}/stats`)).body.current.total_events;
}

/** A request as a page's fetch sends it: Origin, Sec-Fetch-Site, and the Host the page used. */
function fromPage(method: string, path: string, headers: Record<string, string>, body?: string) {
  return fetch(`${store.url}${path}`, { method, headers, body });
}

t.test('a cross-site page cannot create, clean up or reset (403); its text/plain JSON is 415', async (t) => {
  const before = await total();
  const evil = { origin: 'http://evil.example', 'sec-fetch-site': 'cross-site' };
  const create = await fromPage('POST', '/v2/events', { ...evil, 'content-type': 'text/plain' }, event);
  t.equal(create.status, 403, 'create');
  t.match(await create.json(), { detail: /origin http:\/\/evil\.example may not change this store/ });
  t.equal((await fromPage('POST', '/admin/cleanup', evil)).status, 403, 'cleanup');
  t.equal((await fromPage('POST', '/reset/request', evil)).status, 403, 'reset');
  const plain = await fromPage('POST', '/v2/events', { 'content-type': 'text/plain' }, event);
  t.equal(plain.status, 415, 'JSON sent as text/plain, from anyone');
  t.equal(await total(), before, 'nothing was stored');
});

t.test('the store\'s own pages and listed origins may write; listed ones get CORS headers and preflights', async (t) => {
  const own = await fromPage('POST', '/v2/events', { origin: store.url, 'sec-fetch-site': 'same-origin', 'content-type': 'application/json' }, event);
  t.equal(own.status, 201, 'same origin');
  const listed = await fromPage('POST', '/v2/events', { origin: 'http://dashboard.plant:3000', 'sec-fetch-site': 'cross-site', 'content-type': 'application/json' }, event);
  t.equal(listed.status, 201, 'a CORS_ALLOWED_ORIGINS page');
  t.equal(listed.headers.get('access-control-allow-origin'), 'http://dashboard.plant:3000');
  const preflight = await fromPage('OPTIONS', '/v2/events', { origin: 'http://dashboard.plant:3000', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-api-key' });
  t.equal(preflight.status, 204);
  t.equal(preflight.headers.get('access-control-allow-methods'), 'POST, GET');
  t.match(preflight.headers.get('access-control-allow-headers'), /X-API-Key/);
  const stranger = await fromPage('OPTIONS', '/v2/events', { origin: 'http://evil.example', 'access-control-request-method': 'POST' });
  t.equal(stranger.status, 405, 'no preflight for others');
  t.equal(stranger.headers.get('access-control-allow-origin'), null);
});

/** GET (or another method) `path` with `host` and no browser header, as a rebinding page's same-origin fetch over plain HTTP sends it. */
async function asHost(path: string, host: string, method = 'GET', body = ''): Promise<{ status: number; detail: string }> {
  const length = body === '' ? '' : `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n`;
  const answer = await rawRequest(port, [`${method} ${path} HTTP/1.1\r\nHost: ${host}\r\n${length}Connection: close\r\n\r\n${body}`]);
  if (answer === 'closed') return { status: 0, detail: '' };
  return { status: answer.status, detail: answer.headers['content-type']?.startsWith('application/json') ? String(JSON.parse(answer.body.toString()).detail ?? '') : '' };
}

t.test('DNS rebinding: every route under a DNS name not the store\'s answers 421, with or without browser headers', async (t) => {
  const created = await fetch(`${store.url}/v2/events`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(imageEvent()) });
  const imageId = ((await created.json()) as { image_ids: string[] }).image_ids[0];
  const reads = ['/v2/events', '/stats', `/images/${imageId}`, '/v2/export?format=coco', '/health', '/'];
  for (const path of reads) {
    const answer = await asHost(path, 'evil.test:18221');
    t.equal(answer.status, 421, `GET ${path} as evil.test, no Origin, no Sec-Fetch-Site`);
  }
  const refused = await asHost('/v2/events', 'evil.test:18221');
  t.match(refused.detail, 'Host "evil.test:18221" is not a name of this store: add "evil.test" to ALLOWED_HOSTS', 'the answer names the host and the setting');
  const before = await total();
  t.equal((await asHost('/v2/events', 'evil.test:18221', 'POST', event)).status, 421, 'a POST too');
  const browser = await rawRequest(port, [`GET /v2/events HTTP/1.1\r\nHost: rebind.attacker.example:8001\r\nSec-Fetch-Site: same-origin\r\nConnection: close\r\n\r\n`]);
  t.equal(browser === 'closed' ? 0 : browser.status, 421, 'with Sec-Fetch-Site as before');
  t.equal((await asHost('/v2/events', 'event-store:8001', 'POST', event)).status, 421, 'a producer by a container name not listed');
  t.equal(await total(), before, 'nothing was stored');

  const addresses = Object.values(os.networkInterfaces()).flatMap((infos) => infos ?? []).map((info) => (info.family === 'IPv6' ? `[${info.address}]` : info.address));
  for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `${os.hostname()}:${port}`, `${os.hostname()}.local`, ...addresses.map((address) => `${address}:${port}`)]) {
    t.equal((await asHost('/v2/events', host)).status, 200, `${host}: one of the store's names by default`);
  }
});

t.test('a name in ALLOWED_HOSTS is served, to producers and browsers alike', async (t) => {
  const listed = await startStore({ ALLOWED_HOSTS: 'event-store, events.plant.example' });
  t.teardown(listed.stop);
  const listedPort = Number(new URL(listed.url).port);
  const producer = await rawRequest(listedPort, [`POST /v2/events HTTP/1.1\r\nHost: event-store:8001\r\nContent-Type: application/json\r\nContent-Length: ${event.length}\r\nConnection: close\r\n\r\n${event}`]);
  t.equal(producer === 'closed' ? 0 : producer.status, 201, 'a container name, listed');
  const page = await rawRequest(listedPort, [`GET /v2/events HTTP/1.1\r\nHost: events.plant.example\r\nSec-Fetch-Site: same-origin\r\nConnection: close\r\n\r\n`]);
  t.equal(page === 'closed' ? 0 : page.status, 200, 'a DNS alias, listed');
  const other = await rawRequest(listedPort, [`GET /stats HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n`]);
  t.equal(other === 'closed' ? 0 : other.status, 421, 'any other name still');
});

/** The status and `detail` of one raw request's answer (status 0: closed without one). */
async function answerTo(request: string, timeoutMs?: number): Promise<{ status: number; detail: string }> {
  const answer = await rawRequest(port, [request], { timeoutMs });
  if (answer === 'closed') return { status: 0, detail: '' };
  return { status: answer.status, detail: answer.headers['content-type']?.startsWith('application/json') ? String(JSON.parse(answer.body.toString()).detail ?? '') : '' };
}

t.test('the Host is checked first, before the path and the method: 421 for an unknown path, OPTIONS and DELETE under a name not the store\'s', async (t) => {
  const requests: [string, string][] = [
    ['an unknown path', 'GET /no-such-path HTTP/1.1'], ['OPTIONS on a known path', 'OPTIONS /v2/events HTTP/1.1'], ['DELETE on a known path', 'DELETE /v2/events HTTP/1.1'],
    ['a preflight of a listed origin', 'OPTIONS /v2/events HTTP/1.1\r\nOrigin: http://dashboard.plant:3000\r\nAccess-Control-Request-Method: POST'],
    ['the operator page', 'GET / HTTP/1.1'], ['/health', 'GET /health HTTP/1.1'],
  ];
  for (const [what, head] of requests) {
    t.equal((await answerTo(`${head}\r\nHost: evil.example\r\nConnection: close\r\n\r\n`)).status, 421, `${what} under evil.example`);
  }
  t.equal((await answerTo('GET /no-such-path HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n')).status, 404, 'under the store\'s name, an unknown path is 404');
  t.equal((await answerTo('DELETE /v2/events HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n')).status, 405, 'and DELETE 405');
});

t.test('a malformed Host answers 400 malformed_host before routing, on any path', async (t) => {
  const before = await total();
  const hosts = ['localhost:evil', '[::1]evil.example', '[evil.example', '', 'user@localhost'];
  for (const host of hosts) {
    for (const head of ['GET /health HTTP/1.1', 'GET /no-such-path HTTP/1.1', 'OPTIONS /v2/events HTTP/1.1']) {
      const answer = await answerTo(`${head}\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
      t.equal(answer.status, 400, `${head}, Host ${JSON.stringify(host)}`);
      t.match(answer.detail, host === '' ? 'The request has no Host, or an empty one' : `Host ${JSON.stringify(host)} is not host[:port]`);
    }
  }
  const create = await answerTo(`POST /v2/events HTTP/1.1\r\nHost: localhost:evil\r\nContent-Type: application/json\r\nContent-Length: ${event.length}\r\nConnection: close\r\n\r\n${event}`);
  t.equal(create.status, 400, 'a create too');
  const twice = await answerTo('GET /health HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\nConnection: close\r\n\r\n');
  t.equal(twice.status, 400, 'two Host lines (RFC 9112, 3.2)');
  t.equal(await total(), before, 'nothing was stored');
});

t.test('no Host, HTTP/1.0 and the absolute form: judged by the same rule on node:http; never reaching the store on uWebSockets.js', async (t) => {
  const requests = {
    noHost11: 'GET /health HTTP/1.1\r\nConnection: close\r\n\r\n',
    noHost10: 'GET /health HTTP/1.0\r\n\r\n',
    host10: 'GET /health HTTP/1.0\r\nHost: localhost\r\n\r\n',
    absoluteEvil: 'GET http://evil.example/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n',
    absoluteOwn: 'GET http://localhost/health HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n',
  };
  // uWebSockets.js 20.30 waits for a head it cannot parse until its 10 s timeout: asked at once, they take 10 s together.
  const answers = Object.fromEntries(await Promise.all(Object.entries(requests).map(async ([name, request]) => [name, await answerTo(request, 15_000)] as const)));
  if (expectedEngine().engine === 'node') {
    t.match(answers.noHost11, { status: 400, detail: 'The request has no Host' }, 'HTTP/1.1 without a Host: 400 malformed_host');
    t.match(answers.noHost10, { status: 400, detail: 'The request has no Host' }, 'HTTP/1.0 without a Host: 400 malformed_host');
    t.equal(answers.host10.status, 200, 'HTTP/1.0 with the store\'s Host is served');
    t.match(answers.absoluteEvil, { status: 421, detail: 'Host "evil.example" is not a name of this store' }, 'absolute form: the target\'s host decides (RFC 9112, 3.2.2), not the Host header');
    t.equal(answers.absoluteOwn.status, 200, 'absolute form under the store\'s name is served');
  } else {
    // uWebSockets.js's parser takes origin-form HTTP/1.1 requests with a Host only: it answers the
    // others itself (20.57: its own 400 or 505 page) or closes without an answer (20.30), and no
    // route, of the store's or not, runs (docs/API.md, "Framing and pipelining").
    for (const [name, answer] of Object.entries(answers)) t.ok([0, 400, 505].includes(answer.status) && answer.detail === '', `${name}: ${answer.status || 'closed'}, no answer of the store's`);
  }
});

t.test('a page at http://evil.test, resolved to the store, reads nothing (Chromium)', async (t) => {
  const browser = await launchBrowser(['--host-resolver-rules=MAP evil.test 127.0.0.1']);
  t.teardown(() => browser.close());
  // The attacker's page is its own (no policy of the store's applies to its scripts): only the Host decides.
  const context = await browser.newContext({ bypassCSP: true });
  const tab = await context.newPage();
  tab.setDefaultTimeout(10_000);
  await tab.goto(`http://evil.test:${port}/`);
  const statuses = await tab.evaluate(async (paths) => Promise.all(paths.map(async (path) => (await fetch(path)).status)), ['/v2/events', '/stats', '/v2/export?format=coco']);
  t.same(statuses, [421, 421, 421], 'the rebinding page\'s same-origin GETs');
});

t.test('ambiguous framing is refused and the connection closed (RFC 9112, section 6)', async (t) => {
  const before = await total();
  const head = 'POST /v2/events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n';
  const chunked = `${event.length.toString(16)}\r\n${event}\r\n0\r\n\r\n`;
  const cases: [string, string, number[]][] = [
    ['two Content-Length headers', `${head}Content-Length: ${event.length}\r\nContent-Length: 5\r\n\r\n${event}`, [400]],
    ['a Content-Length list', `${head}Content-Length: ${event.length}, ${event.length}\r\n\r\n${event}`, [0, 400]],
    ['Transfer-Encoding: gzip', `${head}Transfer-Encoding: gzip\r\n\r\n${chunked}`, [400, 501]],
    ['Transfer-Encoding: chunked, identity', `${head}Transfer-Encoding: chunked, identity\r\n\r\n${chunked}`, [400, 501]],
    ['Transfer-Encoding: identity', `${head}Transfer-Encoding: identity\r\nContent-Length: ${event.length}\r\n\r\n${event}`, [0, 400, 501]],
  ];
  for (const [name, request, statuses] of cases) {
    const answer = await rawRequest(port, [request]);
    t.ok(statuses.includes(answer === 'closed' ? 0 : answer.status), `${name}: ${answer === 'closed' ? 'closed' : answer.status}`);
  }
  t.equal(await total(), before, 'none was stored');
  const plain = await rawRequest(port, [`${head}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n${chunked}`]);
  t.equal(plain === 'closed' ? 0 : plain.status, 201, 'chunked alone is fine');
});

/**
 * Writes `requests` in one go on one connection; the status lines that came back, in order, once
 * there is one per request or the server closed the connection (a server that does neither fails
 * the test at its timeout).
 */
function pipelined(requests: string[]): Promise<string[]> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    const statuses = () => received.match(/HTTP\/1\.1 \d+/g) ?? [];
    socket.on('data', (data) => {
      received += data.toString('latin1');
      if (statuses().length >= requests.length) socket.end();
    });
    socket.on('close', () => resolve(statuses()));
    socket.on('connect', () => socket.write(requests.join('')));
  });
}

t.test('pipelined requests: answered in order on node:http; refused by closing on uWebSockets.js', async (t) => {
  const create = `POST /v2/events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${event.length}\r\n\r\n${event}`;
  const health = 'GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n';
  const statuses = await pipelined([create, create, health]);
  if (expectedEngine().engine === 'node') {
    t.same(statuses, ['HTTP/1.1 201', 'HTTP/1.1 201', 'HTTP/1.1 200'], 'every answer, in order');
  } else {
    // uWebSockets.js denies pipelining behind a pending response: it closes the connection
    // (its HttpContext.h); clients in the field never pipeline (docs/RELIABILITY.md, "Security").
    t.same(statuses, [], 'closed without a mixed-up answer');
  }
  t.equal((await getJson(`${store.url}/health`)).status, 200, 'the store keeps serving');
  t.same(await pipelined([health, health]), ['HTTP/1.1 200', 'HTTP/1.1 200'], 'synchronous routes pipeline on both');
});
