/** HTTP layer: auth, /health, docs, unknown routes, trailing slash, start-up refusals, graceful stop. */
import t from 'tap';
import { searchProxyRoutes } from '../src/http/search-proxy-routes.js';
import { allRoutes } from '../src/http/server.js';
import { getJson, postJson, smallEvent } from './support/events.js';
import { refusedStart, spawnStore } from './support/spawned-store.js';
import { startStore, tempDataDir } from './support/store-server.js';

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

t.test('the store refuses to start on the JavaScript fallback of uWebSockets.js', async (t) => {
  const { code, stderr } = await refusedStart({ UWS_USE_FALLBACK: '1', DATA_DIR: tempDataDir() });
  t.equal(code, 1);
  t.match(stderr, /native binary did not load/);
});

t.test('a bad setting stops start-up with a message naming it', async (t) => {
  for (const [name, value] of [['RETENTION_DAYS', 'soon'], ['PORT', '70000'], ['MAX_RECORDS', '-1'], ['CLOUD_UPLOAD_URL', 'ftp://x']]) {
    const { code, stderr } = await refusedStart({ [name]: value, DATA_DIR: tempDataDir() });
    t.equal(code, 1, name);
    t.match(stderr, new RegExp(`Invalid setting ${name}=`), `${name} named`);
  }
});

t.test('SIGTERM finishes in-flight writes: every acknowledged event survives', async (t) => {
  const dataDir = tempDataDir();
  const first = await spawnStore({ PORT: '0', DATA_DIR: dataDir });
  const writes = Array.from({ length: 200 }, (_, i) => postJson(`${first.url}/v2/events`, smallEvent({ custom_metadata: { i } })).catch(() => undefined));
  await new Promise((r) => setTimeout(r, 5));
  first.child.kill('SIGTERM');
  const [code] = await new Promise<[number | null]>((resolve) => first.child.on('exit', (c) => resolve([c])));
  t.equal(code, 0, 'graceful stop exits 0');
  const acknowledged = (await Promise.all(writes)).filter((r) => r?.status === 201).map((r) => r!.body.id as string);
  const second = await startStore({ DATA_DIR: dataDir });
  t.teardown(second.stop);
  for (const id of acknowledged) {
    if ((await getJson(`${second.url}/v2/events/${id}`)).status !== 200) t.fail(`acknowledged event ${id} lost`);
  }
  t.pass(`${acknowledged.length} acknowledged events all present`);
});

t.test('one store per data directory and per port', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const sameDir = await refusedStart({ DATA_DIR: store.dataDir });
  t.equal(sameDir.code, 1);
  t.match(sameDir.stderr, /is in use by process/);
  const samePort = await refusedStart({ DATA_DIR: tempDataDir(), PORT: new URL(store.url).port });
  t.equal(samePort.code, 1);
  t.match(samePort.stderr, /cannot listen/);
  t.equal((await getJson(`${store.url}/health`)).status, 200, 'the first store still serves');
});
