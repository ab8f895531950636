/**
 * The shipping ledger and its runner (docs/OPERATIONS.md, "Sinks"), on a real LMDB: one ledger in
 * finalize order, a cursor per sink, entries leaving once every configured sink passed them,
 * cleanup keeping what any sink has not shipped, dead letters per sink, a store written before
 * the ledger brought to it, a sink added later, and the runner's progress and stall reports.
 */
import t from 'tap';
import type { Outgoing, Sink } from '../src/sinks/ledger-sink.js';
import { shipNextBatch, runSink, type SinkProgress } from '../src/lifecycle/sink-runner.js';
import { createLogger } from '../src/logger.js';
import { deadLetterKey, pendingKey } from '../src/store/index/index-keys.js';
import { readCounters } from '../src/store/index/lmdb-env.js';
import { isProtected, markShipped, sinkBacklog, unshipped } from '../src/store/ledger/sink-ledger.js';
import { finalizeEvent } from '../src/store/engine/event-updates.js';
import { smallEvent } from './support/events.js';
import { openLocalStore, type LocalStore } from './support/local-store.js';
import { until } from './support/waiting.js';
import { storeHandles } from '../src/store/read/store-view.js';

const SINKS = ['cloud', 'nats'];

async function createAll(local: LocalStore, count: number, overrides: Record<string, unknown> = {}): Promise<number[]> {
  const createdAts: number[] = [];
  for (let i = 0; i < count; i++) createdAts.push(local.createdAt((await local.create(smallEvent(overrides))).id));
  return createdAts;
}

/** A destination for the runner's tests: acknowledges what it is handed, when the test lets it. */
class HeldSink implements Sink {
  readonly name = 'cloud';
  readonly batchSize = 2;
  readonly received: number[] = [];
  failNext: Error | undefined;
  private release: (() => void) | undefined;
  held = false;

  async ship(events: Outgoing[]): Promise<number[]> {
    if (this.failNext) {
      const err = this.failNext;
      this.failNext = undefined;
      throw err;
    }
    if (this.held) await new Promise<void>((resolve) => { this.release = resolve; });
    this.received.push(...events.map((e) => e.createdAt));
    return [];
  }

  letGo(): void {
    this.held = false;
    this.release?.();
  }
}

t.test('two sinks: one ledger in finalize order; an entry leaves once both passed it; cleanup keeps what either has not shipped', async (t) => {
  const local = await openLocalStore({}, SINKS);
  t.teardown(local.close);
  const { store } = local;
  const [a, b, c] = await createAll(local, 3);
  const draftId = (await local.create(smallEvent({ draft: true }))).id;
  const draft = local.createdAt(draftId);
  t.same(unshipped(store, 'cloud', 10).map((e) => e.createdAt), [a, b, c], 'drafts wait');
  t.ok(isProtected(store, draft), 'a draft is kept');

  await finalizeEvent(store, draftId);
  t.same(unshipped(store, 'cloud', 10).map((e) => e.createdAt), [a, b, c], 'the finalize is in the head: the ledger gains it with its checkpoint');
  t.same(sinkBacklog(store, 'nats'), { events: 4, oldestCreatedAt: a }, 'the backlog counts it meanwhile');
  await store.checkpointed();
  t.same(unshipped(store, 'cloud', 10), [1, 2, 3, 4].map((seq, i) => ({ seq, createdAt: [a, b, c, draft][i] })), 'the finalized draft comes last: finalize order');
  t.same(sinkBacklog(store, 'nats'), { events: 4, oldestCreatedAt: a });
  t.equal(readCounters(store[storeHandles].dbs).uploadsPending, 4);

  await markShipped(store, 'cloud', 2, [], SINKS);
  t.same(unshipped(store, 'cloud', 10).map((e) => e.createdAt), [c, draft]);
  t.ok(isProtected(store, a), 'nats has not shipped a: kept');
  t.equal(readCounters(store[storeHandles].dbs).uploadsPending, 4);

  await markShipped(store, 'nats', 3, [c], SINKS);
  t.same(unshipped(store, 'nats', 10).map((e) => e.createdAt), [draft]);
  t.notOk(isProtected(store, a), 'both shipped a: cleanup may delete it');
  t.notOk(isProtected(store, b));
  t.ok(isProtected(store, c), 'nats refused c for good, but cloud has not shipped it');
  t.ok(store[storeHandles].dbs.index.doesExist(deadLetterKey(c, 'nats')));
  t.equal(readCounters(store[storeHandles].dbs).uploadsPending, 2);
  t.notOk(store[storeHandles].dbs.index.doesExist(pendingKey(a)));

  await markShipped(store, 'cloud', 4, [], SINKS);
  await markShipped(store, 'nats', 4, [], SINKS);
  t.same([...store[storeHandles].dbs.index.getKeys({ start: ['Q', 0], end: ['Q', Infinity] })], [], 'the ledger is empty');
  t.equal(readCounters(store[storeHandles].dbs).uploadsPending, 0);
  t.notOk(isProtected(store, c));
});

t.test('a store written before the ledger: its cloud upload queue becomes the ledger, its dead letters the cloud\'s', async (t) => {
  const first = await openLocalStore({}, ['cloud']);
  const [a, b, c] = await createAll(first, 3);
  const { dbs } = first.store[storeHandles];
  // The layout before the ledger: ['U', created_at] queue entries, ['X', created_at] dead letters.
  await dbs.root.transaction(() => {
    for (const key of dbs.index.getKeys({ start: ['Q', 0], end: ['Q', Infinity] })) dbs.index.removeSync(key);
    dbs.index.removeSync(pendingKey(b));
    dbs.index.putSync(['X', b], Buffer.alloc(0));
    for (const key of ['ledgerLayout', 'ledger:cloud']) dbs.meta.removeSync(key);
    const { ledgerSeq: _dropped, ...counters } = readCounters(dbs);
    dbs.meta.putSync('counters', { ...counters, uploadsPending: 2 });
  });
  await first.close();

  const second = await openLocalStore({ DATA_DIR: first.dataDir }, ['cloud']);
  t.teardown(second.close);
  t.same(unshipped(second.store, 'cloud', 10), [{ seq: 1, createdAt: a }, { seq: 2, createdAt: c }], 'the queue, oldest first, all to ship');
  t.ok(second.store[storeHandles].dbs.index.doesExist(deadLetterKey(b, 'cloud')));
  t.notOk(second.store[storeHandles].dbs.index.doesExist(['X', b]));
  const [d] = await createAll(second, 1);
  t.same(unshipped(second.store, 'cloud', 10).map((e) => e.seq), [1, 2, 3], 'new entries follow');
  t.equal(unshipped(second.store, 'cloud', 10)[2]!.createdAt, d);
});

t.test('a sink configured later ships what is finalized from then on', async (t) => {
  const first = await openLocalStore({}, ['cloud']);
  const [old] = await createAll(first, 1);
  await first.close();
  const second = await openLocalStore({ DATA_DIR: first.dataDir }, SINKS);
  t.teardown(second.close);
  t.same(sinkBacklog(second.store, 'nats'), { events: 0, oldestCreatedAt: null });
  const [fresh] = await createAll(second, 1);
  t.same(unshipped(second.store, 'nats', 10).map((e) => e.createdAt), [fresh]);
  t.same(unshipped(second.store, 'cloud', 10).map((e) => e.createdAt), [old, fresh]);
});

t.test('shipNextBatch: events deleted since are passed over; the cursor moves only after the sink acknowledged', async (t) => {
  const local = await openLocalStore({}, ['cloud']);
  t.teardown(local.close);
  await createAll(local, 3);
  const sink = new HeldSink();
  sink.failNext = new Error('destination down');
  await t.rejects(shipNextBatch(local.lifecycle, sink, ['cloud'], new AbortController().signal), { message: 'destination down' });
  t.equal(sinkBacklog(local.store, 'cloud').events, 3, 'a failed batch moves nothing');
  t.same(await shipNextBatch(local.lifecycle, sink, ['cloud'], new AbortController().signal), { shipped: 2, deadLettered: 0 });
  t.same(await shipNextBatch(local.lifecycle, sink, ['cloud'], new AbortController().signal), { shipped: 1, deadLettered: 0 });
  t.equal(await shipNextBatch(local.lifecycle, sink, ['cloud'], new AbortController().signal), undefined);
});

t.test('runSink: ships as events come, reports a stall while the destination holds, and its end', async (t) => {
  const local = await openLocalStore({}, ['cloud']);
  t.teardown(local.close);
  const sink = new HeldSink();
  const reports: SinkProgress[] = [];
  const stop = new AbortController();
  const running = runSink(local.lifecycle, sink, {
    log: createLogger('silent'), signal: stop.signal, sinks: ['cloud'], stallMs: 1500, backoff: { baseMs: 5, capMs: 10 },
    onProgress: (progress) => reports.push(progress),
  });
  const first = await createAll(local, 3);
  await until('three shipped', () => sink.received.length === 3);
  t.same(sink.received, first, 'in ledger order');

  sink.held = true;
  await createAll(local, 1);
  await until('a stall', () => reports.some((r) => r.stalled));
  t.equal(reports.at(-1)!.stalled, true);
  sink.letGo();
  await until('moving again', () => sink.received.length === 4 && !reports.at(-1)!.stalled);
  t.equal(reports.at(-1)!.shipped, 4);
  t.type(reports.at(-1)!.lastShippedAt, 'number');

  sink.failNext = new Error('refused');
  await createAll(local, 1);
  await until('the error reported', () => reports.some((r) => r.lastError === 'refused'));
  await until('shipped after the retry', () => sink.received.length === 5);
  // The progress report that clears the error follows the acknowledgement: wait for it.
  await until('the error cleared', () => reports.at(-1)!.lastError === null);
  t.equal(reports.at(-1)!.shipped, 5, 'reported with every event shipped');
  stop.abort();
  await running;
});
