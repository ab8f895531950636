/**
 * The store's change feed (docs/ARCHITECTURE.md, "The live stream"): each change to the events
 * once it is durable and visible, in the order it became visible, on the HTTP thread. Creates
 * are announced as they enter the head (before their 201s; docs/STORAGE.md, "The index
 * head"), finalizes and
 * attachments once flushed; changes the lifecycle worker makes (auto-finalize, cleanup
 * deletions) reach the HTTP thread by message and are announced there.
 *
 * Listeners run synchronously and must be cheap: they run on the ingest path. A listener that
 * throws is reported and the others still run.
 */
import type { EventRecord } from './event-record.js';

/** Why events were deleted (docs/API.md, "Live stream"). */
export type DeletionReason = 'retention' | 'max_records' | 'storage' | 'reset';

/** A change to one event; `createdAt` (µs) is the event's key. */
export type EventChange =
  | {
    kind: 'created' | 'finalized' | 'files_attached';
    id: string;
    createdAt: number;
    /** The record after the change, when the announcer has it decoded (else read on demand). */
    record?: EventRecord;
    /** Its stored JSON (`GET /v2/events/{id}`'s bytes), when the announcer has it. */
    json?: Uint8Array;
  }
  | {
    kind: 'deleted';
    id: string;
    createdAt: number;
    reason: Exclude<DeletionReason, 'reset'>;
    /** The record as it was, for filters; absent when the deleter did not decode it. */
    record?: EventRecord;
  };

/** A change to the store: one event's, or every event deleted at once by a reset. */
export type StoreChange = EventChange | { kind: 'reset' };

export type ChangeListener = (change: StoreChange) => void;

export class StoreChanges {
  private readonly listeners = new Set<ChangeListener>();

  /** @param onListenerError reports a listener that threw (the feed goes on) */
  constructor(private readonly onListenerError: (err: unknown) => void = () => undefined) {}

  /** Adds a listener; returns the function that removes it. */
  listen(listener: ChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** True when someone listens: announcers skip the work of building changes otherwise. */
  get listened(): boolean {
    return this.listeners.size > 0;
  }

  /** Announces `change` to every listener, in the order they were added. */
  announce(change: StoreChange): void {
    for (const listener of this.listeners) {
      try {
        listener(change);
      } catch (err) {
        this.onListenerError(err);
      }
    }
  }
}
