/**
 * HTTP layer: auth, /health, docs, unknown routes, trailing slash, a body declared too large, a
 * client hanging up during a graceful stop. What only the real process shows (the engine in use,
 * start-up refusals, SIGTERM's graceful stop, Node options): end-to-end/http-process.test.ts.
 */
import { once } from 'node:events';
import { createRequire } from 'node:module';
import net from 'node:net';
import t from 'tap';
import { assertNativeServer, NativeServerUnavailable } from '../src/http/native-check.js';
import { searchProxyRoutes } from '../src/http/search-proxy-routes.js';
import { allRoutes } from '../src/http/server.js';
import { rawRequest } from '../scripts/lib/raw-http.js';
import { getJson, postJson, smallEvent } from './support/events.js';
import { startStore } from './support/store-server.js';

t.test('with API_KEY set, every route but /health and the docs needs X-API-Key', async (t) => {
  const store = await startStore({ API_KEY: 'device-secret' });
  t.teardown(store.stop);
  t.equal((await getJson(`${store.url}/health`)).status, 200, '/health is public');
  for (const path of ['/docs', '/docs/', '/openapi.json', '/docs/swagger-ui-bundle.js', '/docs/swagger-init.js', '/docs/swagger-ui.css']) {
    const res = await fetch(`${store.url}${path}`);
    t.equal(res.status, 200, `${path} opens in a browser without the key`);
    await res.arrayBuffer();
  }
  // The search gateway's routes, off without search settings, are walked in security.test.ts.
  for (const route of allRoutes.filter((r) => !r.public && !searchProxyRoutes.includes(r))) {
    const path = route.path.replace(/:[a-z_]+/g, 'some-id');
    const init = { method: route.method.toUpperCase(), headers: { 'content-type': 'application/json' }, body: route.method === 'post' ? '{}' : undefined };
    const missing = await fetch(`${store.url}${path}`, init);
    t.equal(missing.status, 401, `${route.method} ${route.path} without key`);
    t.same(await missing.json(), { detail: 'Missing or invalid X-API-Key' });
    const wrong = await fetch(`${store.url}${path}`, { ...init, headers: { ...init.headers, 'x-api-key': 'device-secreT' } });
    t.equal(wrong.status, 401, `${route.method} ${route.path} with a wrong key`);
    await wrong.arrayBuffer();
  }
  const ok = await postJson(`${store.url}/v2/events`, smallEvent(), { 'x-api-key': 'device-secret' });
  t.equal(ok.status, 201);
  t.equal((await getJson(`${store.url}/v2/events/${ok.body.id}`, { 'x-api-key': 'device-secret' })).status, 200);
});

t.test('health, docs, OpenAPI, unknown routes, trailing slash', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  t.same((await getJson(`${store.url}/health`)).body, { status: 'healthy', datastore: 'ok' });
  const docs = await fetch(`${store.url}/docs`);
  t.equal(docs.status, 200);
  t.match(await docs.text(), /swagger-ui-bundle\.js/);
  const bundle = await fetch(`${store.url}/docs/swagger-ui-bundle.js`);
  t.equal(bundle.status, 200, 'Swagger UI is served from the package');
  t.ok((await bundle.arrayBuffer()).byteLength > 100_000);
  t.equal((await fetch(`${store.url}/docs/..%2F..%2Fpackage.json`)).status, 404);
  const openapi = await getJson(`${store.url}/openapi.json`);
  t.ok(openapi.body.paths['/v2/events'].post, 'OpenAPI has the create route');
  t.same(await (await fetch(`${store.url}/nowhere`)).json(), { detail: 'Not Found' });
  t.equal((await getJson(`${store.url}/v2/events/`)).status, 200, 'trailing slash tolerated');
  t.equal((await getJson(`${store.url}/health/`)).status, 200);
});

t.test('a body declared too large is answered 413 at once, and the connection closed', { timeout: 30_000 }, async (t) => {
  const store = await startStore({ MAX_RECORD_SIZE_BYTES: '65536' });
  t.teardown(store.stop);
  const socket = net.connect(Number(new URL(store.url).port), '127.0.0.1');
  let received = '';
  socket.on('data', (data) => (received += data));
  const closed = once(socket, 'close');
  // Only the head is sent: the answer cannot wait for a body that never comes.
  socket.write('POST /v2/events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n{"a":');
  await closed;
  t.match(received, /^HTTP\/1\.1 413 /, 'answered 413');
  t.match(received, /"detail":"Record of 100000000 bytes exceeds the limit of 65536 bytes"/);
  t.equal((await getJson(`${store.url}/health`)).status, 200, 'the store still serves');
});

t.test('a JavaScript fallback of uWebSockets.js is never taken for the native engine', async (t) => {
  const fallback = createRequire(import.meta.url)('@trufflesuite/uws-js-unofficial/dist/index.js') as { App: unknown };
  t.equal(typeof fallback.App, 'function', "the trufflesuite package's JavaScript server");
  t.throws(() => assertNativeServer(fallback), NativeServerUnavailable, 'is refused as not native');
});

// Found by the fuzz run's aborting clients (npm run fuzz; docs/RELIABILITY.md), commit d13be91.
t.test('a client hanging up in the middle of a JSON body does not hold up a graceful stop', { timeout: 30_000 }, async (t) => {
  const store = await startStore();
  const port = Number(new URL(store.url).port);
  await rawRequest(port, ['POST /v2/events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"inference_'], { abort: true });
  t.equal((await getJson(`${store.url}/health`)).status, 200);
  // The abandoned request can never finish: a stop that waits for it waits its whole grace
  // period (10 minutes here, so a defect shows as this subtest's 30 s timeout, not as a figure).
  await store.service.stop(600_000);
  t.pass('the graceful stop did not wait for the abandoned request');
});
