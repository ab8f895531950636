/**
 * The reads of the list, search and count routes in slices (docs/API.md, "Requests share the
 * store"): each slice runs for at most SCAN_SLICE_MS over a plan made anew from where the last
 * stopped, with a turn of the event loop between, so no read holds the HTTP thread for long
 * whatever it reads; a large record a filter must check is checked off the thread meanwhile
 * (`ScanPlan.checkAway`, record-checker.ts). A page is the one a single pass (event-query.ts
 * `scanPlan`) would answer over the same records.
 */
import { performance } from 'node:perf_hooks';
import type { Direction } from '../index/created-at-cursors.js';
import {
  countSlice, type EventCounts, type EventQuery, listPlan, newScanProgress, type PageSink, type ScanBudget, type ScanPlan, scanPlan, startCounts,
} from './event-query.js';
import type { StoreView } from './store-view.js';

/**
 * Most a scan runs in one turn of the event loop before it lets other requests run (ms): a page
 * of a filter no index covers, or a count over many entries, would otherwise hold the HTTP thread
 * for all of it.
 */
export const SCAN_SLICE_MS = 4;

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * `scanPlan` in slices of at most `sliceMs` (one record at least), each over a plan made anew
 * from where the last stopped, with a turn of the event loop between; a record the plan checks
 * off the thread (`checkAway`) is checked there meanwhile. The page and its `next` are those of
 * one `scanPlan` over the same records; a record updated while its check is away is judged as it
 * was when it was read.
 * @param plan the plan of the walk bounded at `bound` (µs, inclusive: the next record to read, in
 *   the walk's direction), or unbounded for the first slice
 * @param sliceMs most a slice runs (ms); 0: one record per slice
 * @returns as `scanPlan`
 * @throws as `scanPlan`, and what `checkAway` throws
 */
export async function scanInTurns(
  store: StoreView, plan: (bound: number | undefined) => ScanPlan, direction: Direction, limit: number, budget: ScanBudget, sink: PageSink,
  sliceMs = SCAN_SLICE_MS,
): Promise<number | null> {
  const progress = newScanProgress();
  let bound: number | undefined;
  for (;;) {
    const current = plan(bound);
    const next = scanPlan(store, current, direction, limit, budget, sink, progress, performance.now() + sliceMs);
    if (progress.away) {
      const { ts, record } = progress.away;
      progress.away = undefined;
      progress.decided = { ts, matches: await current.checkAway!(record) };
    } else if (!progress.paused || next === null) {
      return next;
    } else {
      await nextTurn();
    }
    progress.paused = false;
    bound = next ?? undefined;
  }
}

/**
 * `scanEvents` (event-query.ts) in slices (`scanInTurns`): one page of a list route.
 * @param checkAway checks a large record's bytes against `query` off the thread (record-checker.ts)
 * @returns as `scanPlan`
 * @throws as `scanPlan`
 */
export function scanEventsInTurns(
  store: StoreView, query: EventQuery, budget: ScanBudget, sink: PageSink, checkAway?: (record: Uint8Array) => Promise<boolean>,
): Promise<number | null> {
  return scanInTurns(store, (bound) => ({ ...listPlan(store, query, bound), checkAway }), query.direction, query.limit, budget, sink);
}

/**
 * `countEvents` (event-query.ts) in slices of at most SCAN_SLICE_MS (one record at least), each
 * over a plan made anew from where the last stopped, with a turn of the event loop between: the
 * count of a route.
 */
export async function countEventsInTurns(store: StoreView, query: EventQuery): Promise<EventCounts> {
  const counts = startCounts(store, query);
  if (counts.filtered > 0) return counts;
  let from = query.startTime;
  for (;;) {
    const next = countSlice(store, { ...query, startTime: from }, counts, performance.now() + SCAN_SLICE_MS);
    if (next === undefined) return counts;
    from = next;
    await nextTurn();
  }
}
