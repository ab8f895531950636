/**
 * The bound on JSON bodies held at once (MAX_INFLIGHT_BODY_BYTES; docs/OPERATIONS.md, "Memory";
 * docs/RELIABILITY.md, "Memory under the largest valid creates": twenty 18.6 MB creates at once took the store past V8's heap limit), over real HTTP
 * on the engine the test process runs (one of the files `npm run test:engine` runs on each engine): a
 * declared body reserves its Content-Length before any byte is read, a chunked one its bytes as
 * they arrive, and both what parsing will add as it arrives (64 bytes per `[` or `{`, 8 per `,`);
 * past the bound, 503
 * `body_budget_full` with Retry-After and nothing stored; whatever way a request ends (answered,
 * refused, the client gone mid-body), what it held is given back. The search gateway's bodies are
 * held in it too.
 */
import net from 'node:net';
import t from 'tap';
import { ConfigError, loadConfig } from '../src/config.js';
import { rawRequest, type RawAnswer } from '../scripts/lib/raw-http.js';
import { segmentations } from '../scripts/lib/maximal-creates.js';
import { getJson, postJson, smallEvent } from './support/events.js';
import { SearchSimulator, WORKSPACE } from './support/search-simulator.js';
import { startStore, type TestStore } from './support/store-server.js';
import { until } from './support/waiting.js';

const KiB = 1024;
const MiB = 1024 * KiB;
/** The store's settings here: bodies of at most 64 KiB, 128 KiB of them held at once. */
const RECORD = 64 * KiB;
const BUDGET = 128 * KiB;

/** A metric of GET /metrics (its value on the line without labels). */
async function metric(store: TestStore, name: string): Promise<number> {
  const text = await (await fetch(`${store.url}/metrics`)).text();
  const line = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  if (!line) throw new Error(`/metrics has no ${name}`);
  return Number(line[1]);
}

const held = (store: TestStore) => metric(store, 'edge_events_inflight_body_bytes');

const port = (store: TestStore) => Number(new URL(store.url).port);

const head = (length: number | 'chunked') => 'POST /v2/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n'
  + (length === 'chunked' ? 'Transfer-Encoding: chunked\r\n' : `Content-Length: ${length}\r\n`) + '\r\n';

/** One HTTP/1.1 chunk of `size` bytes of a JSON string's inside. */
const chunkOf = (size: number) => `${size.toString(16)}\r\n${'a'.repeat(size)}\r\n`;

/** A connection that sent `chunks` and stays open, its body unfinished, until `close`. */
async function openRequest(store: TestStore, chunks: string[]): Promise<{ close(): void; answered: () => string }> {
  const socket = net.connect(port(store), '127.0.0.1');
  let received = '';
  socket.on('data', (data) => (received += data.toString('latin1')));
  socket.on('error', () => undefined);
  await new Promise((connected) => socket.once('connect', connected));
  for (const chunk of chunks) await new Promise((written) => socket.write(chunk, written));
  return { close: () => socket.destroy(), answered: () => received };
}

/** A valid create of about 56 KB (55 metadata values of 1,000 characters), under the 64 KiB records here. */
const largeEvent = () => smallEvent({ custom_metadata: Object.fromEntries(Array.from({ length: 55 }, (_, i) => [`k${i}`, 'x'.repeat(1000)])) });

const storedEvents = async (store: TestStore) => (await getJson(`${store.url}/stats`)).body.current.total_events as number;

t.test('a declared body past MAX_INFLIGHT_BODY_BYTES answers 503 with Retry-After before it is read; aborts give their bytes back', async (t) => {
  const store = await startStore({ MAX_RECORD_SIZE_BYTES: String(RECORD), MAX_INFLIGHT_BODY_BYTES: String(BUDGET) });
  t.teardown(store.stop);
  t.equal(await metric(store, 'edge_events_inflight_body_limit_bytes'), BUDGET, '/metrics gives the limit');
  t.equal(await held(store), 0);

  // Two creates declaring 60,000 bytes each send their first bytes and stop: 120,000 held.
  // (Their first bytes are white space, which parsing adds nothing to: what they hold is their length.)
  const first = await openRequest(store, [head(60_000), '   ']);
  const second = await openRequest(store, [head(60_000), '\n']);
  t.equal(await until('both declared lengths held', async () => (await held(store)) === 120_000 && 120_000), 120_000, 'each holds its declared length from its head on');

  // A third declaring 20,000 would pass 131,072: refused at once, with nothing of its body read.
  const refused = await rawRequest(port(store), [head(20_000)]) as RawAnswer;
  t.equal(refused.status, 503);
  t.equal(refused.headers['retry-after'], '1', 'Retry-After: 1 (seconds)');
  t.match(JSON.parse(refused.body.toString()).detail, /MAX_INFLIGHT_BODY_BYTES \(131072 bytes\): 120000 held, this one needs 20000/);
  t.equal(await held(store), 120_000, 'the refused request holds nothing');
  t.equal(await metric(store, 'edge_events_body_budget_refusals_total'), 1, '/metrics counts the refusal');
  // A small create fits beside them (11,072 bytes are left).
  t.equal((await postJson(`${store.url}/v2/events`, smallEvent())).status, 201, 'a create that fits is served meanwhile');

  // Both clients hang up mid-body: their bytes come back.
  first.close();
  second.close();
  t.equal(await until('the aborted bodies given back', async () => (await held(store)) === 0 && 'empty'), 'empty', 'nothing held after the aborts');
  t.equal((await postJson(`${store.url}/v2/events`, largeEvent())).status, 201, 'a 56 KB create is taken again');
  t.equal(await held(store), 0, 'and gives its bytes back once answered');
  t.equal(await storedEvents(store), 2, 'only the answered creates are stored');
});

t.test("the search gateway's bodies are held in the same budget: refused 503 past it, given back once the hosted call is over", async (t) => {
  const sim = await SearchSimulator.start();
  t.teardown(() => sim.close());
  const store = await startStore({
    MAX_RECORD_SIZE_BYTES: String(RECORD), MAX_INFLIGHT_BODY_BYTES: String(BUDGET),
    SEARCH_PROXY_OPEN: 'true', SEARCH_BASE_URL: sim.baseUrl, SEARCH_API_KEY: sim.apiKey, SEARCH_WORKSPACE: WORKSPACE,
  });
  t.teardown(store.stop);
  /** A workspace search for tag:night through the gateway, its body padded with `padding` bytes of white space. */
  const search = (padding = 0) => fetch(`${store.url}/${WORKSPACE}/search/v1`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: `${' '.repeat(padding)}{"query": "tag:night"}`,
  });
  const creators = [await openRequest(store, [head(60_000), ' ']), await openRequest(store, [head(60_000), ' '])];
  t.equal(await until('two creates hold 120,000 bytes', async () => (await held(store)) === 120_000 && 120_000), 120_000);

  const refused = await search(20_000);
  t.equal(refused.status, 503, 'a 20 KB search body does not fit beside it');
  t.equal(refused.headers.get('retry-after'), '1');
  t.match((await refused.json()).error, /MAX_INFLIGHT_BODY_BYTES \(131072 bytes\): 120000 held/, "the gateway's error shape");
  t.equal((await search()).status, 200, 'a small one does, and is answered');
  t.equal(await held(store), 120_000, 'and gives its bytes back');
  for (const creator of creators) creator.close();
  t.equal(await until('nothing held', async () => (await held(store)) === 0 && 'empty'), 'empty');
  t.equal((await search(20_000)).status, 200, 'the 20 KB search is answered once there is room');
});

t.test('a chunked body holds its bytes as they arrive, and is refused 503 once they would pass the bound', async (t) => {
  const store = await startStore({ MAX_RECORD_SIZE_BYTES: String(RECORD), MAX_INFLIGHT_BODY_BYTES: String(BUDGET) });
  t.teardown(store.stop);
  const declared = await openRequest(store, [head(RECORD), ' ']);
  const chunked = await openRequest(store, [head('chunked'), chunkOf(16), chunkOf(40_000)]);
  const holding = RECORD + 16 + 40_000;
  t.equal(await until('the declared length and the chunks received held', async () => (await held(store)) === holding && holding), holding);

  // 131,072 - 105,552 = 25,520 bytes left: a chunked body grows past them and is cut off.
  const growing = await rawRequest(port(store), [head('chunked'), chunkOf(20_000), chunkOf(20_000)]) as RawAnswer;
  t.equal(growing.status, 503, 'refused at the chunk that would pass the bound');
  t.equal(growing.headers['retry-after'], '1');
  t.equal(await held(store), holding, 'what the refused body had held is given back');

  declared.close();
  chunked.close();
  t.equal(await until('nothing held', async () => (await held(store)) === 0 && 'empty'), 'empty', 'aborted chunked and declared bodies give their bytes back');
  t.equal(declared.answered(), '', 'the aborted requests were never answered');
  t.equal(await storedEvents(store), 0);
});

t.test('many clients gone mid-body, at every stage: the budget comes back to 0', async (t) => {
  const store = await startStore({ MAX_RECORD_SIZE_BYTES: String(RECORD), MAX_INFLIGHT_BODY_BYTES: String(BUDGET) });
  t.teardown(store.stop);
  const aborts: Promise<unknown>[] = [];
  for (let i = 0; i < 20; i++) {
    // Head only; half a declared body; a few chunks; a whole body then gone before the answer.
    aborts.push(rawRequest(port(store), [head(1000)], { abort: true }));
    aborts.push(rawRequest(port(store), [head(1000), '{"device_id": "' + 'a'.repeat(400)], { abort: true }));
    aborts.push(rawRequest(port(store), [head('chunked'), chunkOf(300), chunkOf(300)], { abort: true }));
    const whole = JSON.stringify(smallEvent({ device_id: `gone-${i}` }));
    aborts.push(rawRequest(port(store), [head(Buffer.byteLength(whole)), whole], { abort: true }));
  }
  await Promise.all(aborts);
  t.equal(await until('every hold given back', async () => (await held(store)) === 0 && 'empty'), 'empty', '80 aborted requests leave nothing held');
  t.equal(await metric(store, 'edge_events_body_budget_refusals_total'), 0, 'none was refused');
  t.equal((await postJson(`${store.url}/v2/events`, largeEvent())).status, 201, 'the whole budget serves again');
});

t.test('a body holds what parsing will add too: the densest valid bodies are let in one at a time', async (t) => {
  // 10,000 [x,y] pairs: 60 KB of text, 720 KB once parsed, weighed 860 KB, past the 128 KiB budget on its own.
  const store = await startStore({ MAX_RECORD_SIZE_BYTES: String(RECORD), MAX_INFLIGHT_BODY_BYTES: String(BUDGET) });
  t.teardown(store.stop);
  const dense = JSON.stringify(smallEvent({ images: [{ label: 'dense', instance_segmentations: segmentations(10_000, true) }] }));
  t.ok(dense.length < RECORD, `${dense.length} bytes of body, under MAX_RECORD_SIZE_BYTES`);
  t.equal((await postJson(`${store.url}/v2/events`, dense)).status, 201, 'alone, it is stored whatever it weighs');
  t.equal(await held(store), 0);

  const holder = await openRequest(store, [head(100), ' ']);
  await until('the holder held', async () => (await held(store)) === 100);
  const refused = await postJson(`${store.url}/v2/events`, dense);
  t.equal(refused.status, 503, 'beside another request, its weight does not fit: refused while it arrives, before it is parsed');
  t.match(refused.body.detail, /MAX_INFLIGHT_BODY_BYTES/);
  t.equal(await held(store), 100, 'the refused create gives back all it held');
  // What a chunk weighs: 1 `{` and 3 `[` at 64 bytes, 4 `,` at 8, beside its declared 1,000 bytes.
  const weighed = await openRequest(store, [head(1000), '{"a": [[1,2],[3,4]], ']);
  t.equal(await until('the chunk weighed', async () => (await held(store)) === 100 + 1000 + 4 * 64 + 4 * 8 && 'weighed'), 'weighed', 'a body holds its declared bytes and what parsing will add');
  weighed.close();
  holder.close();
  await until('nothing held', async () => (await held(store)) === 0 && 'empty');
  t.equal(await storedEvents(store), 1, 'the refused create stored nothing');
});

t.test('MAX_INFLIGHT_BODY_BYTES: 64 MiB by default, never below MAX_RECORD_SIZE_BYTES', async (t) => {
  t.equal(loadConfig({}).maxInflightBodyBytes, 64 * MiB);
  t.equal(loadConfig({ MAX_RECORD_SIZE_BYTES: String(100 * MiB) }).maxInflightBodyBytes, 100 * MiB, 'unset, it grows to a larger MAX_RECORD_SIZE_BYTES');
  t.equal(loadConfig({ MAX_INFLIGHT_BODY_BYTES: String(20 * MiB) }).maxInflightBodyBytes, 20 * MiB, 'one record of the default 20 MiB at a time');
  for (const value of [String(20 * MiB - 1), '64MiB', '-1']) {
    t.throws(() => loadConfig({ MAX_INFLIGHT_BODY_BYTES: value }), ConfigError, `${value} refused`);
  }
  t.throws(() => loadConfig({ MAX_RECORD_SIZE_BYTES: String(32 * MiB), MAX_INFLIGHT_BODY_BYTES: String(24 * MiB) }), { message: /Invalid setting MAX_INFLIGHT_BODY_BYTES=.*from 33554432/ });
});
