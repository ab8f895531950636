/**
 * The event search's query plan against its own semantics, on random data and random queries
 * (fast-check): whatever the plan drives from, probes or checks on records, with the search index
 * or without it (the backfill still running), paging with any limit gives exactly the events that
 * `matchesCondition` accepts, newest first; a page read in slices with turns between
 * (scan-turns.ts `scanInTurns`, as the routes read) is the page of one pass, and so are the pages
 * whose large records are checked on the record checker's worker (record-checker.ts). The semantics
 * themselves are checked against an independent oracle in event-search.test.ts.
 */
import fc from 'fast-check';
import t from 'tap';
import { Random } from '../scripts/lib/random.js';
import { listEventsBody, searchEventsBody } from '../src/events/read-events.js';
import { eventSearchConditions } from '../src/events/search-conditions.js';
import { matchesCondition, planSearch } from '../src/store/read/event-search.js';
import { scanPlan } from '../src/store/read/event-query.js';
import { scanInTurns } from '../src/store/read/scan-turns.js';
import { decodeRecord } from '../src/store/index/record-codec.js';
import { openLocalStore, type LocalStore } from './support/local-store.js';
import { storeHandles } from '../src/store/read/store-view.js';

const CLASSES = ['a', 'b', 'c', 'd'];
const LIMITS = { maxResponseBytes: 16 * 1024 * 1024, maxScanRecords: 10_000 };

async function seed(local: LocalStore): Promise<void> {
  // A fixed seed: the data is the same on every run.
  const random = new Random(42);
  const rnd = () => random.next();
  const pick = <T>(values: T[]): T => random.pick(values);
  const box = () => ({ class: pick(CLASSES), x: 10, y: 10, width: 4, height: 4, confidence: Math.round(rnd() * 100) / 100 });
  for (let i = 0; i < 400; i++) {
    const images = Array.from({ length: pick([0, 1, 1, 2]) }, () => ({
      object_detections: Array.from({ length: pick([0, 1, 2, 3]) }, box),
      classifications: rnd() < 0.3 ? [{ class: pick(CLASSES), confidence: Math.round(rnd() * 100) / 100 }] : [],
    }));
    const schema = pick(['custom', 'custom', 'safety_alert']);
    await local.create({
      inference_timestamp: '2026-11-22T01:00:00Z',
      event_schema: schema,
      event_data: schema === 'custom' ? { value: 'x', external_id: `x-${i % 50}` } : { alert_type: 'zone', severity: 'low', external_id: `x-${i % 50}` },
      device_id: pick(['d0', 'd1', 'd2', 'd3']),
      workflow_id: pick(['w0', 'w1']),
      ...(rnd() < 0.8 && { stream_id: pick(['s0', 's1', 's2']) }),
      ...(rnd() < 0.5 && { solution: pick(['o0', 'o1']) }),
      custom_metadata: { line: pick(['A', 'B', 'C']), n: Math.floor(rnd() * 20) },
      images,
      draft: rnd() < 0.2,
    });
  }
}

/** Random filters of every kind the plan treats differently. */
const filter = fc.oneof(
  fc.constantFrom(...CLASSES).map((c) => `class:${c}`),
  fc.tuple(fc.constantFrom(...CLASSES), fc.constantFrom('>=', '>', '=', '<', '<='), fc.integer({ min: 0, max: 3 })).map(([c, op, n]) => `class:${c}${op}${n}`),
  fc.integer({ min: 0, max: 10 }).map((n) => `min-confidence:${n / 10}`),
  fc.constantFrom('d0', 'd1', 'd2', 'd3', 'd9').map((v) => `device:${v}`),
  fc.constantFrom('s0', 's1', 's2').map((v) => `stream:${v}`),
  fc.constantFrom('o0', 'o1').map((v) => `solution:${v}`),
  fc.constantFrom('w0', 'w1').map((v) => `workflow:${v}`),
  fc.constantFrom('custom', 'safety_alert').map((v) => `schema:${v}`),
  fc.integer({ min: 0, max: 60 }).map((n) => `external-id:x-${n}`),
  fc.constantFrom('A', 'B', 'C').map((v) => `meta.line:${v}`),
  fc.tuple(fc.constantFrom('>', '>=', '<', '<='), fc.integer({ min: 0, max: 20 })).map(([op, n]) => `meta.n${op}${n}`),
  fc.integer({ min: 0, max: 8 }).map((n) => `min-annotations:${n}`),
  fc.integer({ min: 0, max: 8 }).map((n) => `max-annotations:${n}`),
  fc.constantFrom('has:image', 'draft:true', 'draft:false', '*'),
);

/** Random queries: filters under AND, OR, NOT, a leading minus and parentheses, a few levels deep. */
const query: fc.Arbitrary<string> = fc.letrec<{ q: string }>((tie) => ({
  q: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    filter,
    fc.tuple(tie('q'), tie('q')).map(([a, b]) => `(${a}) (${b})`),
    fc.tuple(tie('q'), tie('q')).map(([a, b]) => `(${a}) AND (${b})`),
    fc.tuple(tie('q'), tie('q')).map(([a, b]) => `(${a}) OR (${b})`),
    tie('q').map((a) => `NOT (${a})`),
    filter.map((a) => `-${a}`),
  ),
})).q;

/** Every event the search answers, following the cursor with pages of `limit`. */
async function searchAll(local: LocalStore, q: string, limit: number): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const params = new URLSearchParams({ q, limit: String(limit), ...(cursor !== null && { cursor }) });
    const page = JSON.parse((await searchEventsBody(local.store, params, LIMITS)).toString());
    ids.push(...page.events.map((e: { id: string }) => e.id));
    cursor = page.next_cursor;
  } while (cursor !== null);
  return ids;
}

t.test('any query, any page size, with or without the search index: exactly the events the conditions accept', async (t) => {
  const local = await openLocalStore();
  t.teardown(() => local.close());
  await seed(local);
  const { stored } = local.store[storeHandles];
  const records = [...stored.createdAts({ reverse: true })].map((createdAt) => decodeRecord(stored.value(createdAt)!));
  let nonEmpty = 0;
  await fc.assert(fc.asyncProperty(query, fc.integer({ min: 1, max: 60 }), fc.boolean(), async (q, limit, indexed) => {
    const condition = eventSearchConditions(q);
    const want = records.filter((record) => matchesCondition(record, condition)).map((record) => record.id);
    if (want.length > 0) nonEmpty++;
    local.store.searchIndexReady = indexed;
    try {
      const got = await searchAll(local, q, limit);
      if (got.length !== want.length || got.some((id, i) => id !== want[i])) {
        throw new Error(`${q} (limit ${limit}, index ${indexed}): ${got.length} events, the conditions accept ${want.length}`);
      }
    } finally {
      local.store.searchIndexReady = true;
    }
  }), { numRuns: 400, seed: 20261123 });
  t.ok(nonEmpty > 100, `most queries matched something (${nonEmpty} of 400)`);
});

t.test('a page read in turns of one record each is the page of one pass, with the same next value', async (t) => {
  const local = await openLocalStore();
  t.teardown(() => local.close());
  await seed(local);
  const { store } = local;
  const budget = { records: 150, bytes: LIMITS.maxResponseBytes };
  await fc.assert(fc.asyncProperty(query, fc.integer({ min: 1, max: 60 }), async (q, limit) => {
    const condition = eventSearchConditions(q);
    const plan = (before: number | undefined) => planSearch(store, condition, { before, searchIndexReady: true, direction: 'desc' });
    for (let before: number | undefined, pages = 0; pages < 3; pages++) {
      const once: number[] = [];
      const turns: number[] = [];
      const next = scanPlan(store, plan(before), 'desc', limit, budget, { add: (_json, createdAt) => once.push(createdAt) > 0 });
      const nextInTurns = await scanInTurns(store, (bound) => plan(bound ?? before), 'desc', limit, budget, { add: (_json, createdAt) => turns.push(createdAt) > 0 }, 0);
      if (JSON.stringify([turns, nextInTurns]) !== JSON.stringify([once, next])) throw new Error(`${q} (limit ${limit}): in turns ${turns.length} events, next ${nextInTurns}; in one pass ${once.length}, next ${next}`);
      if (next === null) break;
      before = next;
    }
  }), { numRuns: 150, seed: 20261207 });
  t.pass('every page equal');
});

t.test('records of 1 MiB or more are checked on the record checker\'s worker: the same events, page by page', async (t) => {
  const local = await openLocalStore();
  t.teardown(() => local.close());
  // Six events of 30,000 detections (about 1.5 MiB of record each) between small ones.
  const detection = (i: number, k: number) => ({ class: `c${(i + k) % 5}`, x: 10, y: 10, width: 4, height: 4, confidence: ((i * 7 + k) % 100) / 100 });
  for (let i = 0; i < 12; i++) {
    const many = i % 2 === 0 ? 10_000 : 1;
    await local.create({
      inference_timestamp: '2026-11-22T01:00:00Z', event_schema: 'custom', event_data: { value: 'x' }, device_id: `d${i % 3}`,
      custom_metadata: { n: i },
      images: [0, 1, 2].map((image) => ({ object_detections: Array.from({ length: many }, (_, k) => detection(i + image, k)) })),
    });
  }
  const { stored } = local.store[storeHandles];
  const records = [...stored.createdAts({ reverse: true })].map((createdAt) => decodeRecord(stored.value(createdAt)!));
  for (const q of ['class:c1 min-confidence:0.99', 'class:c4>=4001', 'meta.n>=5 -device:d1', 'min-annotations:3']) {
    const condition = eventSearchConditions(q);
    const want = records.filter((record) => matchesCondition(record, condition)).map((record) => record.id);
    t.same(await searchAll(local, q, 2), want, `${q}: ${want.length} events`);
  }
  const listed: string[] = [];
  for (let next: string | null = null, pages = 0; pages === 0 || next !== null; pages++) {
    const params = new URLSearchParams({ metadata_filter: 'n:ne:4', limit: '3', ...(next !== null && { end_time: next }) });
    const page = JSON.parse((await listEventsBody(local.store, params, LIMITS)).toString());
    listed.push(...page.events.map((e: { id: string }) => e.id));
    next = page.next_timestamp;
  }
  t.same(listed, records.filter((record) => record.custom_metadata.n !== 4).map((record) => record.id), 'a list whose filter no index covers');
  t.ok(local.store.records.checked >= 6, `${local.store.records.checked} records checked on the worker`);
});
