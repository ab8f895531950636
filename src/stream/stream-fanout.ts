/**
 * The live event stream's fan-out to its subscribers (docs/API.md, "Live stream"): listens to the store's
 * change feed (src/store/record/store-changes.ts), turns each change into one message, and offers it to
 * every subscriber, which sends it when it matches its filter. A slow subscriber never slows
 * ingest: its messages queue up to a bound, then it is closed with its resume point
 * (subscription.ts). Heartbeats keep proxies from closing idle streams.
 */
import pLimit, { type LimitFunction } from 'p-limit';
import { type EventQuery, type EventRecord, type EventStore, matchesQuery, oldestAndNewest, type StoreChange } from '../store/index.js';
import { sourceOf, StreamMessage } from './stream-message.js';
import { Subscription, type OfferedChange, type StreamTransport, type SubscriptionLimits } from './subscription.js';

/** Settings of the fan-out; bytes and ms. */
export interface StreamFanoutOptions extends SubscriptionLimits {
  /** Pause between heartbeats of an idle stream (ms). */
  heartbeatMs: number;
}

export const DEFAULT_STREAM_OPTIONS: StreamFanoutOptions = {
  maxQueuedBytes: 4 * 1024 * 1024,
  catchUpPage: 100,
  catchUpScanRecords: 10_000,
  maxConcurrentCatchUps: 4,
  heartbeatMs: 15_000,
};

/** A transport that can also carry a heartbeat (an SSE comment; WebSockets ping by themselves). */
export interface HeartbeatTransport extends StreamTransport {
  heartbeat(): void;
}

/** Distinct filters remembered for sharing; past it the oldest is forgotten (its subscribers keep working). */
const MAX_SHARED_FILTERS = 1000;

/** Fans the store's changes out to the live stream's subscribers; one per server, built at start-up. */
export class StreamFanout {
  private readonly subscriptions = new Map<Subscription, HeartbeatTransport>();
  /** Distinct filters of subscriptions, by their JSON (see `shared`). */
  private readonly filters = new Map<string, EventQuery>();
  private readonly stopListening: () => void;
  private readonly heartbeats: NodeJS.Timeout;
  /** Subscribers closed for falling too far behind, since start. */
  dropped = 0;
  /** Runs catch-ups, at most `maxConcurrentCatchUps` at once (the others wait, in order). */
  private readonly catchUps: LimitFunction;

  constructor(private readonly store: EventStore, private readonly options: StreamFanoutOptions = DEFAULT_STREAM_OPTIONS) {
    this.catchUps = pLimit(options.maxConcurrentCatchUps);
    this.stopListening = store.changes.listen((change) => this.offer(change));
    this.heartbeats = setInterval(() => {
      for (const transport of this.subscriptions.values()) transport.heartbeat();
    }, options.heartbeatMs);
    this.heartbeats.unref();
  }

  /** Subscribers connected now. */
  get subscribers(): number {
    return this.subscriptions.size;
  }

  /**
   * Adds a subscriber and starts its catch-up from the store (docs/API.md, "Live stream").
   * @param filter the list filters (limit, order and time bounds are not used)
   * @param since created_at (µs) of the last event the client has; undefined: live from now. One
   *   past the newest event stored (a client of events re-stamped since, docs/STORAGE.md, "A clock
   *   that jumps") resumes after the newest: nothing newer exists, and every later create comes after it.
   * @returns the subscription; `cancel()` it when the client goes away
   */
  subscribe(filter: EventQuery, since: number | undefined, transport: HeartbeatTransport): Subscription {
    const { newest } = oldestAndNewest(this.store);
    const resume = since !== undefined && since > (newest ?? -Infinity) ? newest ?? undefined : since;
    const subscription = new Subscription(this.store, this.shared(filter), resume, transport, this.options, (ended, overflowed) => {
      this.subscriptions.delete(ended);
      if (overflowed) this.dropped++;
    });
    this.subscriptions.set(subscription, transport);
    this.catchUps(() => subscription.start()).catch(() => subscription.close('shutdown'));
    return subscription;
  }

  /** Ends every stream with a last `closed` message naming its resume point (graceful stop). */
  close(): void {
    this.stopListening();
    clearInterval(this.heartbeats);
    for (const subscription of [...this.subscriptions.keys()]) subscription.close('shutdown');
  }

  /**
   * The one object standing for filters equal to `filter`, so that a change is matched once per
   * distinct filter (`offer`), not once per subscriber: dashboards tend to share their filters.
   */
  private shared(filter: EventQuery): EventQuery {
    const key = JSON.stringify([filter.fields, filter.metadata, filter.includeDrafts]);
    let known = this.filters.get(key);
    if (!known) {
      known = filter;
      this.filters.set(key, known);
      if (this.filters.size > MAX_SHARED_FILTERS) this.filters.delete(this.filters.keys().next().value!);
    }
    return known;
  }

  private offer(change: StoreChange): void {
    if (this.subscriptions.size === 0) return;
    const offered = this.messageOf(change);
    if (!offered) return;
    const { matches } = offered;
    if (matches) {
      const matched = new Map<EventQuery, boolean>();
      offered.matches = (query) => {
        let result = matched.get(query);
        if (result === undefined) matched.set(query, (result = matches(query)));
        return result;
      };
    }
    for (const subscription of this.subscriptions.keys()) subscription.offer(offered);
  }

  private messageOf(change: StoreChange): OfferedChange | undefined {
    if (change.kind === 'reset') {
      return { message: StreamMessage.of('deleted', { id: null, reason: 'reset' }), matches: undefined };
    }
    if (change.kind === 'deleted') {
      const { record } = change;
      return {
        message: StreamMessage.of('deleted', { id: change.id, reason: change.reason }, record && sourceOf(record)),
        matches: record ? (query) => matchesQuery(record, query) : undefined,
      };
    }
    const record: EventRecord | undefined = change.record ?? this.store.getRecord(change.createdAt);
    const json = change.json ?? this.store.getEventJson(change.id);
    if (!record || !json) return undefined; // deleted since
    return {
      message: new StreamMessage(change.kind, json, change.kind === 'created' ? change.createdAt : undefined, sourceOf(record)),
      matches: (query) => matchesQuery(record, query),
    };
  }
}
