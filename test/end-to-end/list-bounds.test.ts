/**
 * List pages are bounded (docs/RELIABILITY.md, "Security"): a page stops adding events before
 * MAX_LIST_RESPONSE_BYTES and says where to go on, an image over MAX_PREDICTIONS_PER_IMAGE is
 * refused, and a filter no index covers reads at most MAX_LIST_SCAN_RECORDS records (or
 * MAX_LIST_RESPONSE_BYTES of stored records) per request. The first test replays the request
 * that took the store down: events of 100,000 detections each, then one `GET /v2/events`, with
 * the RSS of the store's own process measured around the request.
 */
import fs from 'node:fs';
import t from 'tap';
import { loadConfig, ConfigError } from '../../src/config.js';
import { responseProblems } from '../support/response-shapes.js';
import { getJson, imageEvent, postJson, smallEvent } from '../support/events.js';
import { spawnStore } from '../../scripts/lib/spawned-store.js';
import { startStore, tempDataDir } from '../support/store-server.js';

// About 100 MiB of large creates and their lists: 2 minutes on 2 busy cores, over tap's 120 s.
t.setTimeout(300_000);

const MiB = 1024 * 1024;

/** `count` detections, about 63 bytes of JSON each. */
function detections(count: number): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, i) => ({ class: 'a', x: i % 10, y: i % 7, width: 3, height: 4, confidence: 0.5 }));
}

/** Resident set of process `pid` (bytes): current (VmRSS) and peak since the last reset (VmHWM). */
function rss(pid: number): { now: number; peak: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)![1]) * 1024;
  return { now: field('VmRSS'), peak: field('VmHWM') };
}

/** Restarts the peak RSS count of `pid` (Linux `clear_refs` 5); false when not allowed here. */
function resetPeak(pid: number): boolean {
  try {
    fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

interface Page {
  bytes: number;
  body: { events: { id: string; created_at: string; images: { object_detections: unknown[] }[] }[]; count: number; next_timestamp: string | null };
}

async function getPage(url: string): Promise<Page> {
  const res = await fetch(url);
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${text.slice(0, 300)}`);
  return { bytes: Buffer.byteLength(text), body: JSON.parse(text) };
}

/**
 * Lists `base?query`, then follows next_timestamp (passed as `bound`) until it is null.
 * @param from a first value of `bound` (e.g. the next_timestamp of a latest page)
 * @returns every page
 */
async function allPages(base: string, query: string, bound: 'end_time' | 'start_time', maxPages: number, from: string | null = null): Promise<Page[]> {
  const pages: Page[] = [];
  let next: string | null = from;
  do {
    const url: string = next === null ? `${base}?${query}` : `${base}?${query}&${bound}=${encodeURIComponent(next)}`;
    const page = await getPage(url);
    pages.push(page);
    next = page.body.next_timestamp;
    if (pages.length > maxPages) throw new Error(`paging did not end within ${maxPages} pages`);
  } while (next !== null);
  return pages;
}

t.test('a list of events carrying 100,000 detections each stays within MAX_LIST_RESPONSE_BYTES and bounded RSS', async (t) => {
  const maxBytes = 2 * MiB;
  const store = await spawnStore({ PORT: '0', DATA_DIR: tempDataDir(), MAX_LIST_RESPONSE_BYTES: String(maxBytes), MAX_PREDICTIONS_PER_IMAGE: '100000' });
  t.teardown(() => store.child.kill('SIGKILL'));
  const pid = store.child.pid!;

  // A small event at the oldest end: ascending, it fills a page of its own before the large ones.
  const small = (await postJson(`${store.url}/v2/events`, smallEvent())).body.id as string;
  const eventCount = 16;
  const ids: string[] = [];
  const body = JSON.stringify(imageEvent({ customMetadata: { k: 'v' }, images: [{ label: 'belt', objectDetections: detections(100_000) }] }));
  t.ok(body.length > 5 * MiB, `each create body is ${(body.length / MiB).toFixed(1)} MiB`);
  for (let i = 0; i < eventCount; i++) {
    const created = await postJson(`${store.url}/v2/events`, body);
    t.equal(created.status, 201, `event ${i} stored`);
    ids.push(created.body.id);
  }

  const before = rss(pid);
  const peakReset = resetPeak(pid);
  let polledPeak = before.now;
  const poll = setInterval(() => (polledPeak = Math.max(polledPeak, rss(pid).now)), 5);
  const health = fetch(`${store.url}/health`);
  const first = await getPage(`${store.url}/v2/events?limit=100`).finally(() => clearInterval(poll));
  await health;
  const after = rss(pid);
  const peak = Math.max(polledPeak, peakReset ? after.peak : 0);
  const growth = peak - before.now;
  t.comment(`store RSS ${(before.now / MiB).toFixed(0)} MiB before the list request, peak ${(peak / MiB).toFixed(0)} MiB during it (+${(growth / MiB).toFixed(0)} MiB), ${(after.now / MiB).toFixed(0)} MiB after; peak ${peakReset ? 'from VmHWM and polling' : 'from polling only'}`);
  t.same(first.body.events.map((e) => e.id), [ids[eventCount - 1]], 'one large event: it passes the limit alone, and a page holds at least one');
  t.equal(first.body.count, 1);
  t.equal(first.body.next_timestamp, (await getJson(`${store.url}/v2/events/${ids[eventCount - 2]}`)).body.created_at, 'next_timestamp names the first event left out');
  t.ok(growth < 256 * MiB, `the request grew the store's RSS by ${(growth / MiB).toFixed(0)} MiB (bound 256 MiB; before the fix all ${eventCount} events were built as one string)`);

  // Paging goes on through every event, once each, newest first; a page over the limit holds one event.
  const pages = await allPages(`${store.url}/v2/events`, 'limit=100', 'end_time', 40);
  const listed = pages.flatMap((page) => page.body.events.map((e) => e.id));
  t.same(listed, [...[...ids].reverse(), small], 'every event once, in order');
  t.ok(pages.every((page) => page.bytes <= maxBytes || page.body.count === 1), 'each page within the limit, or a single event');
  t.ok(pages.every((page) => page.body.count >= 1), 'never an empty page when events match');
  t.equal(pages.at(-1)!.body.next_timestamp, null);
  const ascending = await allPages(`${store.url}/v2/events`, 'limit=100&sort_direction=asc', 'start_time', 40);
  t.same(ascending.flatMap((page) => page.body.events.map((e) => e.id)), [small, ...ids], 'ascending too');
  t.same(ascending[0].body.events.map((e) => e.id), [small], 'the small event alone: the first large one would pass the limit');
  const detectionsListed = pages.flatMap((page) => page.body.events).filter((e) => e.id !== small).map((e) => e.images[0].object_detections.length);
  t.ok(detectionsListed.every((n) => n === 100_000), 'every large event whole, all its detections');

  // The same for /v2/events/latest/query, continued with end_time on /v2/events.
  const latest = await getPage(`${store.url}/v2/events/latest/query?limit=100`);
  t.same(latest.body.events.map((e) => e.id), [ids[eventCount - 1]]);
  t.not(latest.body.next_timestamp, null);
  const rest = await allPages(`${store.url}/v2/events`, 'limit=100', 'end_time', 40, latest.body.next_timestamp);
  t.same([...latest.body.events, ...rest.flatMap((page) => page.body.events)].map((e) => e.id), [...[...ids].reverse(), small], 'latest, then the rest');

  // An unindexed filter that matches none of the large events reads only so much per request.
  const unindexed = await allPages(`${store.url}/v2/events`, 'metadata_filter=k:ne:v&limit=100', 'end_time', 60);
  t.same(unindexed.flatMap((page) => page.body.events), [], 'nothing matches');
  t.ok(unindexed.length >= eventCount / 2, `${unindexed.length} requests, each reading at most ${maxBytes} bytes of stored records (about one large event)`);
  t.equal((await fetch(`${store.url}/health`)).status, 200);
});

t.test('pages of small events: the byte limit, next_timestamp and both list routes agree', async (t) => {
  const maxBytes = 4096;
  const store = await startStore({ MAX_LIST_RESPONSE_BYTES: String(maxBytes) });
  t.teardown(store.stop);
  const ids: string[] = [];
  for (let i = 0; i < 40; i++) {
    const res = await postJson(`${store.url}/v2/events`, smallEvent({ custom_metadata: { i, pad: 'x'.repeat(200 + (i % 7) * 50) }, draft: i % 5 === 0 }));
    ids.push(res.body.id);
  }
  for (const [query, bound, order] of [['limit=1000', 'end_time', 'desc'], ['limit=1000&sort_direction=asc', 'start_time', 'asc'], ['limit=3', 'end_time', 'desc']] as const) {
    const pages = await allPages(`${store.url}/v2/events`, query, bound, 100);
    t.same(pages.flatMap((page) => page.body.events.map((e) => e.id)), order === 'asc' ? ids : [...ids].reverse(), `${query}: every event once`);
    t.ok(pages.every((page) => page.bytes <= maxBytes), `${query}: every page within ${maxBytes} bytes`);
    t.ok(pages.length > 1, `${query}: ${pages.length} pages`);
    t.ok(pages.every((page) => responseProblems('event-list', page.body).length === 0), `${query}: event-list shape`);
  }
  const finalized = ids.filter((_, i) => i % 5 !== 0).reverse();
  const latest = await getPage(`${store.url}/v2/events/latest/query?limit=1000&include_drafts=false`);
  t.ok(latest.bytes <= maxBytes && latest.body.count < finalized.length, `latest: ${latest.body.count} events in ${latest.bytes} bytes`);
  const rest = await allPages(`${store.url}/v2/events`, 'limit=1000&include_drafts=false', 'end_time', 100, latest.body.next_timestamp);
  t.same([...latest.body.events, ...rest.flatMap((page) => page.body.events)].map((e) => e.id), finalized, 'latest without drafts, continued on /v2/events');
});

t.test('an unindexed filter reads MAX_LIST_SCAN_RECORDS records per request and continues on the next page', async (t) => {
  const store = await startStore({ MAX_LIST_SCAN_RECORDS: '5' });
  t.teardown(store.stop);
  const ids: string[] = [];
  for (let i = 0; i < 30; i++) {
    const res = await postJson(`${store.url}/v2/events`, smallEvent({ custom_metadata: { k: i === 3 || i === 17 ? 'w' : 'v', n: i } }));
    ids.push(res.body.id);
  }
  const first = await getPage(`${store.url}/v2/events?metadata_filter=k:ne:v`);
  t.same([first.body.count, first.body.next_timestamp === null], [0, false], 'the first 5 records hold no match: an empty page, with next_timestamp');
  const pages = await allPages(`${store.url}/v2/events`, 'metadata_filter=k:ne:v', 'end_time', 20);
  t.same(pages.flatMap((page) => page.body.events.map((e) => e.id)), [ids[17], ids[3]], 'both matches found, once each, newest first');
  t.ok(pages.length >= 6, `${pages.length} requests of at most 5 records for 30 records`);
  const asc = await allPages(`${store.url}/v2/events`, 'metadata_filter=n:gt:25&sort_direction=asc', 'start_time', 20);
  t.same(asc.flatMap((page) => page.body.events.map((e) => e.id)), ids.slice(26), 'ascending too');
  // A page full by `limit` names the next match as next_timestamp, and null after the last one.
  const created = async (i: number) => (await getJson(`${store.url}/v2/events/${ids[i]}`)).body.created_at as string;
  const byLimit = await allPages(`${store.url}/v2/events`, 'metadata_filter=n:gte:27&sort_direction=asc&limit=1', 'start_time', 20);
  const withEvents = byLimit.filter((page) => page.body.count > 0);
  t.same(withEvents.map((page) => [page.body.events[0].id, page.body.next_timestamp]), [[ids[27], await created(28)], [ids[28], await created(29)], [ids[29], null]]);
  const indexed = await getPage(`${store.url}/v2/events?metadata_filter=k:w`);
  t.same([indexed.body.count, indexed.body.next_timestamp], [2, null], 'an indexed filter is answered in one page: the budget counts records read, and it reads only matches');
});

t.test('an image with more than MAX_PREDICTIONS_PER_IMAGE predictions answers 422 naming the limit', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const stats = async () => (await getJson(`${store.url}/stats`)).body.current.total_events as number;

  // The request of the report: 290,000 detections in one image, under MAX_RECORD_SIZE_BYTES.
  const huge = JSON.stringify(imageEvent({ images: [{ label: 'belt', objectDetections: detections(290_000) }] }));
  t.ok(huge.length < 20 * MiB, `${(huge.length / MiB).toFixed(1)} MiB body, under MAX_RECORD_SIZE_BYTES`);
  const refused = await postJson(`${store.url}/v2/events`, huge);
  t.equal(refused.status, 422);
  t.match(refused.body.detail, [{ loc: ['body', 'images', 0], msg: /290000 predictions.*MAX_PREDICTIONS_PER_IMAGE allows at most 10000/, type: 'value_error.predictions.max_items' }]);

  const mixed = (n: number) => ({
    label: 'mixed',
    objectDetections: detections(n - 3000),
    classifications: Array.from({ length: 1000 }, () => ({ class: 'ok', confidence: 0.9 })),
    instanceSegmentations: Array.from({ length: 1000 }, () => ({ class: 'seg', x: 1, y: 2, width: 3, height: 4, confidence: 0.5, points: [[1, 2], [3, 4]] })),
    keypoints: Array.from({ length: 1000 }, () => ({ class: 'kp', x: 1, y: 2, width: 3, height: 4, confidence: 0.5, keypoints: [{ id: 0, x: 1, y: 2, occluded: false }] })),
  });
  const atLimit = await postJson(`${store.url}/v2/events`, imageEvent({ images: [mixed(10_000), mixed(10_000)] }));
  t.equal(atLimit.status, 201, '10,000 per image, summed over the four kinds: accepted');
  const over = await postJson(`${store.url}/v2/events`, imageEvent({ images: [mixed(10_000), mixed(10_001)] }));
  t.equal(over.status, 422, '10,001 in the second image');
  t.same(over.body.detail[0].loc, ['body', 'images', 1]);
  t.equal(await stats(), 1, 'only the accepted event is stored');

  const lowered = await startStore({ MAX_PREDICTIONS_PER_IMAGE: '2' });
  t.teardown(lowered.stop);
  const three = await postJson(`${lowered.url}/v2/events`, imageEvent({ images: [{ objectDetections: detections(3) }] }));
  t.match([three.status, three.body.detail[0].msg], [422, /at most 2 per image/]);
});

t.test('the new settings: defaults and validation', async (t) => {
  const config = loadConfig({});
  t.same([config.maxListResponseBytes, config.maxListScanRecords, config.maxPredictionsPerImage], [16 * MiB, 10_000, 10_000]);
  const set = loadConfig({ MAX_LIST_RESPONSE_BYTES: '65536', MAX_LIST_SCAN_RECORDS: '50', MAX_PREDICTIONS_PER_IMAGE: '500' });
  t.same([set.maxListResponseBytes, set.maxListScanRecords, set.maxPredictionsPerImage], [65536, 50, 500]);
  for (const [name, value] of [['MAX_LIST_RESPONSE_BYTES', '100'], ['MAX_LIST_RESPONSE_BYTES', '16MiB'], ['MAX_LIST_SCAN_RECORDS', '0'], ['MAX_PREDICTIONS_PER_IMAGE', '-1'], ['MAX_PREDICTIONS_PER_IMAGE', '2.5']]) {
    t.throws(() => loadConfig({ [name]: value }), ConfigError, `${name}=${value} refused`);
    t.throws(() => loadConfig({ [name]: value }), { message: new RegExp(`Invalid setting ${name}=`) });
  }
});
