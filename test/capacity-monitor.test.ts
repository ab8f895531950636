/**
 * The limit check's look at the store's usage (src/lifecycle/capacity.ts `needsCleanup`;
 * docs/STORAGE.md, "When a checkpoint runs"): an idle store is not asked, a store that wrote, is
 * over a limit or has its gate closed is. The store's write count it reads is
 * src/store/engine/event-store.ts `writes`. A real store in a temp dir, its usage as the HTTP thread
 * answers the worker (src/lifecycle/worker-handle.ts).
 */
import t from 'tap';
import { CapacityMonitor, closeGate, isCapacityBlocked, usageOf, type StoreUsage } from '../src/lifecycle/capacity.js';
import { createLogger } from '../src/logger.js';
import { EMPTY_COUNTERS } from '../src/store/index/lmdb-env.js';
import type { StoreView } from '../src/store/read/store-view.js';
import { smallEvent } from './support/events.js';
import { openLocalStore } from './support/local-store.js';

t.test('the store counts its writes: a batch into the head, a checkpoint, a reset', async (t) => {
  const local = await openLocalStore();
  t.teardown(local.close);
  const { store } = local;
  const writes = () => Atomics.load(store.writes, 0);
  const before = writes();
  await local.create(smallEvent());
  const created = writes();
  t.equal(created - before, 2, 'a create moved the count once into the head, once at its checkpoint');
  await store.checkpointed();
  t.equal(writes(), created, 'a checkpoint of an empty head writes nothing');
  await store.clearAll();
  t.ok(writes() > created, 'a reset moved the count');
});

t.test('the limit check asks for the usage only after a write, while over a limit, or with the gate closed', async (t) => {
  const local = await openLocalStore({ MAX_RECORDS: '3' });
  t.teardown(local.close);
  const { store, config } = local;
  const flag = new Int32Array(new SharedArrayBuffer(4));
  const monitor = new CapacityMonitor(store, config, flag, store.writes, createLogger('silent'));
  let asked = 0;
  const usageNow = async (): Promise<StoreUsage> => {
    asked++;
    return usageOf(store);
  };

  t.equal(await monitor.needsCleanup(usageNow), false, 'an empty store is within its limits');
  t.equal(asked, 1, 'the first look asks');
  t.equal(await monitor.needsCleanup(usageNow), false);
  t.equal(asked, 1, 'no write since: not asked again');

  await local.create(smallEvent());
  t.equal(await monitor.needsCleanup(usageNow), false);
  t.equal(asked, 2, 'a create since: asked');
  t.equal(await monitor.needsCleanup(usageNow), false);
  t.equal(asked, 2, 'idle again: not asked');

  closeGate(flag);
  t.equal(await monitor.needsCleanup(usageNow), false);
  t.equal(asked, 3, 'a closed gate is looked at without a write');
  t.equal(isCapacityBlocked(flag), false, 'and reopened: without cloud upload everything is deletable');
  t.equal(await monitor.needsCleanup(usageNow), false);
  t.equal(asked, 3, 'open and idle: not asked');

  for (let i = 0; i < 3; i++) await local.create(smallEvent());
  t.equal(await monitor.needsCleanup(usageNow), true, '4 records over MAX_RECORDS 3: a cleanup is due');
  t.equal(asked, 4);
  t.equal(await monitor.needsCleanup(usageNow), true, 'still over with no write since: still due');
  t.equal(asked, 5, 'over a limit: asked every time');

  monitor.update(false, await usageNow());
  t.equal(await monitor.needsCleanup(usageNow), true, 'a cleanup that deleted nothing leaves it due');
  t.equal(asked, 7, 'after a cleanup: asked');
});

t.test('the worker keeps the gate closed by the HTTP thread\'s usage, not by its own view, which lags by the head', async (t) => {
  // The worker's view reads only what was checkpointed: here, nothing yet.
  const laggingView = { shipping: true, counters: () => EMPTY_COUNTERS, storageBytes: () => 0 } as unknown as StoreView;
  const flag = new Int32Array(new SharedArrayBuffer(4));
  const monitor = new CapacityMonitor(laggingView, { maxRecords: 3, maxStorageBytes: 1 << 30 }, flag, new Int32Array(new SharedArrayBuffer(4)), createLogger('silent'));
  const full: StoreUsage = { records: 3, storageBytes: 4096, kept: 3 };
  closeGate(flag);
  t.equal(await monitor.needsCleanup(async () => full), false, 'within its limits: no cleanup');
  t.equal(isCapacityBlocked(flag), true, 'but 3 records waiting for upload leave no room: the gate stays closed');
  monitor.update(false, full);
  t.equal(isCapacityBlocked(flag), true, 'and stays closed after a cleanup');
  monitor.update(true, { records: 2, storageBytes: 4096, kept: 2 });
  t.equal(isCapacityBlocked(flag), false, 'an upload made room: reopened');
});
