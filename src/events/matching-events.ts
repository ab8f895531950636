/**
 * Every event a search matches, newest first, for a consumer that reads them all at its own pace
 * (the dataset export, on its worker: src/export/export-worker.ts; docs/API.md, "Dataset
 * export"). Pages are read as the search route reads them, within its read budget, each in one
 * synchronous pass; the consumer's awaits fall between pages, so no LMDB read stays open while it
 * waits for a slow client. A page keeps its events' stored JSON bytes, at most the read budget's
 * bytes (and one event), and each event is parsed only when it is handed over: one event of
 * hundreds of thousands of detections parsed at a time.
 */
import { planSearch, scanPlan, type SearchCondition, type StoreView } from '../store/index.js';
import type { StoredEvent } from './types.js';
import type { ListLimits } from './read-events.js';

/** Events handed over per page. */
const PAGE_EVENTS = 64;

/**
 * Yields the events matching `condition`, newest first, as the list answers them, until none is
 * left. An event deleted while the walk is under way is not yielded if its page comes after.
 * @param searchIndexReady the store's search index covers every event (EventStore.searchIndexReady)
 * @throws Error from the record codec for a record it cannot decode
 */
export async function* matchingEvents(store: StoreView, condition: SearchCondition, limits: ListLimits, searchIndexReady: boolean): AsyncGenerator<StoredEvent> {
  let before: number | undefined;
  for (;;) {
    const page: Buffer[] = [];
    const plan = planSearch(store, condition, { before, searchIndexReady, direction: 'desc' });
    const sink = { add: (json: Uint8Array) => page.push(Buffer.from(json)) > 0 };
    const next = scanPlan(store, plan, 'desc', PAGE_EVENTS, { records: limits.maxScanRecords, bytes: limits.maxResponseBytes }, sink);
    while (page.length > 0) yield JSON.parse(page.shift()!.toString('utf8')) as StoredEvent;
    if (next === null) return;
    before = next;
  }
}
