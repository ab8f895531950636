/**
 * When the head is checkpointed (docs/STORAGE.md, "When a checkpoint runs"): a head that
 * fills slowly waits up to INDEX_CHECKPOINT_MAX_MS, one holding CHECKPOINT_BATCH_ENTRIES creates
 * and changes waits INDEX_CHECKPOINT_MS, and with a sink configured every head waits
 * INDEX_CHECKPOINT_MS. A real store in a temp dir, told of each checkpoint by its stage timer.
 */
import t, { type Test } from 'tap';
import { loadConfig } from '../src/config.js';
import { createEvent } from '../src/events/create-event.js';
import { presentEventJson } from '../src/events/present.js';
import { EventStore } from '../src/store/engine/event-store.js';
import type { EventStoreOptions } from '../src/store/engine/writer-options.js';
import { CHECKPOINT_BATCH_ENTRIES, checkpointWaitMs, FULL_BATCH_WAIT_MS } from '../src/store/head/checkpoint-pace.js';
import { smallEvent } from './support/events.js';
import { tempDataDir } from './support/store-server.js';
import { until } from './support/waiting.js';

t.test('checkpointWaitMs: the size trigger, then a batch, then a sink, then the longest wait', async (t) => {
  const pace = { intervalMs: 1000, maxMs: 60_000, shipping: false };
  t.equal(checkpointWaitMs({ entries: 1, bytes: 1800 }, pace), 60_000, 'a slowly filling head waits the longest');
  t.equal(checkpointWaitMs({ entries: CHECKPOINT_BATCH_ENTRIES - 1, bytes: 0 }, pace), 60_000, 'one short of a batch still waits the longest');
  t.equal(FULL_BATCH_WAIT_MS, 250);
  t.equal(checkpointWaitMs({ entries: CHECKPOINT_BATCH_ENTRIES, bytes: 0 }, pace), 250, 'a batch waits at most 250 ms');
  t.equal(checkpointWaitMs({ entries: CHECKPOINT_BATCH_ENTRIES, bytes: 0 }, { ...pace, intervalMs: 100 }), 100, 'or the interval when it is shorter');
  t.equal(checkpointWaitMs({ entries: CHECKPOINT_BATCH_ENTRIES, bytes: 0 }, { ...pace, shipping: true }), 250, 'with a sink too');
  t.equal(checkpointWaitMs({ entries: 1, bytes: 0 }, { ...pace, shipping: true }), 1000, 'with a sink every head waits the interval');
  t.equal(checkpointWaitMs({ entries: 1, bytes: 0 }, { ...pace, maxMs: 10 }), 1000, 'the longest wait is never shorter than the interval');
  t.equal(checkpointWaitMs({ entries: 20_000, bytes: 0 }, pace), 0, '20,000 entries: at once');
  t.equal(checkpointWaitMs({ entries: 1, bytes: 16 * 1024 * 1024 }, pace), 0, '16 MiB of records: at once');
});

/** A store on a fresh data dir whose checkpoints are recorded: the creates and changes each committed. */
async function pacedStore(t: Test, options: Partial<EventStoreOptions>) {
  const store = await EventStore.open(tempDataDir(), { sinks: [], present: presentEventJson, ...options });
  t.teardown(() => store.close());
  const checkpoints: number[] = [];
  store.onStageTimed((stage, _batches, entries) => {
    if (stage === 'index') checkpoints.push(entries);
  });
  const config = loadConfig({ LOG_LEVEL: 'silent' });
  return { store, checkpoints, create: () => createEvent(store, config, smallEvent()) };
}

t.test('a slowly filling head waits for a batch of creates, not for the interval', async (t) => {
  const { checkpoints, create } = await pacedStore(t, { checkpointMs: 1, checkpointMaxMs: 600_000 });
  for (let i = 0; i < CHECKPOINT_BATCH_ENTRIES; i++) await create();
  await until('the batch was checkpointed', () => checkpoints.length > 0);
  // Were the interval alone the rule, the first checkpoint would have come a millisecond after the first create.
  t.equal(checkpoints[0], CHECKPOINT_BATCH_ENTRIES, 'the first checkpoint held the whole batch');
});

t.test('a head of a few creates is checkpointed after the longest wait', async (t) => {
  const { checkpoints, create } = await pacedStore(t, { checkpointMs: 1, checkpointMaxMs: 50 });
  for (let i = 0; i < 3; i++) await create();
  await until('the creates were checkpointed', () => checkpoints.reduce((n, c) => n + c, 0) >= 3);
  t.equal(checkpoints.reduce((n, c) => n + c, 0), 3, 'each once');
});

t.test('with a sink configured, a head of one create is checkpointed after the interval', async (t) => {
  // The sinks ship from LMDB (docs/STORAGE.md, "The head"): they see an event once it is checkpointed.
  const { checkpoints, create } = await pacedStore(t, { sinks: ['cloud'], checkpointMs: 1, checkpointMaxMs: 600_000 });
  await create();
  await until('the create was checkpointed', () => checkpoints.length > 0);
  t.same(checkpoints, [1]);
});

t.test('creates that arrive during a batch checkpoint wait for the next batch, not the interval', async (t) => {
  const { checkpoints, create } = await pacedStore(t, { checkpointMs: 1, checkpointMaxMs: 600_000 });
  for (let i = 0; i < CHECKPOINT_BATCH_ENTRIES; i++) await create();
  let created = CHECKPOINT_BATCH_ENTRIES;
  while (checkpoints.length === 0) {
    await create();
    created++;
  }
  t.ok(checkpoints[0]! < created, 'some creates arrived while the first checkpoint ran');
  // The head left behind is small: a timer armed while it still held the batch must not outlive the run.
  while (checkpoints.length < 2) {
    await create();
    created++;
  }
  t.ok(checkpoints[1]! >= CHECKPOINT_BATCH_ENTRIES, `the second checkpoint held a whole batch (${checkpoints[1]} creates)`);
});
