import t from 'tap';
import type { Test } from 'tap';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import {
  QuerySyntaxError, SearchArgumentError, SearchAuthError, SearchClient, SearchCredentialsError,
  SearchExportTimeoutError, SearchForbiddenError, SearchNetworkError, SearchNotFoundError,
  SearchRateLimitError, SearchResponseError, SearchServerError,
} from 'edge-event-store/search';
import type { SearchClientOptions } from 'edge-event-store/search';
import { extractZip } from '../src/search/zip-extract.js';
import { SearchSimulator, WORKSPACE, storedZip } from './support/search-simulator.js';
import type { CatalogImage, SimulatorOptions } from './support/search-simulator.js';

interface Setup {
  sim: SearchSimulator;
  client: SearchClient;
  /** Every wait the client asked for, in ms (retries and export polls); nothing really waits. */
  delays: number[];
}

async function setup(t: Test, simOptions: SimulatorOptions = {}, clientOptions: Partial<SearchClientOptions> = {}): Promise<Setup> {
  const sim = await SearchSimulator.start(simOptions);
  t.teardown(() => sim.close());
  const delays: number[] = [];
  const client = new SearchClient({
    baseUrl: sim.baseUrl,
    apiKey: sim.apiKey,
    workspace: WORKSPACE,
    retry: { baseDelayMs: 100, maxDelayMs: 400, random: () => 0.5 },
    sleep: async (ms) => { delays.push(ms); },
    ...clientOptions,
  });
  return { sim, client, delays };
}

const ids = (images: { id: string }[]): string[] => images.map((image) => image.id);
const imagesOf = (sim: SearchSimulator, keep: (image: CatalogImage) => boolean): string[] =>
  ids(sim.catalog.filter((image) => image.mediaType === 'image' && keep(image)));

t.test('project search: one page, api_key as query parameter, snake_case body, filters', async (t) => {
  const { sim, client } = await setup(t);
  const page = await client.search('parking-lot', { tag: 'night', limit: 10, fields: ['id', 'name', 'annotations'] });
  t.same(ids(page.results), imagesOf(sim, (i) => i.projects.includes('parking-lot') && i.tags.includes('night')));
  t.equal(page.total, 3);
  t.equal(page.offset, 0);
  t.same(page.results[0], { id: 'pl-13', mediaType: 'image', name: 'gate-cam-03.jpg', annotations: { count: 0, classes: {} } });
  const [request] = sim.requestsTo('project');
  t.equal(request.path, '/acme/parking-lot/search');
  t.equal(request.query.api_key, sim.apiKey);
  t.same(request.body, { tag: 'night', offset: 0, limit: 10, fields: ['id', 'name', 'annotations'] });

  const filtered = await client.search('acme/parking-lot', { className: 'car', inDataset: true, prompt: 'cars', limit: 250 });
  t.same(ids(filtered.results), imagesOf(sim, (i) => i.projects.includes('parking-lot') && (i.classes.car ?? 0) > 0 && i.inDataset && /car/.test(i.caption + i.filename)));
  t.same(sim.requestsTo('project')[1].body, { prompt: 'cars', class_name: 'car', in_dataset: true, offset: 0, limit: 250 });

  await client.search('parking-lot', {});
  t.equal((sim.requestsTo('project')[2].body as { limit: number }).limit, 100, 'the SDK\'s default limit is 100, as the public SDK\'s');

  t.same(ids((await client.search('parking-lot', { batch: true })).results), ['pl-10', 'pl-09']);
  t.same(ids((await client.search('parking-lot', { batchId: 'batch-7', className: 'truck' })).results), ['pl-09']);
  t.same(ids((await client.search('warehouse', { annotationJob: true })).results), ['wh-09']);
  t.same(ids((await client.search('parking-lot', { annotationJobId: 'aj-3' })).results), ['pl-13']);
  t.same(ids((await client.search('night-cams', { likeImage: 'nc-03' })).results), ['nc-03']);
  const videos = await client.search('parking-lot', { mediaTypes: ['video'], fields: ['url'] });
  t.same(ids(videos.results), ['pl-14']);
  t.equal(videos.results[0].mediaType, 'video');
  t.match(videos.results[0].videoUrl, /\.mp4/);
});

t.test('searchAll pages by offset and stops on a short page', async (t) => {
  const { sim, client } = await setup(t);
  const pages: string[][] = [];
  for await (const page of client.searchAll('parking-lot', { limit: 5 })) pages.push(ids(page));
  const expected = imagesOf(sim, (i) => i.projects.includes('parking-lot'));
  t.equal(expected.length, 13);
  t.same(pages, [expected.slice(0, 5), expected.slice(5, 10), expected.slice(10)]);
  t.same(sim.requestsTo('project').map((r) => (r.body as { offset: number }).offset), [0, 5, 10]);
});

t.test('searchAll drops ids already yielded when the set shifts between pages', async (t) => {
  const { sim, client } = await setup(t);
  const before = imagesOf(sim, (i) => i.projects.includes('parking-lot'));
  const yielded: string[] = [];
  let pageCount = 0;
  for await (const page of client.searchAll('parking-lot', { limit: 5 })) {
    yielded.push(...ids(page));
    pageCount += 1;
    if (pageCount === 1) sim.addImage({ id: 'pl-new', projects: ['parking-lot'] });
  }
  t.same(yielded, before, 'the repeated result is dropped, order kept');
  t.equal(new Set(yielded).size, yielded.length, 'no id twice');
  t.same(sim.requestsTo('project').map((r) => (r.body as { offset: number }).offset), [0, 5, 10]);
});

t.test('searchAll requests one more page after a full last page, and yields nothing for it', async (t) => {
  const { sim, client } = await setup(t);
  const pages: string[][] = [];
  for await (const page of client.searchAll('night-cams', { limit: 7, offset: 0 })) pages.push(ids(page));
  t.same(pages, [imagesOf(sim, (i) => i.projects.includes('night-cams'))]);
  t.equal(sim.requestsTo('project').length, 2);
});

t.test('workspace search evaluates the query language', async (t) => {
  const { sim, client } = await setup(t);
  const cases: [string, (image: CatalogImage) => boolean][] = [
    ['class:car>=2 -split:test', (i) => (i.classes.car ?? 0) >= 2 && i.split !== 'test'],
    ['(tag:dusk OR tag:rain) min-width:1000', (i) => (i.tags.includes('dusk') || i.tags.includes('rain')) && i.width >= 1000],
    ['date>=2024-03-01 date<2024-03-11', (i) => i.created >= '2024-03-01' && i.created < '2024-03-11'],
    ['project:parking-lot project:night-cams', (i) => i.projects.includes('parking-lot') && i.projects.includes('night-cams')],
    ['dataset:parking-lot max-annotations:0', (i) => i.projects.includes('parking-lot') && i.inDataset && Object.keys(i.classes).length === 0],
    ['filename:shelf*', (i) => i.filename.startsWith('shelf')],
    ['filename:*.png', (i) => i.filename.endsWith('.png')],
    ['job:job-b', (i) => i.jobId === 'job-b'],
    ['cat night', (i) => i.id === 'nc-03'],
    ['like-image:pl-03 NOT class:car', (i) => (i.classes.truck ?? 0) > 0 && !(i.classes.car ?? 0)],
  ];
  for (const [query, keep] of cases) {
    const page = await client.workspaceSearch({ query, pageSize: 250 });
    t.same(ids(page.results), imagesOf(sim, keep), query);
    t.equal(page.total, page.results.length, `${query}: total`);
  }
  const withFields = await client.workspaceSearch({ query: 'filename:gate-cam-01.jpg', fields: ['filename', 'split', 'projects', 'width'] });
  t.same(withFields.results, [{
    id: 'pl-11', mediaType: 'image', filename: 'gate-cam-01.jpg', width: 1280,
    projectData: { 'parking-lot': { split: 'train', inDataset: true }, 'night-cams': { split: 'train', inDataset: true } },
  }]);
  t.equal(sim.requestsTo('workspace')[0].path, '/acme/search/v1');
  t.equal(sim.requestsTo('workspace')[0].query.api_key, sim.apiKey);
});

t.test('workspaceSearchAll follows continuationToken until none or an empty page', async (t) => {
  const { sim, client } = await setup(t);
  const everything = imagesOf(sim, () => true);
  t.equal(everything.length, 28);

  const pages: string[][] = [];
  for await (const page of client.workspaceSearchAll({ query: '*', pageSize: 10 })) pages.push(ids(page));
  t.same(pages, [everything.slice(0, 10), everything.slice(10, 20), everything.slice(20)]);
  t.equal(sim.requestsTo('workspace').length, 3, 'the short last page has no token');

  const sevens: string[][] = [];
  for await (const page of client.workspaceSearchAll({ query: '*', pageSize: 7 })) sevens.push(ids(page));
  t.same(sevens.flat(), everything);
  t.equal(sevens.length, 4);
  t.equal(sim.requestsTo('workspace').length, 3 + 5, 'a full last page carries a token; the empty page after it ends');
  const bodies = sim.requestsTo('workspace').slice(3).map((r) => r.body as { continuationToken?: string });
  t.equal(bodies[0].continuationToken, undefined);
  t.ok(bodies.slice(1).every((body) => typeof body.continuationToken === 'string'));

  const first = await client.workspaceSearch({ query: '*', pageSize: 20 });
  const rest: string[] = [];
  for await (const page of client.workspaceSearchAll({ query: '*', pageSize: 20, continuationToken: first.continuationToken ?? undefined })) rest.push(...ids(page));
  t.same(rest, everything.slice(20), 'starts from a given token');
});

t.test('5xx is retried with capped exponential backoff', async (t) => {
  const { sim, client, delays } = await setup(t);
  sim.inject({ status: 503, times: 3, route: 'workspace' });
  const page = await client.workspaceSearch({ query: 'tag:snow' });
  t.same(ids(page.results), ['pl-10', 'pl-09']);
  t.equal(sim.requestsTo('workspace').length, 4);
  t.same(delays, [75, 150, 300], 'base 100 ms doubling, equal jitter at random 0.5');

  sim.inject({ status: 500, times: 5, body: { error: 'database on fire' } });
  const error = await client.search('parking-lot').catch((e: unknown) => e);
  t.type(error, SearchServerError);
  t.equal((error as SearchServerError).status, 500);
  t.same((error as SearchServerError).body, { error: 'database on fire' });
  t.equal((error as SearchServerError).hostedMessage, 'database on fire');
  t.equal(sim.requestsTo('project').length, 5, 'four retries, then the error');
  t.same(delays.slice(3), [75, 150, 300, 300], 'capped at maxDelayMs 400 (jittered 300)');
});

t.test('429 waits at least Retry-After', async (t) => {
  const { sim, client, delays } = await setup(t);
  sim.inject({ status: 429, retryAfter: '2', body: 'Too many requests from this IP' });
  sim.inject({ status: 429, retryAfter: '0' });
  const page = await client.search('warehouse', { limit: 1 });
  t.equal(page.results.length, 1);
  t.same(delays, [2000, 150], 'Retry-After 2 s beats the 75 ms backoff; 0 s leaves the backoff');

  sim.inject({ status: 429, retryAfter: '120', body: { error: { code: 'rate_limited', message: 'Slow down' } } });
  const error = await client.search('warehouse').catch((e: unknown) => e);
  t.type(error, SearchRateLimitError);
  t.equal((error as SearchRateLimitError).retryAfterSeconds, 120);
  t.equal((error as SearchRateLimitError).hostedMessage, 'Slow down');
  t.equal(sim.requestsTo('project').length, 4, 'a Retry-After beyond maxRetryAfterMs is not waited for');
});

t.test('401, 403 and 404 are never retried', async (t) => {
  const { sim, client, delays } = await setup(t);
  const wrongKey = new SearchClient({ baseUrl: sim.baseUrl, apiKey: 'wrong-key-123456', workspace: WORKSPACE, sleep: async () => {} });
  const cases: [() => Promise<unknown>, new (...args: never[]) => Error, number, RegExp][] = [
    [() => wrongKey.search('parking-lot'), SearchAuthError, 401, /Invalid api_key/],
    [() => client.search('rival/parking-lot'), SearchForbiddenError, 403, /no access to workspace rival/],
    [() => client.search('no-such-project'), SearchNotFoundError, 404, /Project no-such-project not found/],
    [() => new SearchClient({ baseUrl: sim.baseUrl, apiKey: sim.apiKey, workspace: 'nowhere' }).workspaceSearch({ query: '*' }), SearchNotFoundError, 404, /Workspace nowhere not found/],
  ];
  for (const [call, type, status, message] of cases) {
    const before = sim.requests.length;
    const error = await call().catch((e: unknown) => e) as SearchAuthError;
    t.type(error, type);
    t.equal(error.status, status);
    t.match(error.hostedMessage, message);
    t.equal(sim.requests.length, before + 1, `${status}: one request`);
  }
  sim.inject({ status: 404, times: 1 });
  await t.rejects(client.workspaceSearch({ query: '*' }), SearchNotFoundError);
  t.same(delays, []);
});

t.test('the api_key never appears in errors or logs', async (t) => {
  const { sim } = await setup(t);
  const secret = 'wrong/key+with=chars&more-9f8e7d';
  const lines: string[] = [];
  const logger = {
    debug: (fields: object, message: string) => lines.push(JSON.stringify({ fields, message })),
    warn: (fields: object, message: string) => lines.push(JSON.stringify({ fields, message })),
  };
  const client = new SearchClient({ baseUrl: sim.baseUrl, apiKey: secret, workspace: WORKSPACE, logger, sleep: async () => {} });
  sim.inject({ status: 502, body: `upstream rejected api_key=${encodeURIComponent(secret)}` });
  const error = await client.search('parking-lot').catch((e: unknown) => e) as SearchAuthError;
  t.type(error, SearchAuthError);
  t.equal(sim.requests[1].query.api_key, secret, 'the key was sent, as a query parameter');
  const surfaces = [error.message, String(error.stack), JSON.stringify(error), JSON.stringify(error.body), error.request, ...lines];
  for (const text of surfaces) {
    t.notOk(text.includes(secret) || text.includes(encodeURIComponent(secret)), `no key in: ${text.slice(0, 80)}`);
  }
  t.match(error.hostedMessage, 'Invalid api_key: ***');
  t.ok(lines.some((line) => line.includes('retrying')), 'the retry was logged');

  const unreachable = new SearchClient({ baseUrl: 'http://127.0.0.1:9', apiKey: secret, workspace: WORKSPACE });
  const network = await unreachable.workspaceSearch({ query: '*' }).catch((e: unknown) => e) as Error;
  t.type(network, SearchNetworkError);
  t.notOk(network.message.includes(secret));
  t.match(network.message, /Could not reach the hosted search API \(POST \/acme\/search\/v1/);
});

t.test('arguments are validated before any request', async (t) => {
  const { sim, client } = await setup(t);
  const cases: [() => unknown, new (...args: never[]) => Error, RegExp][] = [
    [() => client.search('parking-lot', { limit: 251 }), SearchArgumentError, /limit must be an integer from 1 to 250/],
    [() => client.search('parking-lot', { limit: 0 }), SearchArgumentError, /limit/],
    [() => client.search('parking-lot', { offset: -1 }), SearchArgumentError, /offset must be an integer 0 or more/],
    [() => client.search('parking-lot', { fields: ['id', 'width' as 'id'] }), SearchArgumentError, /Unknown field for project search: width/],
    [() => client.search('parking-lot', { mediaTypes: ['gif' as 'image'] }), SearchArgumentError, /mediaTypes/],
    [() => client.search('parking-lot', { tag: '' }), SearchArgumentError, /tag must be a non-empty string/],
    [() => client.search('a/b/c'), SearchArgumentError, /slug or workspace\/slug/],
    [() => client.workspaceSearch({ query: '  ' }), SearchArgumentError, /query is required/],
    [() => client.workspaceSearch({ query: 'min-width:wide' }), QuerySyntaxError, /min-width: expects a whole number/],
    [() => client.workspaceSearch({ query: '*', pageSize: 0 }), SearchArgumentError, /pageSize/],
    [() => client.workspaceSearch({ query: '*', fields: ['name' as 'tags'] }), SearchArgumentError, /Unknown field for workspace search: name/],
    [() => client.searchExport({ query: '*', dataset: 'parking-lot', annotationGroup: 'objects' }), SearchArgumentError, /cannot be combined/],
    [() => client.searchExport({ query: 'split:dev' }), QuerySyntaxError, /Unknown split/],
    [() => new SearchClient({ baseUrl: sim.baseUrl, apiKey: sim.apiKey }).workspaceSearch({ query: '*' }), SearchCredentialsError, /No workspace/],
    [() => new SearchClient({ baseUrl: sim.baseUrl, apiKey: sim.apiKey }).search('parking-lot'), SearchArgumentError, /names no workspace/],
    [() => new SearchClient({ baseUrl: sim.baseUrl, apiKey: '' }), SearchCredentialsError, /No API key/],
    [() => new SearchClient({ baseUrl: 'ftp://example.com', apiKey: 'k' }), SearchArgumentError, /http\(s\) URL/],
  ];
  for (const [call, type, message] of cases) {
    const error = await (async () => call())().catch((e: unknown) => e) as Error;
    t.type(error, type, message.source);
    t.match(error.message, message);
  }
  t.equal(sim.requests.length, 0);
});

t.test('a 2xx answer that is not the documented JSON is a SearchResponseError', async (t) => {
  const { sim, client } = await setup(t);
  sim.inject({ status: 200, body: '<html>maintenance</html>' });
  await t.rejects(client.workspaceSearch({ query: '*' }), SearchResponseError);
  sim.inject({ status: 200, body: { hits: [] } });
  await t.rejects(client.search('parking-lot'), SearchResponseError);
});

t.test('search export: start, poll, download with the key on the same origin, extract', async (t) => {
  const { sim, client, delays } = await setup(t, { exportPollsBeforeReady: 2 });
  const location = t.testdir();
  const result = await client.searchExport({ query: 'tag:snow', format: 'yolo', location, pollIntervalMs: 25 });
  t.match(result, { exportId: /^exp-/, location: path.resolve(location), zipPath: null });
  t.same(result.files, [
    'README.dataset.txt', 'export/_annotations.yolo.json', 'export/images/lot-snow-01.jpg', 'export/images/lot-snow-02.jpg',
  ]);
  t.notOk(existsSync(path.join(location, `${result.exportId}.zip`)), 'the zip is removed after extraction');
  const annotations = JSON.parse(readFileSync(path.join(location, 'export/_annotations.yolo.json'), 'utf8'));
  t.same(annotations.images.map((image: { file_name: string }) => image.file_name), ['lot-snow-02.jpg', 'lot-snow-01.jpg']);

  t.same(sim.requestsTo('export-start')[0].body, { query: 'tag:snow', format: 'yolo' });
  t.equal(sim.requestsTo('export-status').length, 3, 'polled until ready');
  t.same(delays, [25, 25]);
  t.equal(sim.requestsTo('download')[0].query.api_key, sim.apiKey);
});

t.test('search export without extraction keeps the zip, named after the export', async (t) => {
  const { sim, client } = await setup(t, { exportPollsBeforeReady: 0 });
  const location = path.join(t.testdir(), 'nested', 'out');
  const result = await client.searchExport({ query: 'class:box', dataset: 'warehouse', name: 'shelf boxes', location, extract: false });
  t.equal(result.zipPath, path.join(location, 'shelf-boxes.zip'));
  t.same(result.files, []);
  const zip = readFileSync(result.zipPath as string);
  t.equal(zip.subarray(0, 4).toString('latin1'), 'PK\x03\x04');
  t.ok(zip.includes(Buffer.from('shelf boxes: 2 images exported as coco')));
  t.same(sim.requestsTo('export-start')[0].body, { query: 'class:box', format: 'coco', dataset: 'warehouse', name: 'shelf boxes' });
});

t.test('search export draws a progress bar only on a TTY', async (t) => {
  const { client } = await setup(t, { exportPollsBeforeReady: 0 });
  const capture = (isTTY: boolean): { stream: PassThrough & { isTTY: boolean }; text: () => string } => {
    const stream = Object.assign(new PassThrough(), { isTTY });
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    return { stream, text: () => Buffer.concat(chunks).toString('utf8') };
  };
  const terminal = capture(true);
  await client.searchExport({ query: 'tag:night', location: t.testdir(), progress: terminal.stream });
  t.match(terminal.text(), /Downloading exp-\d+\.zip \[.*\] 100%/);
  const pipe = capture(false);
  await client.searchExport({ query: 'tag:night', location: t.testdir(), progress: pipe.stream });
  t.equal(pipe.text(), '');
});

t.test('search export gives up after timeoutMs and reports hosted failures', async (t) => {
  const { sim, client } = await setup(t, { exportPollsBeforeReady: 1000 });
  await t.rejects(client.searchExport({ query: '*', location: t.testdir(), timeoutMs: 0 }), SearchExportTimeoutError);
  t.equal(sim.requestsTo('export-status').length, 1);
  const badFormat = await client.searchExport({ query: '*', format: 'bmp', location: t.testdir() }).catch((e: unknown) => e);
  t.match(badFormat, { status: 400, hostedMessage: 'Unknown export format bmp' });
  sim.inject({ status: 404, route: 'export-status' });
  await t.rejects(client.searchExport({ query: '*', location: t.testdir() }), SearchNotFoundError);
});

t.test('a request that gets no answer within timeoutMs is a network error', async (t) => {
  const { sim, client } = await setup(t, {}, { timeoutMs: 50 });
  sim.inject({ status: 504, hang: true });
  const error = await client.workspaceSearch({ query: '*' }).catch((e: unknown) => e) as Error;
  t.type(error, SearchNetworkError);
  t.match(error.message, /timed out after 50 ms/);
});

t.test('without an injected sleep, retries wait on a real timer', async (t) => {
  const sim = await SearchSimulator.start();
  t.teardown(() => sim.close());
  const client = new SearchClient({ baseUrl: `${sim.baseUrl}/`, apiKey: sim.apiKey, workspace: WORKSPACE, retry: { baseDelayMs: 1, maxDelayMs: 2 } });
  sim.inject({ status: 502, times: 2 });
  t.equal((await client.workspaceSearch({ query: 'tag:snow' })).total, 2);
  t.equal(sim.requests.length, 3);
});

t.test('extraction refuses entries that leave the target directory, and corrupt zips', async (t) => {
  const dir = t.testdir({ 'evil.zip': storedZip([{ name: '../evil.txt', data: Buffer.from('x') }]), 'corrupt.zip': 'PK not really' });
  const evil = await extractZip(path.join(dir, 'evil.zip'), path.join(dir, 'out')).catch((e: unknown) => e);
  t.type(evil, SearchResponseError);
  t.notOk(existsSync(path.join(dir, 'evil.txt')));
  await t.rejects(extractZip(path.join(dir, 'corrupt.zip'), path.join(dir, 'out')), SearchResponseError);
  const nested = path.join(dir, 'dirs.zip');
  writeFileSync(nested, storedZip([{ name: 'a/', data: Buffer.alloc(0) }, { name: 'a/b/c.txt', data: Buffer.from('c') }]));
  t.same(await extractZip(nested, path.join(dir, 'ok')), ['a/b/c.txt']);
  t.equal(readFileSync(path.join(dir, 'ok', 'a', 'b', 'c.txt'), 'utf8'), 'c');
});
