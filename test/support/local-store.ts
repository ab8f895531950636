/**
 * The store opened in the test's own process, without HTTP or the lifecycle worker: for tests
 * that hand the lifecycle code the time it would read from the clock (`runCleanup`'s `now` and
 * `running`, `sweepDrafts`'s cutoff) instead of sleeping until it comes. Events are created through the
 * same `createEvent` the HTTP route calls, into a real LMDB and segment log in a temp dir, and
 * each is checkpointed into LMDB before `create` resolves: the lifecycle code these tests drive
 * runs in the worker, which sees only what checkpoints committed (docs/STORAGE.md, "The index
 * head"). How reads merge the head is test/head-model.test.ts's subject.
 */
import { configuredSinks, loadConfig, type Config } from '../../src/config.js';
import { createEvent, type CreateResponse } from '../../src/events/create-event.js';
import { presentEventJson } from '../../src/events/present.js';
import type { CleanupHooks } from '../../src/lifecycle/cleanup.js';
import { usageOf } from '../../src/lifecycle/capacity.js';
import { EventStore } from '../../src/store/engine/event-store.js';
import { LifecycleStore } from '../../src/store/engine/lifecycle-store.js';
import { runningMicros } from '../../src/store/engine/store-clock.js';
import { createdAtClock } from '../../src/store/record/timestamps.js';
import { tempDataDir } from './store-server.js';
import { storeHandles } from '../../src/store/read/store-view.js';

export interface LocalStore {
  store: EventStore;
  /**
   * The lifecycle worker's handle on the same store (LifecycleStore), what `runCleanup` and the
   * sinks' ledger marks are given; its changes are announced on `store.changes`, as the worker's
   * reach the HTTP thread.
   */
  lifecycle: LifecycleStore;
  config: Config;
  dataDir: string;
  /** Creates an event from a request body, as `POST /v2/events` does, and checkpoints it; resolves with its 201 body. */
  create(body: unknown): Promise<CreateResponse>;
  /** created_at (µs) of a stored event. */
  createdAt(id: string): number;
  /** What the HTTP thread does when the lifecycle worker asks it (src/lifecycle/worker-handle.ts). */
  hooks: CleanupHooks;
  /**
   * `runCleanup`'s `now` and `running` for a cleanup at `nowMs` (ms since the epoch) of a store
   * that ran all along until then, and a millisecond more: retention reckons by the wall clock and
   * by the store's running time (docs/STORAGE.md, "A clock that jumps"), and the margin leaves a
   * whole-millisecond `now`'s boundary to the wall clock.
   */
  ranUntil(nowMs: number): { now: number; running: number };
  close(): Promise<void>;
}

/**
 * Opens a store on a fresh data directory.
 * @param env settings as environment strings on top of the defaults, e.g. `{ RETENTION_DAYS: '1' }`
 * @param sinks the sinks it keeps the shipping ledger for (default: those `env` configures)
 */
export async function openLocalStore(env: Record<string, string> = {}, sinks?: string[]): Promise<LocalStore> {
  const dataDir = env.DATA_DIR ?? tempDataDir();
  const config = loadConfig({ LOG_LEVEL: 'silent', DATA_DIR: dataDir, ...env });
  const store = await EventStore.open(dataDir, { sinks: sinks ?? configuredSinks(config), present: presentEventJson }); // as startService does: records keep their JSON
  const lifecycle = LifecycleStore.open(dataDir, { sinks: sinks ?? configuredSinks(config), present: presentEventJson }, (change) => store.changes.announce(change));
  return {
    store,
    lifecycle,
    config,
    dataDir,
    async create(body) {
      const created = await createEvent(store, config, body);
      await store.checkpointed();
      return created;
    },
    createdAt(id) {
      const record = store.getEvent(id);
      if (!record) throw new Error(`event ${id} not stored`);
      return record.created_at;
    },
    ranUntil: (nowMs) => ({ now: nowMs, running: runningMicros(store) + nowMs * 1000 - createdAtClock.now() + 1000 }),
    hooks: {
      onReclaimed: (segments) => {
        for (const segment of segments) void store[storeHandles].blobs.forget(segment);
      },
      onUnknownSegments: (segments) => {
        throw new Error(`the consistency pass kept segment files the index does not know: ${segments.join(', ')}`);
      },
      onMendedFileEntries: () => undefined, // the tests read the entries themselves
      retireSegment: (segment) => store.retireSegment(segment),
      compactSegment: (segment) => store.compactSegment(segment),
      logTombstones: (events) => store.logTombstones(events),
      checkpoint: () => store.checkpointed(),
      usage: async () => usageOf(store),
    },
    close: async () => {
      await lifecycle.close();
      await store.close();
    },
  };
}

/**
 * Waits, spinning, until the store's clock (the one created_at is taken from, timestamps.ts)
 * reaches `micros`: at most the millisecond a test needs so that the next create falls after
 * a whole-millisecond `now` it passes. Not a sleep: nothing is timed, and it returns at once
 * when the clock is already there.
 */
export function clockPast(micros: number): void {
  const clock = () => (performance.timeOrigin + performance.now()) * 1000;
  if (micros - clock() > 2000) throw new Error(`clockPast(${micros}): more than 2 ms ahead; pass the time instead`);
  while (clock() < micros) {
    // spin: the wait is below a millisecond
  }
}
