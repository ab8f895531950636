/** GET /v2/events and friends over real HTTP: every filter, paging, latest, count stats, E5/E6. */
import t from 'tap';
import { responseProblems } from './support/response-shapes.js';
import { getJson, postJson, smallEvent } from './support/events.js';
import { startStore, type TestStore } from './support/store-server.js';

interface Seeded {
  store: TestStore;
  ids: string[];
}

/** 30 events across 3 devices, 2 schemas, 2 workflows, numeric and string metadata, 3 drafts. */
async function seed(): Promise<Seeded> {
  const store = await startStore();
  const ids: string[] = [];
  for (let i = 0; i < 30; i++) {
    const schema = i % 2 === 0 ? 'quality_check' : 'custom';
    const res = await postJson(`${store.url}/v2/events`, smallEvent({
      device_id: `cam-${i % 3}`,
      workflow_id: `wf-${i % 2}`,
      event_schema: schema,
      event_data: schema === 'quality_check' ? { result: 'pass', external_id: `ext-${i}` } : { value: String(i), externalId: `ext-${i}` },
      custom_metadata: { idx: i, line: i < 15 ? 'A' : 'B', score: String(i / 10), ok: i % 5 === 0 },
      draft: i >= 27,
    }));
    if (res.status !== 201) throw new Error(`seed failed: ${JSON.stringify(res.body)}`);
    ids.push(res.body.id);
  }
  return { store, ids };
}

const ids = (body: any): string[] => body.events.map((e: any) => e.id);

t.test('filters', async (t) => {
  const { store, ids: all } = await seed();
  t.teardown(store.stop);
  const list = async (query: string) => {
    const res = await getJson(`${store.url}/v2/events?${query}`);
    t.equal(res.status, 200, query);
    t.same(responseProblems('event-list', res.body), [], `${query} shape`);
    return res.body;
  };
  const expect = (pred: (i: number) => boolean, order: 'asc' | 'desc' = 'desc') => {
    const chosen = all.filter((_, i) => pred(i));
    return order === 'desc' ? chosen.reverse() : chosen;
  };

  t.same(ids(await list('')), expect(() => true), 'no filter: all, newest first');
  t.same(ids(await list('sort_direction=asc')), expect(() => true, 'asc'));
  t.same(ids(await list('device_id=cam-1')), expect((i) => i % 3 === 1));
  t.same(ids(await list('device_ids=cam-0,cam-2')), expect((i) => i % 3 !== 1));
  t.same(ids(await list('event_schema=custom')), expect((i) => i % 2 === 1));
  t.same(ids(await list('event_schemas=custom,quality_check&device_id=cam-0')), expect((i) => i % 3 === 0));
  t.same(ids(await list('workflow_id=wf-0&device_id=cam-1')), expect((i) => i % 2 === 0 && i % 3 === 1), 'two indexes intersected');
  t.same(ids(await list('workflow_ids=wf-1')), expect((i) => i % 2 === 1));
  t.same(ids(await list('external_id=ext-7')), [all[7]], 'external_id from event_data');
  t.same(ids(await list('external_ids=ext-1,ext-2,ext-3')), [all[3], all[2], all[1]]);
  t.same(ids(await list('include_drafts=false')), expect((i) => i < 27), 'drafts hidden');
  t.same(ids(await list('metadata_filter=line:B')), expect((i) => i >= 15));
  t.same(ids(await list('metadata_filter=line:eq:A&device_id=cam-2')), expect((i) => i < 15 && i % 3 === 2));
  t.same(ids(await list('metadata_filter=idx:gt:25')), expect((i) => i > 25), 'numeric gt, not string order');
  t.same(ids(await list('metadata_filter=idx:gte:9&metadata_filter=idx:lt:12')), expect((i) => i >= 9 && i < 12), 'filters combine with AND');
  t.same(ids(await list('metadata_filter=idx:lte:2')), expect((i) => i <= 2));
  t.same(ids(await list('metadata_filter=score:gt:2.5')), expect((i) => i / 10 > 2.5), 'numeric strings compare numerically');
  t.same(ids(await list('metadata_filter=idx:ne:4&device_id=cam-1')), expect((i) => i !== 4 && i % 3 === 1));
  t.same(ids(await list('metadata_filter=missing:ne:x')), [], 'ne matches only events carrying the key');
  t.same(ids(await list('metadata_filter=ok:true')), expect((i) => i % 5 === 0), 'booleans');
  t.same(ids(await list('metadata_filter=line:gt:A')), expect((i) => i >= 15), 'strings compare as strings');

  const middle = (await getJson(`${store.url}/v2/events/${all[10]}`)).body.created_at;
  const later = (await getJson(`${store.url}/v2/events/${all[20]}`)).body.created_at;
  t.same(ids(await list(`start_time=${encodeURIComponent(middle)}&end_time=${encodeURIComponent(later)}`)), expect((i) => i >= 10 && i <= 20), 'time bounds inclusive');
  t.same(ids(await list(`start_time=${encodeURIComponent(middle)}&device_id=cam-0`)), expect((i) => i >= 10 && i % 3 === 0));

  const feedback = await postJson(`${store.url}/v2/events`, smallEvent({ event_schema: 'operator_feedback', event_data: { relatedEventId: all[3], feedback: 'incorrect' } }));
  t.same(ids(await list(`related_event_id=${all[3]}`)), [feedback.body.id], 'feedback by related_event_id');
});

t.test('next_timestamp pages without skipping or repeating', async (t) => {
  const { store, ids: all } = await seed();
  t.teardown(store.stop);
  for (const [direction, bound] of [['desc', 'end_time'], ['asc', 'start_time']] as const) {
    const seen: string[] = [];
    let query = `limit=7&sort_direction=${direction}&device_ids=cam-0,cam-1`;
    let pages = 0;
    for (;;) {
      const { body } = await getJson(`${store.url}/v2/events?${query}`);
      seen.push(...ids(body));
      t.equal(body.count, body.events.length);
      pages++;
      if (body.next_timestamp === null) break;
      query = `limit=7&sort_direction=${direction}&device_ids=cam-0,cam-1&${bound}=${encodeURIComponent(body.next_timestamp)}`;
    }
    const expected = all.filter((_, i) => i % 3 !== 2);
    t.same(seen, direction === 'desc' ? [...expected].reverse() : expected, `${direction}: every event once, in order`);
    t.equal(pages, 3);
  }
});

t.test('latest, one event, count stats', async (t) => {
  const { store, ids: all } = await seed();
  t.teardown(store.stop);
  const latest = await getJson(`${store.url}/v2/events/latest/query?limit=5`);
  t.same(ids(latest.body), all.slice(25).reverse());
  const finalizedOnly = await getJson(`${store.url}/v2/events/latest/query?limit=2&include_drafts=false`);
  t.same(ids(finalizedOnly.body), [all[26], all[25]]);

  t.equal((await getJson(`${store.url}/v2/events/00000000-0000-0000-0000-000000000000`)).status, 404);
  t.equal((await getJson(`${store.url}/v2/events/${'x'.repeat(5000)}`)).status, 404, 'an over-long id is a plain 404');
  t.equal((await getJson(`${store.url}/v2/events/..%2F..%2Fetc%2Fpasswd`)).status, 404);

  const stats = await getJson(`${store.url}/events/count/stats?device_id=cam-2&event_schema=quality_check`);
  t.same(responseProblems('count-stats', stats.body), []);
  t.equal(stats.body.total_count, 30);
  t.equal(stats.body.filtered_count, all.filter((_, i) => i % 3 === 2 && i % 2 === 0).length);
  t.equal(stats.body.oldest_timestamp, (await getJson(`${store.url}/v2/events/${all[2]}`)).body.created_at);
  t.equal(stats.body.newest_timestamp, (await getJson(`${store.url}/v2/events/${all[26]}`)).body.created_at);
  const unfiltered = await getJson(`${store.url}/events/count/stats`);
  t.equal(unfiltered.body.filtered_count, 30);
  t.equal(unfiltered.body.oldest_timestamp, (await getJson(`${store.url}/v2/events/${all[0]}`)).body.created_at);
  const none = await getJson(`${store.url}/events/count/stats?workflow_id=nope`);
  t.same([none.body.filtered_count, none.body.oldest_timestamp], [0, null]);
});

t.test('bad filters: E5 answers 400, limit and booleans 422', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const cases: [string, number][] = [
    ['start_time=yesterday', 400],
    ['end_time=2026-13-45T00:00:00Z', 400],
    ['sort_direction=sideways', 400],
    ['metadata_filter=novalue', 400],
    ['metadata_filter=:x', 400],
    ['metadata_filter=k:gt:', 400],
    ['limit=0', 422],
    ['limit=1001', 422],
    ['limit=ten', 422],
    ['limit=2.5', 422],
    ['include_drafts=maybe', 422],
  ];
  for (const [query, status] of cases) {
    const res = await getJson(`${store.url}/v2/events?${query}`);
    t.equal(res.status, status, query);
    t.same(responseProblems('error', res.body), [], `${query} error shape`);
  }
  t.equal((await getJson(`${store.url}/v2/events/latest/query?limit=5000`)).status, 422);
  t.equal((await getJson(`${store.url}/v2/events?limit=1000`)).status, 200);
});

// Found by the fuzz run (npm run fuzz; docs/RELIABILITY.md), commit d13be91.
t.test('a filter value longer than an LMDB key answers like any other filter, never 500', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const long = 'x'.repeat(2000);
  await postJson(`${store.url}/v2/events`, smallEvent({ custom_metadata: { line: 'A' } }));
  for (const query of [`/v2/events?device_id=${long}`, `/v2/events?external_id=${long}`, `/v2/events?metadata_filter=${long}:1`,
    `/v2/events?metadata_filter=line:${long}`]) {
    const res = await getJson(`${store.url}${query}`);
    t.same([res.status, res.body.count], [200, 0], `${query.slice(0, 40)}...: nothing matches`);
  }
  for (const query of [`/events/count/stats?device_id=${long}`, `/events/count/stats?workflow_id=${long}`]) {
    const res = await getJson(`${store.url}${query}`);
    t.same([res.status, res.body.total_count, res.body.filtered_count], [200, 1, 0], `${query.slice(0, 40)}...: nothing matches`);
  }
});

// Found by the fuzz run (npm run fuzz; docs/RELIABILITY.md), commit fa04ddb.
t.test('metadata_filter on keys named like Object.prototype members answers 200, never 500 (found by the fuzz run)', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  await postJson(`${store.url}/v2/events`, smallEvent({ custom_metadata: { line: 'A' } }));
  for (const filter of ['toString:ne:x', 'constructor:gt:1', 'hasOwnProperty:ne:1', 'valueOf:lt:5', '__proto__:ne:x', 'toString:x']) {
    const res = await getJson(`${store.url}/v2/events?metadata_filter=${encodeURIComponent(filter)}`);
    t.same([res.status, res.body.count], [200, 0], `${filter}: the event has no such key`);
  }
});
