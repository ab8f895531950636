/**
 * The store's own modules in the bench's process (no HTTP), for the micro-measurements
 * (list-page.js, search-page.js, export-route.js, export.js), and their timing: from the repository's dist/ or, with
 * STORE_DIST=<dir>, another build's `dist/src` (before/after figures of an older commit).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';

const dist = process.env.STORE_DIST ? pathToFileURL(`${path.resolve(process.env.STORE_DIST)}/`) : new URL('../../dist/src/', import.meta.url);

/** Imports a module of the build, e.g. `loadModule('events/read-events.js')`. */
export const loadModule = (module) => import(new URL(module, dist).href);

const { loadConfig } = await loadModule('config.js');
const { EventStore } = await loadModule('store/engine/event-store.js');
const { createEvent } = await loadModule('events/create-event.js');
const present = await loadModule('events/present.js');
const codec = await loadModule('store/index/record-codec.js');
// Builds with stored JSON (record layout 3) need the presenter, as serve.ts gives it: in the
// store's options (`present`), or, in builds before that option, set once per thread.
codec.setRecordPresenter?.(present.presentEventJson);

/** The options a bench store opens with: no sinks, records kept with their JSON. */
export const BENCH_STORE_OPTIONS = { sinks: [], present: present.presentEventJson };

export { EventStore };

/** The machine's load averages (1, 5, 15 min), for the line every figure is printed with. */
export const loadAverage = () => os.loadavg().map((l) => l.toFixed(2)).join(' ');

/**
 * Opens a store on a fresh data directory under the OS temp dir.
 * @param {string} prefix of the directory's name
 * @returns {Promise<{ store: any, config: any, dataDir: string }>} the store (EventStore, no
 *   sinks), its settings (the defaults over that DATA_DIR) and the directory, to remove at the end
 */
export async function openBenchStore(prefix) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `${prefix}-`));
  const config = loadConfig({ DATA_DIR: dataDir });
  return { store: await EventStore.open(dataDir, BENCH_STORE_OPTIONS), config, dataDir };
}

/** Creates between two waits of `fillStore` for a checkpoint: a quarter of the head's bound (event-store.ts `MAX_HEAD_ENTRIES`). */
const FILL_CHECKPOINT_EVERY = 50_000;

/**
 * Creates events 0..count-1 through the create path (`createEvent`, as POST /v2/events does),
 * `concurrent` at a time, waiting for a checkpoint every FILL_CHECKPOINT_EVERY creates: in process,
 * with no HTTP to pace them, creates outrun the checkpoints, and a full head refuses them.
 * @param {(i: number) => unknown} makeEvent the request body of event i
 * @returns {Promise<number>} the seconds it took
 */
export async function fillStore({ store, config }, count, makeEvent, concurrent = 500) {
  const started = performance.now();
  for (let i = 0; i < count; i += concurrent) {
    const batch = Array.from({ length: Math.min(concurrent, count - i) }, (_, j) => makeEvent(i + j));
    await Promise.all(batch.map((body) => createEvent(store, config, body)));
    if (Math.floor((i + concurrent) / FILL_CHECKPOINT_EVERY) > Math.floor(i / FILL_CHECKPOINT_EVERY)) await store.checkpointed();
  }
  return (performance.now() - started) / 1000;
}

/**
 * Times `call`: `warmUp` calls first, then `calls` timed ones.
 * @returns {number[]} each timed call's duration (ms), sorted ascending
 */
export function timeCalls(call, { warmUp, calls }) {
  for (let i = 0; i < warmUp; i++) call();
  const times = [];
  for (let i = 0; i < calls; i++) {
    const t0 = performance.now();
    call();
    times.push(performance.now() - t0);
  }
  return times.sort((a, b) => a - b);
}

/**
 * Times an async `call` as `timeCalls` does: the routes' reads are async (they yield to the event
 * loop every few milliseconds: event-query.ts `scanInTurns`), so a call's time is to its answer.
 * @returns {Promise<number[]>} each timed call's duration (ms), sorted ascending
 */
export async function timeAsyncCalls(call, { warmUp, calls }) {
  for (let i = 0; i < warmUp; i++) await call();
  const times = [];
  for (let i = 0; i < calls; i++) {
    const t0 = performance.now();
    await call();
    times.push(performance.now() - t0);
  }
  return times.sort((a, b) => a - b);
}

/** Creates one event, as POST /v2/events does; resolves with the 201 body. */
export const createOne = ({ store, config }, body) => createEvent(store, config, body);
