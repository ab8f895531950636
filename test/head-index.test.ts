/**
 * The head's own index (src/store/head/head-index.ts; docs/STORAGE.md, "The head", "Reads"): a
 * plan seeks in the head as it does in LMDB, so a filter reads only the head's creates that its
 * index entries name, not every create the head holds. A long device id is indexed as its digest,
 * which the index cannot tell from another value's, so its plan is not exact and each candidate's
 * record is read to check it, within the scan's budget of records: with every create in the head,
 * a budget of five finds the one match among 301 only when the head's index picks it out.
 * Whether every read equals a model with creates and updates in the head is head-model.test.ts's.
 */
import t, { type Test } from 'tap';
import { presentEventJson } from '../src/events/present.js';
import { EventStore } from '../src/store/engine/event-store.js';
import type { NewEvent } from '../src/store/engine/prepared-create.js';
import { scanEvents, scanPlan, type EventQuery } from '../src/store/read/event-query.js';
import { planSearch } from '../src/store/read/event-search.js';
import { tempDataDir } from './support/store-server.js';

const LONG_DEVICE = 'cam-'.padEnd(600, 'x');
const BUDGET = { records: 5, bytes: 1 << 30 };

function newEvent(device: string): NewEvent {
  return {
    fields: {
      solution: null, workflow_id: null, workflow_version: null, inference_timestamp: '2026-12-03T01:00:00Z',
      device_id: device, stream_id: null, image_id: null, event_schema: 'custom', event_data: {},
      custom_metadata: {}, display_image_position: null, draft: false,
    },
    images: [],
  };
}

/** A store with 300 creates of cam-a and then one of LONG_DEVICE, all in the head. */
async function storeWithHead(t: Test): Promise<{ store: EventStore; wanted: number }> {
  // A checkpoint is due after 60 s or 2,000 creates: none comes during the test.
  const store = await EventStore.open(tempDataDir(), { sinks: [], present: presentEventJson, checkpointMs: 60_000 });
  t.teardown(() => store.close());
  for (let i = 0; i < 300; i++) await store.create(newEvent('cam-a'));
  const wanted = (await store.create(newEvent(LONG_DEVICE))).created_at;
  t.same(store.headBounds()?.newest, wanted, 'the creates are in the head');
  t.equal(store.counters().events, 301);
  return { store, wanted };
}

t.test('a list filter the index cannot decide reads only the head creates its entries name', async (t) => {
  const { store, wanted } = await storeWithHead(t);
  const query: EventQuery = { fields: { device_id: [LONG_DEVICE] }, metadata: [], startTime: undefined, endTime: undefined, includeDrafts: true, direction: 'desc', limit: 10 };
  const found: number[] = [];
  const next = scanEvents(store, query, BUDGET, { add: (_json, createdAt) => (found.push(createdAt), true) });
  t.same(found, [wanted], 'the one match, within a budget of five records');
  t.equal(next, null, 'and nothing follows');
});

t.test('a search condition the index cannot decide reads only the head creates its entries name', async (t) => {
  const { store, wanted } = await storeWithHead(t);
  const plan = planSearch(store, { kind: 'field', field: 'device_id', value: LONG_DEVICE }, { searchIndexReady: store.searchIndexReady, direction: 'asc' });
  t.equal(plan.exact, false, 'a digest does not decide the condition');
  const found: number[] = [];
  const next = scanPlan(store, plan, 'asc', 10, BUDGET, { add: (_json, createdAt) => (found.push(createdAt), true) });
  t.same(found, [wanted]);
  t.equal(next, null);
});
