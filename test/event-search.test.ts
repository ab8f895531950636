/**
 * GET /v2/events/search over real HTTP: every filter of the query language, alone and combined,
 * checked against an oracle written here from the events the test sent (not from the store's
 * matcher); cursor paging through every answer; error columns; auth and shape.
 */
import t, { type Test } from 'tap';
import { responseProblems } from './support/response-shapes.js';
import { nextUniqueMicros } from '../src/store/record/timestamps.js';
import { fixture, getJson, postJson } from './support/events.js';
import { postFile } from './support/multipart.js';
import { startStore, type TestStore } from './support/store-server.js';

/** What the oracle knows of one event. */
interface Sent {
  id: string;
  device: string;
  stream: string | null;
  schema: string;
  workflow: string;
  solution: string | null;
  externalId: string;
  meta: { line: string; temp: number; batch: string };
  day: string;
  predictions: { class: string; confidence: number }[];
  hasImage: boolean;
  hasVideo: boolean;
  hasFile: boolean;
  draft: boolean;
}

const DAY_MICROS = 86_400_000_000;
const dayOf = (micros: number): string => new Date(micros / 1000).toISOString().slice(0, 10);
const CAT = fixture('cat.jpg').toString('base64');

/** Event `i`'s request body and what the oracle expects of it. */
function eventNumber(i: number, day: string): { body: Record<string, unknown>; sent: Omit<Sent, 'id'> } {
  const persons = Array.from({ length: Math.floor(i / 2) % 3 }, (_, k) => ({ class: 'person', x: 50 + k, y: 40, width: 20, height: 10, confidence: 0.5 + ((i + k) % 5) / 10 }));
  const cars = i % 2 === 0 ? [{ class: 'car', x: 10, y: 10, width: 4, height: 4, confidence: 0.6, points: [[8, 8], [12, 8], [12, 12]] }] : [];
  const dogs = i % 5 === 1 ? [{ class: 'dog', x: 30, y: 30, width: 10, height: 10, confidence: 0.95, keypoints: [{ id: 0, x: 30, y: 31 }] }] : [];
  const scenes = i % 3 === 0 ? [{ class: 'outdoor', confidence: 0.3 + (i % 7) / 10 }] : [];
  const withImages = i % 4 !== 0;
  const withBytes = i % 4 !== 1;
  const schema = i % 2 === 0 ? 'quality_check' : 'custom';
  const stream = i % 7 === 0 ? null : `s-${i % 2}`;
  const solution = i % 5 === 0 ? null : `sol-${i % 2}`;
  const body: Record<string, unknown> = {
    inference_timestamp: '2026-11-22T01:00:00Z',
    event_schema: schema,
    event_data: schema === 'quality_check' ? { result: 'pass', external_id: `ext-${i}` } : { value: 'x', externalId: `ext-${i}` },
    device_id: `cam-${i % 3}`,
    workflow_id: `wf-${i % 4}`,
    ...(stream !== null && { stream_id: stream }),
    ...(solution !== null && { solution }),
    custom_metadata: { line: i < 24 ? 'A' : 'B', temp: i, batch: String(i % 6) },
    images: withImages
      ? [{
        ...(withBytes && { base64Image: CAT }),
        objectDetections: persons,
        instanceSegmentations: cars,
        keypoints: dogs,
        classifications: scenes,
      }]
      : [],
    draft: i % 8 === 7,
  };
  const predictions = withImages ? [...persons, ...cars, ...dogs, ...scenes].map((p) => ({ class: p.class, confidence: p.confidence })) : [];
  return {
    body,
    sent: {
      device: `cam-${i % 3}`, stream, schema, workflow: `wf-${i % 4}`, solution, externalId: `ext-${i}`,
      meta: { line: i < 24 ? 'A' : 'B', temp: i, batch: String(i % 6) }, day, predictions,
      hasImage: withImages && withBytes, hasVideo: i % 16 === 7, hasFile: i % 16 === 15, draft: i % 8 === 7,
    },
  };
}

/** 48 events over three days (16 a day), drafts with a video or a local-only file. */
async function seed(store: TestStore): Promise<{ sent: Sent[]; days: string[] }> {
  const start = nextUniqueMicros();
  const days = [0, 1, 2].map((d) => dayOf(start + d * DAY_MICROS));
  const sent: Sent[] = [];
  for (let i = 0; i < 48; i++) {
    const d = Math.floor(i / 16);
    // created_at comes from the store's clock: move it to the start of day d (test only).
    if (i % 16 === 0 && d > 0) nextUniqueMicros(Date.parse(`${days[d]}T00:00:00Z`) * 1000);
    const { body, sent: expected } = eventNumber(i, days[d]);
    const res = await postJson(`${store.url}/v2/events`, body);
    if (res.status !== 201) throw new Error(`seed ${i}: ${JSON.stringify(res.body)}`);
    if (expected.hasVideo) await postFile(`${store.url}/v2/events/${res.body.id}/videos`, fixture('cat-zoom.mp4'));
    if (expected.hasFile) await postFile(`${store.url}/v2/events/${res.body.id}/local-only-files`, Buffer.from('notes'), {}, 'text/plain');
    sent.push({ id: res.body.id, ...expected });
  }
  return { sent, days };
}

const count = (e: Sent, cls: string, min = 0) => e.predictions.filter((p) => p.class === cls && p.confidence >= min).length;

/** Every event of the answer, following next_cursor page by page; checks page size and shape. */
async function searchAll(t: Test, store: TestStore, q: string, limit: number): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 100; pages++) {
    const params = new URLSearchParams({ q, limit: String(limit), ...(cursor !== null && { cursor }) });
    const res = await getJson(`${store.url}/v2/events/search?${params}`);
    if (res.status !== 200) {
      t.fail(`${q}: ${res.status} ${JSON.stringify(res.body)}`);
      return ids;
    }
    if (responseProblems('event-search-page', res.body).length > 0) t.fail(`${q}: shape ${JSON.stringify(responseProblems('event-search-page', res.body))}`);
    if (res.body.events.length > limit || res.body.count !== res.body.events.length) t.fail(`${q}: page of ${res.body.events.length}`);
    ids.push(...res.body.events.map((e: { id: string }) => e.id));
    cursor = res.body.next_cursor;
    if (cursor === null) return ids;
  }
  t.fail(`${q}: more than 100 pages`);
  return ids;
}

t.test('every filter, alone and combined, pages through exactly the matching events, newest first', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const { sent, days } = await seed(store);
  const [d0, d1, d2] = days;
  const cases: [string, (e: Sent) => boolean][] = [
    ['*', () => true],
    ['class:person', (e) => count(e, 'person') > 0],
    ['class:car', (e) => count(e, 'car') > 0],
    ['class:dog', (e) => count(e, 'dog') > 0],
    ['class:outdoor', (e) => count(e, 'outdoor') > 0],
    ['class:person>=2', (e) => count(e, 'person') >= 2],
    ['class:person>1', (e) => count(e, 'person') > 1],
    ['class:person=1', (e) => count(e, 'person') === 1],
    ['class:person<1', (e) => count(e, 'person') < 1],
    ['class:person<=1', (e) => count(e, 'person') <= 1],
    ['class:person=0', (e) => count(e, 'person') === 0],
    ['class:nothing', () => false],
    ['min-confidence:0.9', (e) => e.predictions.some((p) => p.confidence >= 0.9)],
    ['class:person min-confidence:0.8', (e) => count(e, 'person', 0.8) > 0],
    ['min-confidence:0.7 class:person>=2', (e) => count(e, 'person', 0.7) >= 2],
    ['class:outdoor min-confidence:0.8', (e) => count(e, 'outdoor', 0.8) > 0],
    ['device:cam-1', (e) => e.device === 'cam-1'],
    ['stream:s-0', (e) => e.stream === 's-0'],
    ['schema:custom', (e) => e.schema === 'custom'],
    ['workflow:wf-2', (e) => e.workflow === 'wf-2'],
    ['solution:sol-1', (e) => e.solution === 'sol-1'],
    ['external-id:ext-7', (e) => e.externalId === 'ext-7'],
    ['meta.line:B', (e) => e.meta.line === 'B'],
    ['meta.temp>30', (e) => e.meta.temp > 30],
    ['meta.temp<=5', (e) => e.meta.temp <= 5],
    ['meta.temp>=10 meta.temp<12', (e) => e.meta.temp >= 10 && e.meta.temp < 12],
    ['meta.batch:3', (e) => e.meta.batch === '3'],
    ['meta.batch=3', (e) => e.meta.batch === '3'],
    ['meta.temp:7', (e) => e.meta.temp === 7],
    ['meta.absent:1', () => false],
    [`date:${d1}`, (e) => e.day === d1],
    [`date>=${d1}`, (e) => e.day >= d1],
    [`date>${d1}`, (e) => e.day > d1],
    [`date<${d1}`, (e) => e.day < d1],
    [`date<=${d1}`, (e) => e.day <= d1],
    [`date>=${d0} date<${d2}`, (e) => e.day < d2],
    ['min-annotations:3', (e) => e.predictions.length >= 3],
    ['max-annotations:0', (e) => e.predictions.length === 0],
    ['min-annotations:1 max-annotations:2', (e) => e.predictions.length >= 1 && e.predictions.length <= 2],
    ['has:image', (e) => e.hasImage],
    ['has:video', (e) => e.hasVideo],
    ['has:file', (e) => e.hasFile],
    ['-has:image', (e) => !e.hasImage],
    ['draft:true', (e) => e.draft],
    ['draft:false', (e) => !e.draft],
    ['class:person AND device:cam-0', (e) => count(e, 'person') > 0 && e.device === 'cam-0'],
    ['class:person device:cam-0 stream:s-1', (e) => count(e, 'person') > 0 && e.device === 'cam-0' && e.stream === 's-1'],
    ['class:car OR class:dog', (e) => count(e, 'car') > 0 || count(e, 'dog') > 0],
    ['NOT device:cam-0', (e) => e.device !== 'cam-0'],
    ['-device:cam-0 class:person', (e) => e.device !== 'cam-0' && count(e, 'person') > 0],
    ['(device:cam-0 OR stream:s-1) -class:person', (e) => (e.device === 'cam-0' || e.stream === 's-1') && count(e, 'person') === 0],
    [`date:${d2} class:car`, (e) => e.day === d2 && count(e, 'car') > 0],
    [`(date:${d0} OR class:dog) has:image`, (e) => (e.day === d0 || count(e, 'dog') > 0) && e.hasImage],
    ['class:person draft:false -meta.line:A', (e) => count(e, 'person') > 0 && !e.draft && e.meta.line !== 'A'],
    ['NOT (class:person OR class:car)', (e) => count(e, 'person') === 0 && count(e, 'car') === 0],
    ['schema:quality_check OR (stream:s-1 AND class:person>=2)', (e) => e.schema === 'quality_check' || (e.stream === 's-1' && count(e, 'person') >= 2)],
  ];
  const newestFirst = [...sent].reverse();
  for (const [q, predicate] of cases) {
    const expected = newestFirst.filter(predicate).map((e) => e.id);
    t.same(await searchAll(t, store, q, 1000), expected, `${q}: ${expected.length} events`);
    t.same(await searchAll(t, store, q, 5), expected, `${q}: the same, 5 a page`);
  }
  t.ok(newestFirst.filter((e) => count(e, 'person') > 0 && e.device === 'cam-0').length > 0, 'the combined cases match something');
});

t.test('a malformed query answers 400 with the column of the error and a caret', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const cases: [string, number, RegExp][] = [
    ['class:person AND', 14, /AND needs a term after it/],
    ['device:cam-1 (class:car', 14, /Unclosed parenthesis/],
    ['clas:person', 1, /Unknown filter "clas:"; did you mean class:\?; events take: class:/],
    ['devce:cam-1', 1, /Unknown filter "devce:"; did you mean device:\?/],
    ['tag:day', 1, /"tag:" is a filter of the hosted image search/],
    ['person walking', 1, /Free text \("person walking"\) asks for a semantic search, which needs the hosted API/],
    ['device:cam-1 min-confidence:1.5', 29, /min-confidence: expects a number from 0 to 1/],
    ['date:2026-02-30', 6, /not a calendar day/],
    ['has:audio', 5, /has: expects image or video or file/],
    ['draft:maybe', 7, /draft: expects true or false/],
    ['schema:nope', 8, /Unknown event schema "nope"/],
    ['class:person>=two', 15, /expects a whole number/],
    ['meta.:1', 6, /meta\. needs a key/],
    ['meta.line', 1, /needs a value/],
    ['device>cam', 7, /device takes ":"/],
    ['', 1, /The query is empty/],
  ];
  for (const [q, column, reason] of cases) {
    const res = await getJson(`${store.url}/v2/events/search?q=${encodeURIComponent(q)}`);
    t.equal(res.status, 400, `${q}: 400`);
    const detail = String(res.body.detail);
    t.match(detail, new RegExp(`^Invalid query at column ${column}: `), `${q}: column ${column}`);
    t.match(detail, reason, `${q}: reason`);
    const caretLine = detail.split('\n')[2] ?? '';
    t.equal(caretLine.indexOf('^'), column + 1, `${q}: the caret sits under column ${column}`);
  }
  const missing = await getJson(`${store.url}/v2/events/search`);
  t.equal(missing.status, 422, 'q missing: 422');
  const badLimit = await getJson(`${store.url}/v2/events/search?q=*&limit=0`);
  t.equal(badLimit.status, 422, 'limit 0: 422');
  for (const cursor of ['nope', Buffer.from('c1.12x').toString('base64url'), Buffer.from('c1.0012').toString('base64url')]) {
    const res = await getJson(`${store.url}/v2/events/search?q=*&cursor=${cursor}`);
    t.equal(res.status, 400, `cursor ${cursor}: 400`);
    t.match(res.body.detail, /Invalid cursor/);
  }
});

t.test('the search asks for the API key like the list', async (t) => {
  const store = await startStore({ API_KEY: 'secret' });
  t.teardown(store.stop);
  t.equal((await getJson(`${store.url}/v2/events/search?q=*`)).status, 401, 'no key: 401');
  const ok = await getJson(`${store.url}/v2/events/search?q=*`, { 'X-API-Key': 'secret' });
  t.equal(ok.status, 200, 'with the key: 200');
  t.same(ok.body, { events: [], count: 0, next_cursor: null }, 'an empty store answers an empty page');
  const stats = await getJson(`${store.url}/stats`, { 'X-API-Key': 'secret' });
  t.same(responseProblems('stats', stats.body), [], '/stats keeps its shape');
  t.same(stats.body.search_index, { ready: true, backfill_indexed: null, backfill_until: null }, 'a new store\'s search index is ready, no backfill ran');
});
