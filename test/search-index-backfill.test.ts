/**
 * The search index backfill (docs/STORAGE.md, "The search index") on a real LMDB: a store whose
 * class, stream and solution entries are missing (as one written before they existed) answers
 * searches correctly while the backfill runs and once it is done, gains exactly the entries a
 * create writes, and resumes from its recorded step after a stop.
 */
import t from 'tap';
import type { Key } from 'lmdb';
import { searchEventsBody } from '../src/events/read-events.js';
import { searchIndexKeysOf } from '../src/store/index/index-keys.js';
import { openDatabases, type StoreDatabases } from '../src/store/index/lmdb-env.js';
import { decodeRecord } from '../src/store/index/record-codec.js';
import { backfillSearchIndex, prepareSearchIndex } from '../src/store/index/search-index.js';
import { until } from './support/waiting.js';
import { openLocalStore, type LocalStore } from './support/local-store.js';
import { smallEvent } from './support/events.js';
import { storeHandles } from '../src/store/read/store-view.js';
import { asEarlierEngine } from './support/earlier-engine.js';

const CLASSES = ['person', 'car', 'dog', 'bicycle'];
const NEW_CODES = new Set(['c', 't', 'o']);
const LIMITS = { maxResponseBytes: 16 * 1024 * 1024, maxScanRecords: 10_000 };
/** Events in a store to backfill: more than one step takes (search-index.ts STEP_EVENTS, 5,000), so a backfill is seen under way. */
const EVENTS = 6_000;

/** Event i: detections of two classes, a stream and a solution on some. */
function eventNumber(i: number): Record<string, unknown> {
  const detection = (cls: string) => ({ class: cls, x: 5, y: 5, width: 2, height: 2, confidence: 0.5 });
  return smallEvent({
    stream_id: `s-${i % 3}`,
    ...(i % 2 === 0 && { solution: 'sol' }),
    images: [{ object_detections: [detection(CLASSES[i % 4]), detection(CLASSES[(i + 1) % 4])] }],
  });
}

/** Every index key of the search index, as strings, sorted. */
function searchKeys(dbs: StoreDatabases): string[] {
  const keys: string[] = [];
  for (const key of dbs.index.getKeys()) if (NEW_CODES.has((key as Key[])[0] as string)) keys.push(JSON.stringify(key));
  return keys.sort();
}

/** The search index entries every stored record should have. */
function expectedKeys(dbs: StoreDatabases): string[] {
  const keys: string[] = [];
  for (const { value } of dbs.events.getRange()) for (const key of searchIndexKeysOf(decodeRecord(value))) keys.push(JSON.stringify(key));
  return keys.sort();
}

/**
 * Removes the search index from a closed store, in the engine before blocks (earlier-engine.ts),
 * leaving it as a store written before the index existed (or, with `resumeAt`, as one whose backfill stopped before that created_at).
 */
async function stripSearchIndex(dataDir: string, resumeAt?: { next: number; until: number }): Promise<void> {
  await asEarlierEngine(dataDir);
  const dbs = openDatabases(dataDir);
  await dbs.root.transaction(() => {
    for (const key of dbs.index.getKeys()) {
      const parts = key as Key[];
      if (NEW_CODES.has(parts[0] as string) && (resumeAt === undefined || (parts[parts.length - 1] as number) >= resumeAt.next)) dbs.index.removeSync(key);
    }
    if (resumeAt) dbs.meta.putSync('searchIndex', { version: 0, building: { version: 1, ...resumeAt } });
    else dbs.meta.removeSync('searchIndex');
  });
  await dbs.root.close();
}

/** Creates events 0..n-1, 250 at a time; returns them newest first with their numbers. */
async function fill(local: LocalStore, n: number): Promise<{ id: string; i: number }[]> {
  const made: { id: string; i: number; createdAt: number }[] = [];
  for (let from = 0; from < n; from += 250) {
    const batch = Array.from({ length: Math.min(250, n - from) }, (_, k) => from + k);
    const created = await Promise.all(batch.map((i) => local.create(eventNumber(i))));
    created.forEach(({ id }, k) => made.push({ id, i: batch[k], createdAt: local.createdAt(id) }));
  }
  return made.sort((a, b) => b.createdAt - a.createdAt);
}

async function searchIds(local: LocalStore, q: string): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  do {
    const params = new URLSearchParams({ q, limit: '1000', ...(cursor && { cursor }) });
    const page = JSON.parse((await searchEventsBody(local.store, params, LIMITS)).toString());
    ids.push(...page.events.map((e: { id: string }) => e.id));
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  return ids;
}

t.test('an old store gains the entries a create writes, and answers right before and after', async (t) => {
  let local = await openLocalStore();
  const newest = await fill(local, EVENTS);
  t.ok(local.store.searchIndexReady, 'a new store is current from the start');
  const written = searchKeys(local.store[storeHandles].dbs);
  t.same(written, expectedKeys(local.store[storeHandles].dbs), 'creates write the search index entries');
  await local.close();

  await stripSearchIndex(local.dataDir);
  local = await openLocalStore({ DATA_DIR: local.dataDir });
  t.teardown(() => local.close());
  t.notOk(local.store.searchIndexReady, 'reopened without the entries: the backfill runs');
  const matching = (predicate: (i: number) => boolean) => newest.filter(({ i }) => predicate(i)).map(({ id }) => id);
  const expectations: [string, string[]][] = [
    ['class:person', matching((i) => i % 4 === 0 || i % 4 === 3)],
    ['stream:s-1 class:dog', matching((i) => i % 3 === 1 && (i % 4 === 2 || i % 4 === 1))],
    ['solution:sol', matching((i) => i % 2 === 0)],
  ];
  for (const [q, expected] of expectations) t.same(await searchIds(local, q), expected, `${q}, while the backfill runs: checked on records`);
  // A create during the backfill indexes itself.
  const late = await local.create(eventNumber(3)); // person and bicycle, stream s-0, no solution
  await until('the backfill is done', () => local.store.searchIndexReady, 60_000);
  t.equal(await prepareSearchIndex(local.store[storeHandles].dbs), true, 'meta says the index is current: the next open backfills nothing');
  t.match(local.store.searchIndexBackfill, { indexed: EVENTS, until: local.createdAt(newest[0].id) }, `the backfill indexed the ${EVENTS} events there were (what /stats shows)`);
  t.same(searchKeys(local.store[storeHandles].dbs), expectedKeys(local.store[storeHandles].dbs), 'every event has exactly its entries');
  t.same((await searchIds(local, 'class:person'))[0], late.id, 'the event created during the backfill is found');
  for (const [q, expected] of expectations.slice(1)) t.same(await searchIds(local, q), expected, `${q}, from the index`);
});

t.test('a backfill resumes from its last recorded step', async (t) => {
  let local = await openLocalStore();
  await fill(local, 500);
  await local.close();
  await asEarlierEngine(local.dataDir);
  const keys = await (async () => {
    const earlier = openDatabases(local.dataDir);
    const all = [...earlier.events.getKeys()] as number[];
    await earlier.root.close();
    return all;
  })();

  // As if the backfill had committed its steps up to event 200 and then stopped.
  await stripSearchIndex(local.dataDir, { next: keys[200], until: keys[keys.length - 1] });
  // Event 10's entries go too: a backfill that started over would write them again.
  const dbs = openDatabases(local.dataDir);
  const skipped = searchIndexKeysOf(decodeRecord(dbs.events.get(keys[10])!)).map((key) => JSON.stringify(key));
  await dbs.root.transaction(() => {
    for (const key of skipped) dbs.index.removeSync(JSON.parse(key));
  });
  t.ok(searchKeys(dbs).length > 0, 'the first steps\' entries are there');
  await dbs.root.close();

  local = await openLocalStore({ DATA_DIR: local.dataDir });
  t.teardown(() => local.close());
  await until('the backfill is done', () => local.store.searchIndexReady, 60_000);
  const expected = expectedKeys(local.store[storeHandles].dbs).filter((key) => !skipped.includes(key));
  t.same(searchKeys(local.store[storeHandles].dbs), expected, 'resumed at event 200 and completed: every event from there has its entries, none before was walked again');
});

t.test('a store closed during its backfill resumes at the next open', async (t) => {
  let local = await openLocalStore();
  await fill(local, EVENTS);
  await local.close();
  await stripSearchIndex(local.dataDir);
  local = await openLocalStore({ DATA_DIR: local.dataDir });
  await local.close(); // stops after the step under way
  const dbs = openDatabases(local.dataDir);
  const state = dbs.meta.get('searchIndex') as { version: number; building?: unknown };
  await dbs.root.close();
  t.equal(state.version, 0, 'not current yet');
  t.ok(state.building, 'the backfill recorded where it stands');

  local = await openLocalStore({ DATA_DIR: local.dataDir });
  t.teardown(() => local.close());
  await until('the backfill is done', () => local.store.searchIndexReady, 60_000);
  t.same(searchKeys(local.store[storeHandles].dbs), expectedKeys(local.store[storeHandles].dbs), 'every event has its entries');
});

t.test('a step whose time budget is spent before its first event still moves on (a busy machine)', async (t) => {
  // Found by CI under load: a step that ran out of time before its first event recorded no
  // resume point, and the next step started over from the first event (indexed 21,267 of 20,000).
  const local = await openLocalStore();
  await fill(local, 300);
  await local.close();
  await stripSearchIndex(local.dataDir);
  const dbs = openDatabases(local.dataDir);
  t.teardown(() => dbs.root.close());
  t.notOk(await prepareSearchIndex(dbs), 'the backfill is needed');
  let steps = 0;
  const done = await backfillSearchIndex(dbs, () => false, () => steps++, { ms: 0, events: 5000 });
  t.equal(done?.indexed, 300, 'each event indexed once');
  t.equal(steps, 299, 'one event a step, then the last step');
  t.same(searchKeys(dbs), expectedKeys(dbs), 'every event has exactly its entries');
});
