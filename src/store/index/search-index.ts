/**
 * The search index's backfill (docs/STORAGE.md, "The search index"): stores written before the
 * entries of prediction classes, streams and solutions existed (index-keys.ts
 * `searchIndexKeysOf`) gain them at start-up, without stopping the store. Creates index their
 * own entries from the first moment, so the backfill walks only the events that existed when it
 * began, oldest first, in short write transactions that also record how far it got: a stop, a
 * crash or a power cut resumes where the last committed step ended. Until it is done, searches
 * check those conditions on records (event-search.ts `searchIndexReady`).
 *
 * State in `meta.searchIndex`: `{ version }` once current, or
 * `{ version, building: { version, next, until } }` while a newer version is being built over
 * events with created_at in [next, until] (µs).
 */
import { EMPTY, searchIndexKeysOf } from './index-keys.js';
import type { StoreDatabases } from './lmdb-env.js';
import { decodeRecord } from './record-codec.js';

/** The version of the search index entries; a store holding an older one backfills at start-up. */
export const SEARCH_INDEX_VERSION = 1;

const STATE_KEY = 'searchIndex';

/** What `meta.searchIndex` holds. */
interface SearchIndexState {
  /** The version complete over every event (0: none). */
  version: number;
  building?: { version: number; next: number; until: number };
}

/**
 * Most time one backfill step holds the write transaction (ms): the HTTP thread runs it, and
 * creates' index commits wait for it. 4 ms keeps a create under ~10 ms meanwhile for a backfill
 * of ~78,000 events/s; 10 ms gave 94,000/s and 24 ms creates (native-bench/RESULTS.search.md).
 */
const STEP_MS = 4;
/** Most events one step indexes. */
const STEP_EVENTS = 5000;

/** How much one step may do: at most `ms` (ms) or `events`, and always at least one event. */
export interface BackfillBudget {
  ms: number;
  events: number;
}

/** How far a backfill got. */
export interface BackfillProgress {
  /** Events indexed by this run so far. */
  indexed: number;
  /** created_at (µs) of the last event indexed, or null before the first. */
  last: number | null;
  /** created_at (µs) of the newest event it covers. */
  until: number;
}

function readState(dbs: StoreDatabases): SearchIndexState {
  return (dbs.meta.get(STATE_KEY) as SearchIndexState | undefined) ?? { version: 0 };
}

/**
 * Marks the search index current, inside the caller's write transaction: for a store with no
 * events (a new one, or one just cleared), whose every future event indexes itself.
 */
export function markSearchIndexCurrentSync(dbs: StoreDatabases): void {
  dbs.meta.putSync(STATE_KEY, { version: SEARCH_INDEX_VERSION } satisfies SearchIndexState);
}

/**
 * Decides at open whether a backfill is needed, and records where it starts (the newest event
 * now is the last it covers). A store with no events is marked current.
 * @returns true when the index is current, false when `backfillSearchIndex` must run
 * @throws the lmdb error of a failed commit
 */
export async function prepareSearchIndex(dbs: StoreDatabases): Promise<boolean> {
  return dbs.root.transaction(() => {
    const state = readState(dbs);
    if (state.version >= SEARCH_INDEX_VERSION) return true;
    if (state.building?.version === SEARCH_INDEX_VERSION) return false;
    const [newest] = dbs.events.getKeys({ limit: 1, reverse: true });
    if (newest === undefined) {
      markSearchIndexCurrentSync(dbs);
      return true;
    }
    const building = { version: SEARCH_INDEX_VERSION, next: -Infinity, until: newest };
    dbs.meta.putSync(STATE_KEY, { version: state.version, building } satisfies SearchIndexState);
    return false;
  });
}

/**
 * One step: indexes the events from the recorded resume point on, at least one and then until
 * the budget is spent, and records the new resume point (or the version, when done) in the same
 * commit. Events are read inside the write transaction, so one deleted meanwhile is not indexed.
 * @returns the events indexed and whether the backfill is done
 */
async function backfillStep(dbs: StoreDatabases, budget: BackfillBudget): Promise<{ indexed: number; last: number | null; done: boolean; until: number }> {
  return dbs.root.transaction(() => {
    const state = readState(dbs);
    const building = state.building;
    if (!building || building.version !== SEARCH_INDEX_VERSION) return { indexed: 0, last: null, done: true, until: 0 };
    const started = performance.now();
    let indexed = 0;
    let last: number | null = null;
    let done = true;
    for (const { key, value } of dbs.events.getRange({ start: building.next, end: building.until + 1 })) {
      // At least one event a step: a step whose budget ran out before its first event (a busy
      // machine) would otherwise record no resume point, and the next would start over.
      if (indexed > 0 && (indexed >= budget.events || performance.now() - started >= budget.ms)) {
        done = false;
        break;
      }
      for (const entry of searchIndexKeysOf(decodeRecord(value))) dbs.index.putSync(entry, EMPTY);
      last = key;
      indexed++;
    }
    if (done) markSearchIndexCurrentSync(dbs);
    else dbs.meta.putSync(STATE_KEY, { ...state, building: { ...building, next: last! + 1 } } satisfies SearchIndexState);
    return { indexed, last, done, until: building.until };
  });
}

/**
 * Runs the backfill `prepareSearchIndex` asked for to its end, one step per turn of the event
 * loop, until done or `stopped()` says to stop (a later start resumes).
 * @param onProgress told after each step but the last
 * @param budget what one step may do (default STEP_MS, STEP_EVENTS)
 * @returns how far this run got once the index is current, or null when stopped first
 * @throws the lmdb error of a failed step (the steps committed before it stay)
 */
export async function backfillSearchIndex(
  dbs: StoreDatabases,
  stopped: () => boolean,
  onProgress?: (progress: BackfillProgress) => void,
  budget: BackfillBudget = { ms: STEP_MS, events: STEP_EVENTS },
): Promise<BackfillProgress | null> {
  const progress: BackfillProgress = { indexed: 0, last: null, until: 0 };
  for (;;) {
    if (stopped()) return null;
    const step = await backfillStep(dbs, budget);
    progress.indexed += step.indexed;
    progress.last = step.last ?? progress.last;
    progress.until = step.until;
    if (step.done) return progress;
    onProgress?.(progress);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * Moves a backfill's resume point and bound through `restamp` (created_at µs to created_at µs,
 * increasing), for events re-stamped after a clock was set back (restamp.ts; docs/STORAGE.md, "A
 * clock that jumps"); the re-stamp puts the search entries of the events it moves itself. Call
 * inside the write transaction that re-keys them; a no-op when no backfill is under way.
 */
export function restampSearchIndexSync(dbs: StoreDatabases, restamp: (createdAt: number) => number): void {
  const state = readState(dbs);
  const { building } = state;
  if (!building) return;
  const next = building.next === -Infinity ? building.next : restamp(building.next);
  dbs.meta.putSync(STATE_KEY, { ...state, building: { ...building, next, until: restamp(building.until) } } satisfies SearchIndexState);
}
