/**
 * The live stream of part of the store (docs/API.md, "Live stream") over an EventSource, with
 * the list's filters and a resume point.
 *
 * Reconnecting is done here, not left to the EventSource: its own reconnect repeats the URL, and
 * the URL's `since` wins over the `Last-Event-ID` it adds, so the catch-up would start again from
 * the first resume point. So on an error, or on `closed` (the store ended the stream:
 * `shutdown`, `slow_consumer`), the EventSource is closed and a new one opened with `since` =
 * the latest resume point: the id of the last `created` message, or the `since` that `closed`
 * names. Nothing is missed or repeated across the reconnect.
 */
import { streamUrl } from './store-api.js';
import type { StoredEvent } from './shapes.js';

/** What the stream tells the page. */
export interface StreamListener {
  created(event: StoredEvent): void;
  /** `finalized` or `files_attached`: the event as it is after the change. */
  updated(event: StoredEvent): void;
  /** `deleted`: the event's id, or null when a reset deleted every event. */
  deleted(id: string | null): void;
  /** The stream is live (true), or down and about to reconnect (false). */
  connected(live: boolean): void;
  /** The connection failed (a network error, 401, 529...): the page may ask the store why. */
  interrupted(): void;
}

/** Pause before reconnecting after an error (ms). */
const RETRY_MS = 3000;
/** Pause before reconnecting after the store closed the stream with a resume point (ms). */
const RESUME_MS = 200;

export class LiveStream {
  private source: EventSource | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;

  /**
   * Opens the stream.
   * @param filters the list's filters (`device_id`, `event_schema`...)
   * @param since resume point: the created_at after which events are wanted
   */
  constructor(private readonly filters: URLSearchParams, private since: string, private readonly listener: StreamListener) {
    this.open();
  }

  /** Closes the stream for good. */
  close(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.source?.close();
  }

  private open(): void {
    const params = new URLSearchParams(this.filters);
    params.set('since', this.since);
    const source = new EventSource(streamUrl(params));
    this.source = source;
    source.addEventListener('open', () => this.listener.connected(true));
    source.addEventListener('created', (message) => {
      this.since = message.lastEventId || this.since;
      this.listener.created(JSON.parse(message.data) as StoredEvent);
    });
    for (const type of ['finalized', 'files_attached']) {
      source.addEventListener(type, (message) => this.listener.updated(JSON.parse(message.data) as StoredEvent));
    }
    source.addEventListener('deleted', (message) => this.listener.deleted((JSON.parse(message.data) as { id: string | null }).id));
    source.addEventListener('closed', (message) => {
      const { since } = JSON.parse(message.data) as { since: string | null };
      if (since) this.since = since;
      this.reconnect(RESUME_MS);
    });
    source.addEventListener('error', () => {
      this.reconnect(RETRY_MS);
      this.listener.interrupted();
    });
  }

  private reconnect(afterMs: number): void {
    this.source?.close();
    clearTimeout(this.timer);
    if (this.stopped) return;
    this.listener.connected(false);
    this.timer = setTimeout(() => this.open(), afterMs);
  }
}
