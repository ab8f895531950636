/**
 * One subscriber of the live event stream (docs/API.md, "Live stream"): first every stored
 * event matching its filter after its resume point, read from the store in created_at order,
 * then live changes, with none missed or repeated at the switch; a subscriber that falls too far
 * behind is closed with a last message naming where to resume.
 *
 * No gap and no repeat: while catching up, live changes are kept (up to a bound) instead of
 * sent; the switch to live happens right after a store read that found nothing more, in the
 * same turn, and the kept changes are sent then, a `created` only when it is newer than the last
 * event sent. created_at values are unique and announced in increasing order, so "newer than
 * the last sent" is exact. Should the kept changes pass their bound, they are dropped and the
 * store read again instead (it holds every created event; only finalize/attach/delete messages
 * of that stretch are then not sent, and those events come from the store in their current state).
 */
import { type EventQuery, formatMicros, scanEvents, type StoreView } from '../store/index.js';
import { StreamMessage } from './stream-message.js';

/** Where messages go: an SSE response or a WebSocket (src/http/event-stream-routes.ts). */
export interface StreamTransport {
  /** Sends one message; false when the client is behind (the message was still taken). */
  send(message: StreamMessage): boolean;
  /** Resolves when the client took what was sent, or went away. */
  drained(): Promise<void>;
  /** Ends the stream, after `last` when given. */
  end(last?: StreamMessage): void;
  /** True once the client went away or the stream ended. */
  readonly closed: boolean;
}

/** Bounds of one subscriber (bytes, events). */
export interface SubscriptionLimits {
  /** Bytes of messages waiting while the client is behind; past it the stream is closed. */
  maxQueuedBytes: number;
  /** Events read from the store per catch-up step. */
  catchUpPage: number;
  /** Records one catch-up step may read, matching or not (a filter no index covers). */
  catchUpScanRecords: number;
  /**
   * Subscribers catching up from the store at once; the others wait their turn. With
   * `maxQueuedBytes`, what every catch-up holds together is bounded: a step reads at most
   * `maxQueuedBytes` of events (and always one), and waits for the client before the next.
   */
  maxConcurrentCatchUps: number;
}

/** A change offered to subscribers: its message and, for filters, its event's record. */
export interface OfferedChange {
  message: StreamMessage;
  /** For filters; undefined: the change concerns events the subscriber cannot judge (sent to all). */
  matches: ((query: EventQuery) => boolean) | undefined;
}

export class Subscription {
  /** created_at (µs) of the newest `created` accepted for sending: older ones are repeats. */
  private lastAccepted: number;
  /** created_at (µs) of the last `created` handed to the transport, or the resume point. */
  private lastSent: number;
  private live = false;
  private ended = false;
  /** Changes announced while catching up (undefined: dropped, past the bound). */
  private kept: OfferedChange[] | undefined = [];
  private keptBytes = 0;
  /** Messages waiting while the client is behind. */
  private queue: StreamMessage[] = [];
  private queuedBytes = 0;
  private flushing = false;

  /**
   * @param since resume point: created_at (µs) of the last event the client has; undefined: from now
   * @param onEnd called once when the subscription ends (client gone, overflow, store stop)
   */
  constructor(
    private readonly store: StoreView,
    readonly filter: EventQuery,
    since: number | undefined,
    private readonly transport: StreamTransport,
    private readonly limits: SubscriptionLimits,
    private readonly onEnd: (subscription: Subscription, overflowed: boolean) => void,
  ) {
    this.lastSent = since ?? Number.NEGATIVE_INFINITY;
    this.lastAccepted = this.lastSent;
    if (since === undefined) this.live = true;
  }

  /** Starts the catch-up from the store (nothing to do when there is no resume point). */
  async start(): Promise<void> {
    if (this.live) return;
    let from = this.lastSent + 1;
    while (!this.ended) {
      if (this.kept === undefined) this.kept = [];
      const page: { json: Buffer; createdAt: number }[] = [];
      const next = scanEvents(
        this.store,
        { ...this.filter, startTime: from, endTime: undefined, direction: 'asc', limit: this.limits.catchUpPage },
        // A step holds at most maxQueuedBytes of events (one at least), whatever their size.
        { records: this.limits.catchUpScanRecords, bytes: this.limits.maxQueuedBytes },
        { add: (json, createdAt) => (page.push({ json: Buffer.from(json), createdAt }), true) },
      );
      if (page.length === 0 && next === null) {
        this.goLive();
        return;
      }
      for (const { json, createdAt } of page) {
        if (this.ended) return;
        this.lastAccepted = createdAt;
        if (!this.send(new StreamMessage('created', json, createdAt))) await this.transport.drained();
      }
      from = next ?? this.lastAccepted + 1;
      // Let ingest and other requests run between pages: a long catch-up never holds the thread.
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  /** Offers a live change; sent when it matches (and, for a `created`, is newer than the last sent). */
  offer(change: OfferedChange): void {
    if (this.ended) return;
    if (change.matches && !change.matches(this.filter)) return;
    if (!this.live) {
      this.keep(change);
      return;
    }
    this.deliver(change);
  }

  /** Ends the stream with a last `closed` message (store stopping, or the client too slow). */
  close(reason: 'shutdown' | 'slow_consumer'): void {
    if (this.ended) return;
    this.finish(reason === 'slow_consumer');
    this.transport.end(StreamMessage.of('closed', { reason, since: this.resumePoint() }));
  }

  /** The client went away. */
  cancel(): void {
    if (!this.ended) this.finish(false);
  }

  /** The resume point to give a client: ISO created_at of the last event sent, or null. */
  resumePoint(): string | null {
    return Number.isFinite(this.lastSent) ? formatMicros(this.lastSent) : null;
  }

  /** Hands a message to the transport; false when the client is behind. */
  private send(message: StreamMessage): boolean {
    if (message.createdAt !== undefined) this.lastSent = message.createdAt;
    return this.transport.send(message);
  }

  private keep(change: OfferedChange): void {
    if (this.kept === undefined) return;
    this.kept.push(change);
    this.keptBytes += change.message.data.length;
    if (this.keptBytes > this.limits.maxQueuedBytes) {
      this.kept = undefined; // read the store again instead
      this.keptBytes = 0;
    }
  }

  private goLive(): void {
    this.live = true;
    const kept = this.kept ?? [];
    this.kept = undefined;
    this.keptBytes = 0;
    for (const change of kept) this.deliver(change);
  }

  private deliver(change: OfferedChange): void {
    const { message } = change;
    if (message.createdAt !== undefined) {
      if (message.createdAt <= this.lastAccepted) return;
      this.lastAccepted = message.createdAt;
    }
    if (this.queue.length > 0 || this.flushing) {
      this.enqueue(message);
      return;
    }
    if (!this.send(message)) void this.flush();
  }

  private enqueue(message: StreamMessage): void {
    this.queue.push(message);
    this.queuedBytes += message.data.length;
    if (this.queuedBytes > this.limits.maxQueuedBytes) this.close('slow_consumer');
  }

  /** Waits for the client, then sends what queued meanwhile, while it keeps up. */
  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (!this.ended) {
        await this.transport.drained();
        if (this.ended || this.transport.closed) return;
        let behind = false;
        while (this.queue.length > 0 && !behind) {
          const message = this.queue.shift()!;
          this.queuedBytes -= message.data.length;
          behind = !this.send(message);
        }
        if (!behind) return;
      }
    } finally {
      this.flushing = false;
    }
  }

  private finish(overflowed: boolean): void {
    this.ended = true;
    this.queue = [];
    this.kept = undefined;
    this.onEnd(this, overflowed);
  }
}
