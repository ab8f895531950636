/**
 * The route table (src/http/server.ts `allRoutes`) is the one route list: every route of it is
 * listed in docs/API.md ("Routes", "Search gateway") and in /openapi.json, and neither lists a
 * route the table lacks. A handler answers with a reply or takes the response over
 * (Exchange.takeOver); one that does neither answers 500 instead of leaving the client waiting.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import t from 'tap';
import { loadConfig } from '../src/config.js';
import { AppError } from '../src/errors.js';
import { createEngine } from '../src/http/engine-choice.js';
import { openApiPath } from '../src/http/openapi.js';
import { registerRoutes, type Route, type ServerContext } from '../src/http/route-table.js';
import { allRoutes } from '../src/http/server.js';
import { loadUws } from '../src/http/uws/uws-loader.js';
import { packageRoot } from '../src/paths.js';
import { getJson } from './support/events.js';
import { startStore } from './support/store-server.js';

/** `METHOD /path` of every route of the table, paths as OpenAPI and docs/API.md write them. */
const tableRoutes = allRoutes.map((route) => `${route.method.toUpperCase()} ${openApiPath(route.path)}`).sort();

/** `METHOD /path` of every row of the route tables of docs/API.md ("Routes" and "Search gateway"). */
function documentedRoutes(): string[] {
  const text = fs.readFileSync(path.join(packageRoot, 'docs', 'API.md'), 'utf8');
  const listed: string[] = [];
  for (const section of ['Routes', 'Search gateway']) {
    const start = text.indexOf(`\n## ${section}\n`);
    if (start < 0) throw new Error(`docs/API.md has no section "${section}"`);
    const end = text.indexOf('\n## ', start + 1);
    for (const [, method, paths] of text.slice(start, end < 0 ? undefined : end).matchAll(/^\| (GET|POST) \| ([^|]+) \|/gm)) {
      for (const [, routePath] of paths.matchAll(/`([^`]+)`/g)) listed.push(`${method} ${routePath}`);
    }
  }
  return listed.sort();
}

t.test('every route of the table is in docs/API.md and in /openapi.json, and they list no other', async (t) => {
  t.ok(tableRoutes.length >= 25, `${tableRoutes.length} routes in the table`);
  const documented = documentedRoutes();
  t.same(tableRoutes.filter((route) => !documented.includes(route)), [], 'every route is in docs/API.md');
  t.same(documented.filter((route) => !tableRoutes.includes(route)), [], 'docs/API.md lists no route the table lacks');

  const store = await startStore();
  t.teardown(store.stop);
  const { paths } = (await getJson(`${store.url}/openapi.json`)).body as { paths: Record<string, Record<string, unknown>> };
  const inOpenApi = Object.entries(paths).flatMap(([routePath, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${routePath}`)).sort();
  t.same(tableRoutes.filter((route) => !inOpenApi.includes(route)), [], 'every route is in /openapi.json');
  t.same(inOpenApi.filter((route) => !tableRoutes.includes(route)), [], '/openapi.json lists no route the table lacks');
});

/** Engines this machine runs: node:http always, uWebSockets.js when a native build loads. */
const engines = ['node', ...(loadUws().loaded ? ['uws' as const] : [])] as const;

for (const engineName of engines) {
  t.test(`${engineName}: a handler replies or takes the response over; one that does neither answers 500`, async (t) => {
    t.plan(11); // three of them in the /streamed handler, which must run
    const lines: { msg: string; err?: { message: string; cause?: { message: string } } }[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()));
        done();
      },
    });
    const log = pino({ level: 'info', serializers: { err: pino.stdSerializers.errWithCause } }, sink);
    const config = loadConfig({ HOST: '127.0.0.1', PORT: '0', HTTP_ENGINE: engineName });
    const engine = createEngine(config, log);
    const doc = { tag: 'test', summary: 'test', operationId: 'test', responses: {} };
    const routes: Route[] = [
      { method: 'get', path: '/forgot', doc, handler: () => undefined },
      {
        method: 'get',
        path: '/streamed',
        doc,
        handler: async (ex) => {
          const response = ex.takeOver();
          t.equal(ex.takeOver(), response, 'taking over twice gives the same stream');
          t.ok(response.start(200, [['Content-Type', 'text/plain']]), 'started');
          t.notOk(response.start(200, []), 'a response starts once');
          response.write(Buffer.from('one '));
          await response.writable();
          response.end(Buffer.from('two'));
        },
      },
      {
        method: 'get',
        path: '/thrown-before-start',
        doc,
        handler: (ex) => {
          ex.takeOver();
          throw new AppError('file_not_found', 'File f not found');
        },
      },
    ];
    // Only what these routes reach: no store, no gate (none is gated), the logger.
    registerRoutes(engine, routes, { config, log, lifecycle: {} } as unknown as ServerContext);
    const port = await engine.listen('127.0.0.1', 0);
    t.teardown(() => {
      engine.stopListening();
      engine.closeIdleConnections();
    });
    const base = `http://127.0.0.1:${port}`;

    const forgot = await fetch(`${base}/forgot`);
    t.equal(forgot.status, 500, 'no reply and no take-over: 500, not a client left waiting');
    t.same(await forgot.json(), { detail: 'Internal store failure' });
    const logged = lines.find((line) => line.msg === 'request failed');
    t.match(logged?.err?.cause?.message, /GET \/forgot: the handler returned no reply and did not take the response over/, 'logged with the reason as cause');

    const streamed = await fetch(`${base}/streamed`);
    t.equal(streamed.status, 200);
    t.equal(await streamed.text(), 'one two', 'the taken-over response is the handler\'s');

    const thrown = await fetch(`${base}/thrown-before-start`);
    t.equal(thrown.status, 404, 'an error before start is still answered by fail');
    t.same(await thrown.json(), { detail: 'File f not found' });
    t.equal(lines.filter((line) => line.msg === 'request failed').length, 1, 'only the 500 was logged');
  });
}
