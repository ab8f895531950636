/**
 * The search proxy on the store (docs/API.md, "Search gateway"), over real HTTP: the real store on
 * port 0 in front of the hosted-API simulator (and, for headers the simulator cannot send, a small
 * stub).
 */
import { createServer, request } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { searchProxySettings } from '../src/http/search-proxy-routes.js';
import { SecretMasker } from '../src/search/proxy-forward.js';
import { FOREIGN_WORKSPACE, SearchSimulator, WORKSPACE } from './support/search-simulator.js';
import { startStore } from './support/store-server.js';
import { until } from './support/waiting.js';

const DEVICE_KEY = 'device-secret';
const AUTH = { 'x-api-key': DEVICE_KEY };

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

/** Every response body the tests saw, to check that none carries a hosted key. */
const seen: string[] = [];

async function post(url: string, body: unknown, headers: Record<string, string> = AUTH): Promise<Answer> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  seen.push(text);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/** POSTs to `path` as written (no URL normalisation), with the device key. */
function rawPost(base: string, path: string, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { method: 'POST', path, headers: { 'content-type': 'application/json', ...AUTH } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A hosted stand-in answering every request with `answer` (the simulator sends no RateLimit-*). */
async function startStub(answer: (req: IncomingMessage, res: ServerResponse) => void) {
  const requests: { url: string; body: string }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requests.push({ url: req.url ?? '', body: Buffer.concat(chunks).toString() });
      answer(req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

const sim = await SearchSimulator.start();
t.teardown(() => sim.close());
const store = await startStore({ API_KEY: DEVICE_KEY, SEARCH_BASE_URL: sim.baseUrl, SEARCH_API_KEY: sim.apiKey });
t.teardown(store.stop);
const projectUrl = `${store.url}/${WORKSPACE}/parking-lot/search`;
const workspaceUrl = `${store.url}/${WORKSPACE}/search/v1`;

t.test('project search is forwarded with the device key, the client sends none', async (t) => {
  const before = sim.requests.length;
  const body = { prompt: 'cars', limit: 3, fields: ['id', 'name', 'tags'] };
  const proxied = await post(`${projectUrl}?api_key=client-attempt`, body);
  t.equal(proxied.status, 200);
  t.match(proxied.headers.get('content-type'), /^application\/json/);
  t.equal(sim.requests.length, before + 1, 'exactly one hosted call');
  const hosted = sim.requests.at(-1)!;
  t.equal(hosted.route, 'project');
  t.equal(hosted.path, `/${WORKSPACE}/parking-lot/search`, 'the hosted path, unchanged');
  t.same(hosted.query, { api_key: sim.apiKey }, 'the device key only; the client\'s api_key is dropped');
  t.same(hosted.body, body, 'the body as the client sent it');
  const direct = await fetch(`${sim.baseUrl}/${WORKSPACE}/parking-lot/search?api_key=${sim.apiKey}`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  t.same(proxied.json, await direct.json(), 'the hosted answer, unchanged');
  t.equal(proxied.json.results.length, 3);
});

t.test('workspace search is forwarded and its continuation token pages through the proxy', async (t) => {
  const first = await post(workspaceUrl, { query: 'class:car', pageSize: 4, fields: ['filename'] });
  t.equal(first.status, 200);
  const hosted = sim.requestsTo('workspace').at(-1)!;
  t.equal(hosted.path, `/${WORKSPACE}/search/v1`);
  t.same(hosted.query, { api_key: sim.apiKey });
  t.equal(first.json.results.length, 4);
  t.type(first.json.continuationToken, 'string');
  const second = await post(`${workspaceUrl}/`, { query: 'class:car', pageSize: 4, fields: ['filename'], continuationToken: first.json.continuationToken });
  t.equal(second.status, 200, 'trailing slash tolerated');
  t.equal(sim.requestsTo('workspace').at(-1)!.path, `/${WORKSPACE}/search/v1`);
  const ids = [...first.json.results, ...second.json.results].map((r: { id: string }) => r.id);
  t.equal(new Set(ids).size, ids.length, 'the second page follows the first');
});

t.test('bad requests answer 400 locally, without a hosted call', async (t) => {
  const cases: [string, string, unknown, RegExp][] = [
    ['workspace', 'missing query', { pageSize: 10 }, /query is required/],
    ['workspace', 'empty query', { query: '   ' }, /query is required/],
    ['workspace', 'malformed query', { query: '(class:car' }, /Invalid query at column/],
    ['workspace', 'pageSize 0', { query: 'cat', pageSize: 0 }, /pageSize/],
    ['workspace', 'unknown field', { query: 'cat', fields: ['filename', 'embedding'] }, /Unknown field.*embedding/],
    ['workspace', 'bad mediaTypes', { query: 'cat', mediaTypes: ['audio'] }, /mediaTypes/],
    ['workspace', 'no body', '', /JSON object/],
    ['project', 'limit over 250', { limit: 251 }, /limit must be an integer from 1 to 250/],
    ['project', 'limit 0', { limit: 0 }, /limit/],
    ['project', 'unknown field', { fields: ['id', 'width'] }, /Unknown field.*width/],
    ['project', 'bad mediaTypes', { mediaTypes: 'image' }, /mediaTypes/],
    ['project', 'empty prompt', { prompt: '' }, /prompt must be a non-empty string/],
    ['project', 'a JSON array', [], /JSON object/],
    ['project', 'malformed JSON', '{"limit": 3', /Malformed JSON/],
  ];
  const before = sim.requests.length;
  for (const [kind, name, body, message] of cases) {
    const answer = await post(kind === 'project' ? projectUrl : workspaceUrl, body);
    t.equal(answer.status, 400, `${kind}: ${name}`);
    t.same(Object.keys(answer.json), ['error'], `${kind}: ${name}: shaped as the hosted API's errors`);
    t.match(answer.json.error, message, `${kind}: ${name}: says why`);
  }
  const huge = await post(workspaceUrl, { query: 'cat', padding: 'x'.repeat(70 * 1024) });
  t.equal(huge.status, 413, 'a body past 64 KiB');
  t.match(huge.json.error, /exceeds 65536 bytes/);
  t.equal(sim.requests.length, before, 'the hosted API was never called');
});

t.test('hosted failures pass through unchanged, and are not retried', async (t) => {
  const faults: { status: number; body: unknown; retryAfter?: string }[] = [
    { status: 401, body: { error: 'Invalid api_key' } },
    { status: 403, body: { error: 'No access', hint: 'ask the owner' } },
    { status: 404, body: { error: 'Workspace not found' } },
    { status: 429, body: 'Too many requests from this IP', retryAfter: '7' },
    { status: 429, body: { error: { code: 'rate_limited', message: 'slow down' } }, retryAfter: '3' },
    { status: 500, body: { error: 'Internal error' } },
    { status: 503, body: { error: 'Down for maintenance' } },
  ];
  for (const fault of faults) {
    const before = sim.requests.length;
    sim.inject({ ...fault, route: 'workspace' });
    const answer = await post(workspaceUrl, { query: 'cat' });
    const label = `${fault.status} ${JSON.stringify(fault.body)}`;
    t.equal(answer.status, fault.status, label);
    t.equal(answer.text, typeof fault.body === 'string' ? fault.body : JSON.stringify(fault.body), `${label}: body unchanged`);
    t.equal(answer.headers.get('content-type'), typeof fault.body === 'string' ? 'text/plain' : 'application/json', `${label}: content type`);
    t.equal(answer.headers.get('retry-after'), fault.retryAfter ?? null, `${label}: Retry-After`);
    t.equal(sim.requests.length, before + 1, `${label}: one hosted call, no retry`);
  }
  const foreign = await post(`${store.url}/${FOREIGN_WORKSPACE}/search/v1`, { query: 'cat' });
  t.equal(foreign.status, 403, 'the simulator\'s own 403');
  t.match(foreign.json, { error: /no access to workspace rival/ });
  const unknownProject = await post(`${store.url}/${WORKSPACE}/nowhere/search`, {});
  t.equal(unknownProject.status, 404, 'the simulator\'s own 404');
  t.same(unknownProject.json, { error: 'Project nowhere not found' });
});

t.test('RateLimit-* and Retry-After headers pass through, on 429 and on success', async (t) => {
  let status = 429;
  const stub = await startStub((_req, res) => {
    res.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'retry-after': '12',
      'ratelimit-limit': '100',
      'ratelimit-remaining': '0',
      'ratelimit-reset': '12',
      'x-internal': 'not for clients',
    });
    res.end(JSON.stringify(status === 429 ? { error: { code: 'rate_limited', message: 'Rate limit exceeded' } } : { results: [], total: 0 }));
  });
  t.teardown(stub.close);
  const proxy = await startStore({ SEARCH_BASE_URL: stub.baseUrl, SEARCH_API_KEY: 'stub-key-123', SEARCH_PROXY_OPEN: 'true' });
  t.teardown(proxy.stop);
  for (status of [429, 200]) {
    const answer = await post(`${proxy.url}/ws/proj/search`, { limit: 10 }, {});
    t.equal(answer.status, status);
    t.equal(answer.headers.get('content-type'), 'application/json; charset=utf-8');
    t.equal(answer.headers.get('retry-after'), '12');
    t.equal(answer.headers.get('ratelimit-limit'), '100');
    t.equal(answer.headers.get('ratelimit-remaining'), '0');
    t.equal(answer.headers.get('ratelimit-reset'), '12');
    t.equal(answer.headers.get('x-internal'), null, 'other hosted headers stay behind');
  }
  t.equal(stub.requests.length, 2);
  t.equal(stub.requests[0].url, '/ws/proj/search?api_key=stub-key-123');
  t.same(JSON.parse(stub.requests[0].body), { limit: 10 });
});

t.test('a hosted body is streamed through, and the device key masked even across chunks', async (t) => {
  const key = 'stub-key-abcdef0123456789';
  const stub = await startStub((_req, res) => {
    res.writeHead(401, { 'content-type': 'application/json' });
    // The key is split over two writes, with a pause between them.
    res.write(`{"error":"Invalid api_key: stub-key-abc`);
    setTimeout(() => res.end(`def0123456789","echo":"${key}","tail":"${'y'.repeat(100_000)}"}`), 50);
  });
  t.teardown(stub.close);
  const proxy = await startStore({ SEARCH_BASE_URL: stub.baseUrl, SEARCH_API_KEY: key, SEARCH_PROXY_OPEN: 'true' });
  t.teardown(proxy.stop);
  const answer = await post(`${proxy.url}/ws/search/v1`, { query: 'cat' }, {});
  t.equal(answer.status, 401);
  t.notMatch(answer.text, key);
  t.same(answer.json.error, 'Invalid api_key: ***');
  t.equal(answer.json.echo, '***');
  t.equal(answer.json.tail.length, 100_000, 'the whole body arrived');
});

t.test('the key a misconfigured device sends is masked in the hosted 401', async (t) => {
  const wrongKey = 'wrong-device-key-42';
  const proxy = await startStore({ SEARCH_BASE_URL: sim.baseUrl, SEARCH_API_KEY: wrongKey, SEARCH_PROXY_OPEN: 'true' });
  t.teardown(proxy.stop);
  const answer = await post(`${proxy.url}/${WORKSPACE}/search/v1`, { query: 'cat' }, {});
  t.equal(answer.status, 401, 'the simulator\'s own 401');
  t.same(answer.json, { error: 'Invalid api_key: ***' });
  t.notMatch(answer.text, wrongKey);
});

t.test('502 when the hosted API is unreachable or does not answer in time', async (t) => {
  const timeout = searchProxySettings.timeoutMs;
  searchProxySettings.timeoutMs = 300;
  t.teardown(() => {
    searchProxySettings.timeoutMs = timeout;
  });
  sim.inject({ status: 0, hang: true, route: 'project' });
  const started = Date.now();
  const hung = await post(projectUrl, { limit: 5 });
  t.equal(hung.status, 502);
  t.match(hung.json.error, /did not answer within 300 ms/);
  t.ok(Date.now() - started < 5000, 'answered after the timeout, not later');

  const stopped = await SearchSimulator.start();
  await stopped.close();
  const proxy = await startStore({ SEARCH_BASE_URL: stopped.baseUrl, SEARCH_API_KEY: stopped.apiKey, SEARCH_PROXY_OPEN: 'true' });
  t.teardown(proxy.stop);
  for (const url of [`${proxy.url}/${WORKSPACE}/parking-lot/search`, `${proxy.url}/${WORKSPACE}/search/v1`]) {
    const down = await post(url, { query: 'cat' }, {});
    t.equal(down.status, 502, url);
    t.same(Object.keys(down.json), ['error']);
    t.match(down.json.error, /Hosted search API at http:\/\/127\.0\.0\.1:\d+ unreachable/);
    t.notMatch(down.json.error, stopped.apiKey);
  }
  t.equal((await post(projectUrl, { limit: 1 })).status, 200, 'the store keeps serving');
});

t.test('a client that goes away while the hosted API is slow leaves the store serving', async (t) => {
  sim.inject({ status: 0, hang: true, route: 'workspace' });
  const before = sim.requestsTo('workspace').length;
  const controller = new AbortController();
  const pending = fetch(workspaceUrl, {
    method: 'POST', headers: { 'content-type': 'application/json', ...AUTH }, body: JSON.stringify({ query: 'cat' }), signal: controller.signal,
  });
  // The hosted API holds the forwarded request: the client goes away while the store waits on it.
  await until('the hosted API received the forwarded request', () => sim.requestsTo('workspace').length > before);
  controller.abort();
  await t.rejects(pending);
  t.equal((await post(workspaceUrl, { query: 'cat' })).status, 200);
});

t.test('without SEARCH_API_KEY or SEARCH_BASE_URL both routes answer 404 like an unknown route', async (t) => {
  const noKey = await startStore({ SEARCH_BASE_URL: sim.baseUrl });
  t.teardown(noKey.stop);
  const noUrl = await startStore({ SEARCH_API_KEY: sim.apiKey });
  t.teardown(noUrl.stop);
  const before = sim.requests.length;
  for (const base of [noKey.url, noUrl.url]) {
    const unknown = await post(`${base}/nowhere/at/all`, {}, {});
    for (const path of [`/${WORKSPACE}/parking-lot/search`, `/${WORKSPACE}/search/v1`]) {
      const answer = await post(`${base}${path}`, { query: 'cat' }, {});
      t.equal(answer.status, 404, path);
      t.same(answer.json, { detail: 'Not Found' });
      t.same(answer.json, unknown.json, 'same as an unknown route');
    }
  }
  t.equal(sim.requests.length, before, 'no hosted call');
});

t.test('with API_KEY set the proxy needs the store key, checked before anything else', async (t) => {
  const before = sim.requests.length;
  for (const url of [projectUrl, workspaceUrl]) {
    for (const headers of [{}, { 'x-api-key': 'wrong' }] as Record<string, string>[]) {
      const answer = await post(url, { query: 'cat' }, headers);
      t.equal(answer.status, 401, url);
      t.same(answer.json, { error: 'Missing or invalid X-API-Key' });
    }
    for (const key of ['wrong', '', DEVICE_KEY.toUpperCase(), sim.apiKey]) {
      const answer = await post(`${url}?api_key=${encodeURIComponent(key)}`, { query: 'cat' }, {});
      t.equal(answer.status, 401, `${url} with api_key=${key.slice(0, 4)}…`);
    }
    t.equal((await post(url, { limit: 999 }, {})).status, 401, 'auth before validation');
  }
  t.equal(sim.requests.length, before, 'no hosted call');
});

t.test('the store\'s own routes are not shadowed by the proxy patterns', async (t) => {
  const before = sim.requests.length;
  const finalize = await post(`${store.url}/v2/events/no-such-event/finalize`, {});
  t.equal(finalize.status, 404);
  t.match(finalize.json.detail, /not found/i);
  t.not(finalize.json.detail, 'Not Found');
  const video = await fetch(`${store.url}/v2/events/no-such-event/videos`, { method: 'POST', headers: AUTH });
  t.equal(video.status, 404, 'upload route reached');
  await video.arrayBuffer();
  // fetch would resolve the dot segment itself; a raw request keeps it.
  const dotted = await rawPost(store.url, `/${WORKSPACE}/%2E%2E/search`, '{}');
  t.equal(dotted.status, 404, 'a dot segment names no hosted path');
  t.same(JSON.parse(dotted.text), { error: 'Not Found' });
  t.equal(sim.requests.length, before, 'none of these reached the hosted API');
});

t.test('no response carried a hosted key', async (t) => {
  t.ok(seen.length > 30);
  for (const secret of [sim.apiKey, 'wrong-device-key-42', 'stub-key-abcdef0123456789', 'stub-key-123']) {
    t.notOk(seen.some((text) => text.includes(secret)), `no body contains ${secret.slice(0, 8)}…`);
  }
});

t.test('SecretMasker masks secrets split anywhere across chunks', async (t) => {
  const secret = 'k3y-Secret';
  const text = `a${secret}b${secret}${secret}c k3y-Secre ${secret}`;
  for (let size = 1; size <= text.length; size++) {
    const masker = new SecretMasker([secret, encodeURIComponent(secret)]);
    let out = '';
    for (let i = 0; i < text.length; i += size) out += masker.push(Buffer.from(text.slice(i, i + size))).toString();
    out += masker.flush().toString();
    t.equal(out, 'a***b******c k3y-Secre ***', `chunks of ${size}`);
  }
});

t.test('a large hosted body reaches a slow client whole (backpressure)', async (t) => {
  const piece = Buffer.alloc(64 * 1024);
  for (let i = 0; i < piece.length; i++) piece[i] = 97 + (i % 26);
  const pieces = 128; // 8 MiB
  /** The hosted side had to wait for the proxy to drain: the buffers between it and the client are full. */
  let heldBack = false;
  const stub = await startStub((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    let sent = 0;
    const pump = () => {
      while (sent < pieces) {
        sent++;
        if (!res.write(piece)) {
          heldBack = true;
          return void res.once('drain', pump);
        }
      }
      res.end();
    };
    pump();
  });
  t.teardown(stub.close);
  const proxy = await startStore({ SEARCH_BASE_URL: stub.baseUrl, SEARCH_API_KEY: 'stub-key-slow', SEARCH_PROXY_OPEN: 'true' });
  t.teardown(proxy.stop);
  const res = await fetch(`${proxy.url}/ws/search/v1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query":"cat"}' });
  t.equal(res.status, 200);
  const reader = res.body!.getReader();
  await until('the buffers up to the slow client are full (the hosted side waits for drain)', () => heldBack);
  let received = 0;
  let intact = true;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    for (let i = 0; i < value.length; i++) {
      if (value[i] !== 97 + ((received + i) % piece.length % 26)) intact = false;
    }
    received += value.length;
  }
  t.equal(received, piece.length * pieces, 'every byte');
  t.ok(intact, 'in order');
});
