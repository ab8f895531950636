/**
 * Every event a search matches, newest first, for a consumer that reads them all at its own pace
 * (the dataset export; docs/API.md, "Dataset export"). Pages are read as the search route reads
 * them, within its read budget, each in one synchronous pass; the consumer's awaits fall between
 * pages, so no LMDB read stays open while it waits for a slow client.
 */
import { type EventStore, planSearch, scanPlan, type SearchCondition } from '../store/index.js';
import type { StoredEvent } from './types.js';
import type { ListLimits } from './read-events.js';

/** Events handed over per page. */
const PAGE_EVENTS = 64;

/**
 * Yields the events matching `condition`, newest first, as the list answers them, until none is
 * left. An event deleted while the walk is under way is not yielded if its page comes after.
 * @throws Error from the record codec for a record it cannot decode
 */
export async function* matchingEvents(store: EventStore, condition: SearchCondition, limits: ListLimits): AsyncGenerator<StoredEvent> {
  let before: number | undefined;
  for (;;) {
    const page: StoredEvent[] = [];
    const plan = planSearch(store, condition, { before, searchIndexReady: store.searchIndexReady, direction: 'desc' });
    const sink = { add: (json: Uint8Array) => page.push(JSON.parse(Buffer.from(json.buffer, json.byteOffset, json.length).toString('utf8')) as StoredEvent) > 0 };
    const next = scanPlan(store, plan, 'desc', PAGE_EVENTS, { records: limits.maxScanRecords, bytes: limits.maxResponseBytes }, sink);
    yield* page;
    if (next === null) return;
    before = next;
  }
}
