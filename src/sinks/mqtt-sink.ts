/**
 * Publishes the store's events to an MQTT broker (docs/OPERATIONS.md, "MQTT"), with the `mqtt`
 * package: each created, finalized and deleted event at QoS 1 to
 * `<MQTT_TOPIC_PREFIX>/<device_id>/<event_schema>`, its payload the live stream's `data`.
 *
 * Publishing follows a cursor over the store, never a queue in memory: while the broker is up,
 * the sink is a subscriber of the live stream from its cursor (a catch-up from the store, then
 * live changes; src/stream/subscription.ts); when the connection drops, the subscription ends and
 * the next connection resumes from the cursor. So a broker outage never fails or slows a create,
 * memory stays bounded, and no created event is skipped. The cursor is kept in the store
 * (src/store/ledger/sink-cursors.ts) and survives restarts. What the cursor cannot replay, a finalize or
 * a deletion of an already published event while the broker was away, is kept by reference (up
 * to MAX_OFFLINE_CHANGES) and published on reconnection.
 */
import os from 'node:os';
import mqtt, { type IConnackPacket, type MqttClient } from 'mqtt';
import { exponentialBackoff } from '../backoff.js';
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import { type EventQuery, type EventStore, formatMicrosOrNull, oldestAndNewest, readSinkCursor, type StoreChange } from '../store/index.js';
import type { StreamFanout } from '../stream/stream-fanout.js';
import { sourceOf, StreamMessage, type StreamMessageType } from '../stream/stream-message.js';
import type { Subscription } from '../stream/subscription.js';
import { MqttTransport } from './mqtt-transport.js';

/** The sink's name in the store's cursors. */
const SINK = 'mqtt';
/** Most messages in flight, whatever Receive Maximum the broker grants. */
const MAX_IN_FLIGHT = 1000;
/** Finalizes and deletions of published events kept while the broker is away (references, ~100 bytes each). */
export const MAX_OFFLINE_CHANGES = 10_000;
/** Pause between writes of the cursor to the store (ms). */
const CURSOR_WRITE_MS = 1000;
/** Pause before a subscription that ended is started again, and between looks at what is in flight (ms). */
const RESUBSCRIBE_PAUSE_MS = 100;
/** Retry after a refused publish: 1 s doubling to 60 s. */
const RETRY = { baseMs: 1000, capMs: 60_000, random: Math.random };

/** Every event, drafts included: the sink publishes them all. */
const ALL_EVENTS: EventQuery = { fields: {}, metadata: [], startTime: undefined, endTime: undefined, includeDrafts: true, direction: 'asc', limit: 1 };

/** `/stats` `mqtt` (docs/API.md, "Statistics"). */
export interface MqttSinkStatus {
  connected: boolean;
  published_total: number;
  /** created_at of the newest event published with every older one; null before the first. */
  resume_point: string | null;
  /** Age of the oldest event not yet published (s); null when none waits. */
  oldest_unpublished_age_seconds: number | null;
  /** Finalizes and deletions not published because more than MAX_OFFLINE_CHANGES happened while the broker was away. */
  changes_skipped: number;
  /** Messages no broker would take, dropped instead of retried (mqtt-transport.ts), since start. */
  dead_lettered_total: number;
  /** The newest of them (at most MAX_DEAD_LETTERS), oldest first. */
  dead_letters: DeadLetter[];
  last_error: string | null;
}

/** A message the sink dropped because no broker would take it; the event stays in the store. */
export interface DeadLetter {
  /** The event's id; null for a reset's message. */
  event_id: string | null;
  type: StreamMessageType;
  reason: string;
  /** When it was dropped (ISO 8601). */
  at: string;
}

/** Dead letters kept for /stats (each also logged). */
const MAX_DEAD_LETTERS = 100;

export class MqttSink {
  private readonly client: MqttClient;
  private current: { subscription: Subscription; transport: MqttTransport } | undefined;
  private cursor: number;
  private writtenCursor: number | undefined;
  private window = MAX_IN_FLIGHT;
  /** The broker's Maximum Packet Size (CONNACK; bytes), undefined when it sets none. */
  private maxPacketBytes: number | undefined;
  private readonly deadLetters: DeadLetter[] = [];
  /** Messages dead-lettered since start. */
  deadLetteredTotal = 0;
  /** Finalizes, deletions and resets while no subscription publishes (records are held by reference). */
  private offline: StoreChange[] = [];
  private failures = 0;
  private retry: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly stopListening: () => void;
  private readonly cursorWrites: NodeJS.Timeout;
  /** Messages the broker acknowledged since start, by type. */
  readonly published: Record<StreamMessageType, number> = { created: 0, finalized: 0, files_attached: 0, deleted: 0, closed: 0 };
  changesSkipped = 0;
  private lastError: string | undefined;

  /**
   * Starts publishing (connecting in the background; a broker that is down is retried every second).
   * @param config `mqttUrl` (set), `mqttTopicPrefix`, `streamSubscriberBufferBytes` (the in-flight byte bound)
   */
  constructor(private readonly config: Config & { mqttUrl: string }, private readonly store: EventStore, private readonly fanout: StreamFanout, private readonly log: Logger) {
    // A store that never published starts from its newest event: what is created from now on.
    const stored = readSinkCursor(store, SINK);
    this.cursor = stored ?? oldestAndNewest(store).newest ?? 0;
    this.writtenCursor = stored;
    this.stopListening = store.changes.listen((change) => this.keepWhileOffline(change));
    this.cursorWrites = setInterval(() => void this.writeCursor(), CURSOR_WRITE_MS);
    this.cursorWrites.unref();
    this.client = mqtt.connect(config.mqttUrl, {
      protocolVersion: 5,
      clientId: `edge-events-${os.hostname()}-${process.pid}`,
      reconnectPeriod: 1000,
      connectTimeout: 10_000,
    });
    this.client.on('connect', (connack) => this.connected(connack));
    this.client.on('close', () => this.disconnected());
    this.client.on('error', (err) => this.note(err, 'MQTT connection failed'));
    // MQTT 5: the broker says why it ends the connection (a malformed packet, a kick); mqtt.js then reconnects.
    this.client.on('disconnect', (packet) => this.note(new Error(`the broker disconnected the store: reason code 0x${(packet.reasonCode ?? 0).toString(16).padStart(2, '0')}${packet.properties?.reasonString ? ` (${packet.properties.reasonString})` : ''}`), 'MQTT broker disconnected'));
  }

  /** The sink's state for `/stats` and `/metrics`. */
  status(): MqttSinkStatus {
    const cursor = this.current?.transport.acknowledgedThrough ?? this.cursor;
    const oldest = this.store.oldestEventFrom(cursor + 1);
    return {
      connected: this.client.connected,
      published_total: this.published.created + this.published.finalized + this.published.deleted,
      resume_point: cursor > 0 ? formatMicrosOrNull(cursor) : null,
      oldest_unpublished_age_seconds: oldest === undefined ? null : Math.max(0, Math.round(Date.now() / 1000 - oldest / 1e6)),
      changes_skipped: this.changesSkipped,
      dead_lettered_total: this.deadLetteredTotal,
      dead_letters: [...this.deadLetters],
      last_error: this.lastError ?? null,
    };
  }

  /** Stops publishing, writes the cursor, and disconnects (what is in flight is re-published next start). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    clearInterval(this.cursorWrites);
    this.stopListening();
    this.unfollow();
    await this.writeCursor();
    await this.client.endAsync(true);
  }

  private connected(connack: IConnackPacket): void {
    this.window = Math.min(connack.properties?.receiveMaximum ?? MAX_IN_FLIGHT, MAX_IN_FLIGHT);
    this.maxPacketBytes = connack.properties?.maximumPacketSize;
    this.lastError = undefined;
    this.log.info({ window: this.window, resumePoint: formatMicrosOrNull(this.cursor) }, 'MQTT connected');
    this.follow();
  }

  private disconnected(): void {
    if (this.current) this.log.warn({ resumePoint: formatMicrosOrNull(this.cursor) }, 'MQTT connection lost; publishing resumes from the cursor');
    this.unfollow();
  }

  /** Publishes what was kept while away, then subscribes to the stream from the cursor. */
  private follow(): void {
    if (this.current || this.stopped || !this.client.connected) return;
    const transport: MqttTransport = new MqttTransport(this.client, this.config.mqttTopicPrefix, { messages: this.window, bytes: this.config.streamSubscriberBufferBytes }, this.cursor, {
      acknowledged: (type) => {
        this.published[type]++;
        this.failures = 0;
        this.cursor = Math.max(this.cursor, transport.acknowledgedThrough);
      },
      deadLettered: (message, reason) => this.deadLetter(message, reason),
      // A detached transport's late answers still move the cursor, never the current subscription.
      failed: (err) => this.current?.transport === transport && this.refused(err),
      ended: () => this.current?.transport === transport && this.resubscribeWhenIdle(transport),
    }, this.maxPacketBytes);
    for (const change of this.offline.splice(0)) {
      const message = this.offlineMessage(change);
      if (message) transport.send(message);
    }
    const subscription = this.fanout.subscribe(ALL_EVENTS, this.cursor, transport);
    this.current = { subscription, transport };
  }

  private unfollow(): void {
    const current = this.current;
    if (!current) return;
    this.current = undefined;
    this.cursor = Math.max(this.cursor, current.transport.acknowledgedThrough);
    current.transport.detach();
    current.subscription.cancel();
  }

  /**
   * The subscription ended (fell behind its bound, or could not read the store): resume from the
   * cursor once the broker acknowledged what is in flight, after a pause, so a subscription that
   * keeps failing never spins.
   */
  private resubscribeWhenIdle(transport: MqttTransport): void {
    const resume = () => {
      if (this.current?.transport !== transport) return;
      if (transport.busy && this.client.connected) {
        setTimeout(resume, RESUBSCRIBE_PAUSE_MS).unref();
        return;
      }
      this.unfollow();
      this.follow();
    };
    setTimeout(resume, RESUBSCRIBE_PAUSE_MS).unref();
  }

  /** Counts, logs and keeps a message dropped because no broker would take it. */
  private deadLetter(message: StreamMessage, reason: string): void {
    this.deadLetteredTotal++;
    this.failures = 0;
    const id = (JSON.parse(Buffer.from(message.data).toString('utf8')) as { id?: string | null }).id ?? null;
    const letter: DeadLetter = { event_id: id, type: message.type, reason, at: new Date().toISOString() };
    this.log.error(letter, 'MQTT message dead-lettered: no broker will take it; the event stays in the store');
    this.deadLetters.push(letter);
    if (this.deadLetters.length > MAX_DEAD_LETTERS) this.deadLetters.shift();
  }

  /** The broker refused a message (e.g. not authorized): retry from the cursor with a growing pause. */
  private refused(err: Error): void {
    this.note(err, 'MQTT publish refused');
    this.unfollow();
    const delay = exponentialBackoff(this.failures++, RETRY);
    this.retry = setTimeout(() => this.follow(), delay);
    this.retry.unref();
  }

  /** Keeps, while no subscription publishes, the finalizes and deletions of events already published. */
  private keepWhileOffline(change: StoreChange): void {
    if ((this.current && !this.current.transport.closed) || this.stopped) return;
    if (change.kind === 'created' || change.kind === 'files_attached') return; // the catch-up brings the event as it is then
    // An event not published yet comes from the catch-up too (or not at all once deleted).
    if (change.kind !== 'reset' && change.createdAt > this.cursor) return;
    if (this.offline.length >= MAX_OFFLINE_CHANGES) {
      if (this.changesSkipped++ === 0) this.log.warn({ kept: MAX_OFFLINE_CHANGES }, 'MQTT broker away too long: further finalizes and deletions are not published');
      return;
    }
    // A finalize is kept without its JSON: read again when published.
    this.offline.push(change.kind === 'finalized' ? { kind: 'finalized', id: change.id, createdAt: change.createdAt, record: change.record } : change);
  }

  /** The message of a change kept while away, as it is now (undefined: a finalized event deleted since). */
  private offlineMessage(change: StoreChange): StreamMessage | undefined {
    if (change.kind === 'reset') return StreamMessage.of('deleted', { id: null, reason: 'reset' });
    if (change.kind === 'deleted') return StreamMessage.of('deleted', { id: change.id, reason: change.reason }, change.record && sourceOf(change.record));
    const json = this.store.getEventJson(change.id);
    return json && new StreamMessage('finalized', json, undefined, change.record && sourceOf(change.record));
  }

  private async writeCursor(): Promise<void> {
    const cursor = this.current?.transport.acknowledgedThrough ?? this.cursor;
    if (cursor === this.writtenCursor) return;
    try {
      await this.store.saveSinkCursor(SINK, cursor);
      this.writtenCursor = cursor;
    } catch (err) {
      this.note(err as Error, 'MQTT cursor not written');
    }
  }

  private note(err: Error, message: string): void {
    const text = err.message;
    if (text !== this.lastError) this.log.warn({ err }, message);
    this.lastError = text;
  }
}
