/**
 * The search gateway used as hosted clients use it (docs/API.md, "Search gateway"): the
 * project's own CLI and SDK, which send their key as `api_key` and cannot send X-API-Key, reach
 * the hosted API through a store with API_KEY set by changing only their base URL. The real store
 * on port 0 in front of the hosted-API simulator.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { loadConfig } from '../src/config.js';
import { openApiPath } from '../src/http/openapi.js';
import { searchProxyRoutes } from '../src/http/search-proxy-routes.js';
import { SearchClient } from '../src/search/client.js';
import { runSearchCli } from '../src/search/search-command.js';
import { SearchSimulator, WORKSPACE } from './support/search-simulator.js';
import { getJson } from './support/events.js';
import { spawnStore } from '../scripts/lib/spawned-store.js';
import { startStore, tempDataDir } from './support/store-server.js';

const STORE_KEY = 'store-key-31d9';

const sim = await SearchSimulator.start({ exportPollsBeforeReady: 1 });
t.teardown(() => sim.close());
const store = await startStore({ API_KEY: STORE_KEY, SEARCH_BASE_URL: sim.baseUrl, SEARCH_API_KEY: sim.apiKey, SEARCH_WORKSPACE: WORKSPACE });
t.teardown(store.stop);

/** Runs the project's CLI with the store as its base URL and the store's key as its key. */
async function cli(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runSearchCli(argv, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text), isTTY: false },
    env: { SEARCH_BASE_URL: store.url, SEARCH_API_KEY: STORE_KEY, SEARCH_WORKSPACE: WORKSPACE },
    client: { sleep: async () => {}, retry: { retries: 0 } },
  });
  return { code, stdout, stderr };
}

t.test('the CLI searches through the gateway with api_key; upstream gets the device key, never the store key', async (t) => {
  const before = sim.requests.length;
  const run = await cli(['class:car>=2', '--json', '--limit', '3']);
  t.equal(run.code, 0, run.stderr);
  const page = JSON.parse(run.stdout) as { results: unknown[]; total: number };
  t.equal(page.results.length, 3);
  const hosted = sim.requests.slice(before);
  t.equal(hosted.length, 1);
  t.same(hosted[0].query, { api_key: sim.apiKey }, 'the store key was stripped and the device key sent');
});

t.test('the CLI exports through the gateway: start, poll, download, extract', async (t) => {
  const location = fs.mkdtempSync(path.join(os.tmpdir(), 'ees-gateway-export-'));
  t.teardown(() => fs.rmSync(location, { recursive: true, force: true }));
  const before = sim.requests.length;
  const run = await cli(['tag:night', '--export', '-f', 'yolo', '-l', location, '--name', 'night']);
  t.equal(run.code, 0, run.stderr);
  const routes = sim.requests.slice(before).map((request) => request.route);
  t.same(routes, ['export-start', 'export-status', 'export-status', 'download']);
  for (const request of sim.requests.slice(before, -1)) t.same(request.query, { api_key: sim.apiKey }, `${request.route} with the device key`);
  t.ok(fs.readdirSync(location).length > 0, 'the export was extracted');
});

t.test('the SDK bootstraps and searches through the gateway', async (t) => {
  const client = new SearchClient({ baseUrl: store.url, apiKey: STORE_KEY, workspace: WORKSPACE, retry: { retries: 0 } });
  const page = await client.search('parking-lot', { tag: 'night' });
  t.equal(page.total, 3);
  const keyWorkspace = await fetch(`${store.url}/?api_key=${STORE_KEY}`, { method: 'POST' });
  t.equal(keyWorkspace.status, 200);
  t.same(await keyWorkspace.json(), { welcome: 'Welcome to the hosted API', workspace: WORKSPACE }, 'which workspace the device key belongs to');
  const workspace = await getJson(`${store.url}/${WORKSPACE}?api_key=${STORE_KEY}`);
  t.equal(workspace.status, 200);
  t.same(workspace.body.workspace.projects.map((p: { name: string }) => p.name), ['parking-lot', 'warehouse', 'night-cams']);
  const project = await getJson(`${store.url}/${WORKSPACE}/warehouse?api_key=${STORE_KEY}`);
  t.equal(project.body.project.id, `${WORKSPACE}/warehouse`);
  const missing = await getJson(`${store.url}/${WORKSPACE}/no-such-project?api_key=${STORE_KEY}`);
  t.equal(missing.status, 404, 'the hosted 404, relayed');
  t.match(missing.body, { error: /Project no-such-project not found/ });
  for (const request of sim.requests.filter((r) => ['key-workspace', 'workspace-info', 'project-info'].includes(r.route))) {
    t.same(request.query, { api_key: sim.apiKey });
  }
});

t.test('the store\'s own routes keep precedence over the bootstrap patterns', async (t) => {
  const before = sim.requests.length;
  const auth = { 'x-api-key': STORE_KEY };
  t.match((await getJson(`${store.url}/stats`, auth)).body, { current: { total_events: 0 } });
  t.match((await getJson(`${store.url}/v2/events`, auth)).body, { events: [] });
  t.equal((await getJson(`${store.url}/health`)).status, 200);
  t.equal((await fetch(`${store.url}/docs`)).status, 200);
  t.equal(sim.requests.length, before, 'none reached the hosted API');
});

t.test('workspace pageSize has no local maximum (the hosted API sets it); project limit keeps 250', async (t) => {
  const before = sim.requests.length;
  const wide = await fetch(`${store.url}/${WORKSPACE}/search/v1?api_key=${STORE_KEY}`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: 'tag:day', pageSize: 300 }),
  });
  await wide.arrayBuffer();
  t.equal(sim.requests.length, before + 1, 'pageSize 300 is forwarded');
  t.equal((sim.requests.at(-1)!.body as { pageSize: number }).pageSize, 300);
  const project = await fetch(`${store.url}/${WORKSPACE}/parking-lot/search?api_key=${STORE_KEY}`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ limit: 251 }),
  });
  t.equal(project.status, 400, 'project limit keeps its stated maximum of 250');
  t.match(await project.json(), { error: /limit must be an integer from 1 to 250/ });
  t.equal(sim.requests.length, before + 1);
});

t.test('/openapi.json lists the gateway routes and both ways to give the key', async (t) => {
  const { paths, components } = (await getJson(`${store.url}/openapi.json`)).body;
  t.equal(searchProxyRoutes.length, 7, 'the two searches, the export start and poll, and three bootstrap calls');
  for (const route of searchProxyRoutes) {
    const operation = paths[openApiPath(route.path)]?.[route.method] as { description: string; security: unknown[] } | undefined;
    t.ok(operation, `${route.method.toUpperCase()} ${route.path}`);
    t.match(operation?.description, /available when SEARCH_BASE_URL and SEARCH_API_KEY are set/);
    t.same(operation?.security, [{ ApiKey: [] }, { ApiKeyQuery: [] }]);
  }
  t.match(components.securitySchemes, { ApiKey: { in: 'header', name: 'X-API-Key' }, ApiKeyQuery: { in: 'query', name: 'api_key' } });
});

t.test('the device key is lent for SEARCH_WORKSPACE only: any other workspace is 404, with no hosted call', async (t) => {
  const before = sim.requests.length;
  for (const [method, path] of [['POST', '/othercorp/search/v1'], ['POST', '/othercorp/parking-lot/search'], ['POST', '/othercorp/search/export'], ['GET', '/othercorp/search/export/exp-1'], ['GET', '/othercorp'], ['GET', '/othercorp/parking-lot']]) {
    const res = await fetch(`${store.url}${path}?api_key=${STORE_KEY}`, {
      method, headers: { 'content-type': 'application/json' }, body: method === 'POST' ? JSON.stringify({ query: 'cat' }) : undefined,
    });
    t.equal(res.status, 404, `${method} ${path}`);
    t.same(await res.json(), { error: 'Not Found' });
  }
  t.equal(sim.requests.length, before);
});

t.test('with API_KEY unset the gateway stays off unless SEARCH_PROXY_OPEN=true, which is warned about', async (t) => {
  const closed = await spawnStore({ PORT: '0', DATA_DIR: tempDataDir(), SEARCH_BASE_URL: sim.baseUrl, SEARCH_API_KEY: sim.apiKey });
  t.teardown(() => closed.child.kill('SIGKILL'));
  const before = sim.requests.length;
  const refused = await fetch(`${closed.url}/${WORKSPACE}/search/v1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query":"cat"}' });
  t.equal(refused.status, 404, 'no store key: no gateway');
  t.equal(sim.requests.length, before, 'the hosted key was not lent');
  t.match(closed.output(), /search gateway off: API_KEY is unset/);

  const open = await spawnStore({ PORT: '0', DATA_DIR: tempDataDir(), SEARCH_BASE_URL: sim.baseUrl, SEARCH_API_KEY: sim.apiKey, SEARCH_PROXY_OPEN: 'true' });
  t.teardown(() => open.child.kill('SIGKILL'));
  const served = await fetch(`${open.url}/${WORKSPACE}/search/v1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"query":"cat"}' });
  t.equal(served.status, 200, 'opened on purpose');
  const warning = open.output().split('\n').find((line) => line.includes('search gateway open without API_KEY'));
  t.ok(warning, 'the risk is named at start-up');
  t.equal(JSON.parse(warning!).level, 40, 'at warn');
  t.throws(() => loadConfig({ SEARCH_PROXY_OPEN: 'yes' }), /SEARCH_PROXY_OPEN="yes": expected true or false/);
});
