/**
 * A misspelled or unknown query parameter, or an event_schema that is none of the five, answers
 * 400 on every read route instead of widening (or emptying) the answer (docs/API.md, "Query
 * parameters"), and a malformed time says what it expects; create bodies keep ignoring unknown keys. Found by a new user's walk: `devce_id`,
 * `q` and `sort` on the list answered 200 with every event.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { READ_PARAMS, ROUTE_PARAMS, type ReadRoute } from '../src/events/read-params.js';
import { EXPORT_FORMATS } from '../src/export/export-types.js';
import { packageRoot } from '../src/paths.js';
import { getJson, postJson, smallEvent } from './support/events.js';
import { SseClient } from './support/sse-client.js';
import { startStore } from './support/store-server.js';

t.test('unknown parameters answer 400 naming them and the nearest known name', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const created = await postJson(`${store.url}/v2/events`, { ...smallEvent({ device_id: 'cam-1' }), devce_id: 'ignored', sort: 'asc' });
  t.equal(created.status, 201, 'a create body\'s unknown keys are still ignored');

  const cases: [string, string, string | undefined][] = [
    ['/v2/events?devce_id=cam-1', 'devce_id', 'device_id'],
    ['/v2/events?q=class:cat', 'q', undefined],
    ['/v2/events?sort=asc', 'sort', 'sort_direction'],
    ['/v2/events?device_id=cam-1&limt=5', 'limt', 'limit'],
    ['/v2/events/latest/query?include_draft=false', 'include_draft', 'include_drafts'],
    ['/events/count/stats?device=cam-1', 'device', 'device_id'],
    ['/v2/events/search?q=*&curser=abc', 'curser', 'cursor'],
    ['/v2/events/search?q=*&device_id=cam-1', 'device_id', undefined],
    ['/v2/export?q=*&fromat=yolo', 'fromat', 'format'],
  ];
  for (const [route, name, nearest] of cases) {
    const res = await getJson(`${store.url}${route}`);
    t.equal(res.status, 400, `${route}: 400`);
    t.match(res.body.detail, `Unknown query parameter '${name}'`, `${route}: names ${name}`);
    if (nearest) t.match(res.body.detail, `did you mean ${nearest}?`, `${route}: suggests ${nearest}`);
    else t.notMatch(res.body.detail, 'did you mean', `${route}: suggests nothing far off`);
  }

  const stream = await SseClient.connect(`${store.url}/v2/events/stream?devce_id=cam-1`);
  t.teardown(() => stream.close());
  t.equal(stream.status, 400, 'the live stream refuses it before streaming');
  t.equal((await getJson(`${store.url}/v2/events?device_id=cam-1&api_key=k`)).status, 400, 'api_key is the stream\'s, not the list\'s');
  t.equal((await getJson(`${store.url}/v2/events?device_id=cam-1`)).body.count, 1, 'the known ones still answer');
});

t.test('a number for start_time or end_time answers 400 saying an ISO 8601 timestamp string is expected, and showing one', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const seconds = await getJson(`${store.url}/v2/events?start_time=1733140800`);
  t.equal(seconds.status, 400);
  t.equal(seconds.body.detail, 'Invalid start_time \'1733140800\': an ISO 8601 timestamp string is expected, such as "2024-12-02T12:00:00Z" (1733140800 read as seconds since the epoch)');
  const text = await getJson(`${store.url}/v2/events?end_time=yesterday`);
  t.equal(text.body.detail, 'Invalid end_time \'yesterday\': an ISO 8601 timestamp string is expected, such as "2026-12-02T10:00:00Z"');
});

t.test('an event_schema that is none of the five answers 400 on lists, counts and the stream', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  t.equal((await postJson(`${store.url}/v2/events`, smallEvent({ event_schema: 'custom' }))).status, 201);
  for (const route of ['/v2/events?event_schema=detection', '/v2/events?event_schemas=custom,detection', '/events/count/stats?event_schema=detection']) {
    const res = await getJson(`${store.url}${route}`);
    t.equal(res.status, 400, `${route}: 400`);
    t.match(res.body.detail, `'detection': expected one of quality_check, inventory_count, safety_alert, operator_feedback, custom`, `${route}: names the five`);
  }
  const stream = await SseClient.connect(`${store.url}/v2/events/stream?event_schema=detection`);
  t.teardown(() => stream.close());
  t.equal(stream.status, 400, 'the stream too');
  t.equal((await getJson(`${store.url}/v2/events?event_schemas=custom,quality_check`)).body.count, 1, 'known schemas still answer');
});

t.test('each route takes exactly the parameters /openapi.json documents for it, with their one declaration', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const { paths } = (await getJson(`${store.url}/openapi.json`)).body;
  const routes: Record<ReadRoute, string> = {
    list: '/v2/events', latest: '/v2/events/latest/query', count: '/events/count/stats',
    stream: '/v2/events/stream', search: '/v2/events/search', export: '/v2/export',
  };
  for (const [route, path] of Object.entries(routes) as [ReadRoute, string][]) {
    const documented = (paths[path].get.parameters as { name: string; in: string; schema: unknown }[]).filter((p) => p.in === 'query');
    t.same(documented.map((p) => p.name), ROUTE_PARAMS[route], `${path}: the same names, in order`);
    for (const param of documented) t.same(param.schema, READ_PARAMS[param.name].schema, `${path} ${param.name}: its declared type, bounds and default`);
  }
  t.same(READ_PARAMS.format.schema.enum, EXPORT_FORMATS, 'format: the export\'s formats');
  const limit = await getJson(`${store.url}/v2/events?limit=1001`);
  t.match(limit.body.detail, [{ msg: 'limit must be an integer from 1 to 1000' }], 'limit: its declared bounds are the parsed ones');
});

t.test('docs/API.md, "Query parameters", names every parameter of every read route', async (t) => {
  const api = fs.readFileSync(path.join(packageRoot, 'docs', 'API.md'), 'utf8');
  const section = api.slice(api.indexOf('## Query parameters'), api.indexOf('## Event search'));
  for (const [route, names] of Object.entries(ROUTE_PARAMS)) {
    for (const name of names) t.ok(section.includes(`\`${name}\``), `${route}: ${name} is in the section`);
  }
  const { minimum, maximum, default: fallback } = READ_PARAMS.limit.schema;
  t.ok(section.includes(`${minimum}..${maximum}, default ${fallback}`), 'limit\'s bounds and default as declared');
});

t.test('the create example /openapi.json gives Swagger UI uses one spelling and is created as is (#27 item 7)', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const spec = (await getJson(`${store.url}/openapi.json`)).body;
  const example = spec.paths['/v2/events'].post.requestBody.content['application/json'].example;
  t.ok(example, 'the create body has an example');
  t.notOk(Object.keys(example).some((key) => /[A-Z]/.test(key)), 'snake_case names only');
  const created = await postJson(`${store.url}/v2/events`, example);
  t.equal(created.status, 201, `"Try it out" with the example creates an event: ${JSON.stringify(created.body)}`);
});
