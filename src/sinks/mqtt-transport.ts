/**
 * The MQTT sink's end of a live-stream subscription (docs/OPERATIONS.md, "MQTT"): publishes each
 * `created`, `finalized` and `deleted` message at QoS 1, and knows how far the broker has
 * acknowledged. Its cursor is the created_at of the newest `created` the broker acknowledged with
 * every older one acknowledged too: resuming after it re-publishes at most what was in flight,
 * never skips. In-flight messages are bounded by a count (at most the broker's Receive Maximum)
 * and by bytes; past either, the subscription waits (`drained`) and, waiting too long, queues
 * until its own bound closes it (src/stream/subscription.ts).
 *
 * A message no broker will ever take is dead-lettered, never retried: one larger than the
 * Maximum Packet Size the broker announced in CONNACK (sending it would make the broker drop the
 * connection, and mqtt.js would send it again after every reconnect), or one the broker refuses
 * with a reason code about the message itself (MQTT 5, 3.4.2.1: 0x90 topic name invalid, 0x95
 * packet too large, 0x99 payload format invalid). It counts as acknowledged for the cursor, so
 * the messages behind it are published.
 */
import { ErrorWithReasonCode, type MqttClient } from 'mqtt';
import type { HeartbeatTransport } from '../stream/stream-fanout.js';
import type { StreamMessage, StreamMessageType } from '../stream/stream-message.js';
import { eventTopic, PUBLISHED_TYPES, resetTopic } from './mqtt-topic.js';

/** Bounds of what is in flight (published, not yet acknowledged). */
export interface PublishWindow {
  messages: number;
  bytes: number;
}

/** PUBACK reason codes about the message itself: sending it again can never succeed. */
const UNPUBLISHABLE = new Set([0x90, 0x95, 0x99]);

/** Bytes of a QoS 1 PUBLISH around its topic and payload: headers, packet id, the two properties; an upper bound. */
const PUBLISH_OVERHEAD_BYTES = 64;

/** What the sink hears from its transport. */
export interface TransportEvents {
  /** The broker acknowledged a message of `type`. */
  acknowledged(type: StreamMessageType): void;
  /** A message no broker will take was dropped (see above); `reason` says why. */
  deadLettered(message: StreamMessage, reason: string): void;
  /** The broker refused a message (MQTT 5 reason code), or the client dropped it. */
  failed(err: Error): void;
  /** The subscription ended the stream (too far behind, or the store stopping). */
  ended(): void;
}

interface InFlightCreate {
  createdAt: number;
  acknowledged: boolean;
}

export class MqttTransport implements HeartbeatTransport {
  /** Creates in flight, in the order sent (created_at increasing); acknowledged ones leave from the head. */
  private readonly creates: InFlightCreate[] = [];
  private inFlight = 0;
  private inFlightBytes = 0;
  private waiters: (() => void)[] = [];
  private detached = false;

  /**
   * @param cursor created_at (µs) the subscription resumes after: every create up to it is acknowledged
   * @param maxPacketBytes the Maximum Packet Size of the broker's CONNACK (bytes); undefined: none
   */
  constructor(
    private readonly client: MqttClient,
    private readonly prefix: string,
    private readonly window: PublishWindow,
    private cursor: number,
    private readonly events: TransportEvents,
    private readonly maxPacketBytes: number | undefined,
  ) {}

  /** created_at (µs) of the newest acknowledged create with every older one acknowledged. */
  get acknowledgedThrough(): number {
    return this.cursor;
  }

  /** True while something published is not acknowledged. */
  get busy(): boolean {
    return this.inFlight > 0;
  }

  get closed(): boolean {
    return this.detached;
  }

  send(message: StreamMessage): boolean {
    if (this.detached || !PUBLISHED_TYPES.has(message.type)) return true;
    const create = message.createdAt === undefined ? undefined : { createdAt: message.createdAt, acknowledged: false };
    if (create) this.creates.push(create);
    this.inFlight++;
    this.inFlightBytes += message.data.byteLength;
    const payload = Buffer.from(message.data.buffer, message.data.byteOffset, message.data.byteLength);
    const topic = this.topicOf(message);
    const packetBytes = payload.byteLength + Buffer.byteLength(topic) + PUBLISH_OVERHEAD_BYTES;
    if (this.maxPacketBytes !== undefined && packetBytes > this.maxPacketBytes) {
      queueMicrotask(() => this.settled(message, create, undefined, `about ${packetBytes} bytes, over the broker's Maximum Packet Size of ${this.maxPacketBytes}`));
      return !this.full();
    }
    this.client.publish(
      topic,
      payload,
      { qos: 1, retain: false, properties: { contentType: 'application/json', userProperties: { type: message.type } } },
      (err) => this.settled(message, create, err),
    );
    return !this.full();
  }

  drained(): Promise<void> {
    if (!this.full() || this.detached) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  end(): void {
    if (this.detached) return;
    this.detach();
    this.events.ended();
  }

  heartbeat(): void {
    // MQTT keeps its connection alive itself (keepalive PINGREQ).
  }

  /** Stops publishing: the subscription's further messages are dropped (the sink resumes from the cursor). */
  detach(): void {
    this.detached = true;
    this.wake();
  }

  private full(): boolean {
    return this.inFlight >= this.window.messages || this.inFlightBytes >= this.window.bytes;
  }

  /**
   * A message is done: acknowledged, refused (`err`), or dead-lettered (`deadLetter`, the reason,
   * or a refusal about the message itself), which moves the cursor as an acknowledgement does.
   */
  private settled(message: StreamMessage, create: InFlightCreate | undefined, err: Error | undefined, deadLetter?: string): void {
    this.inFlight--;
    this.inFlightBytes -= message.data.byteLength;
    if (err instanceof ErrorWithReasonCode && UNPUBLISHABLE.has(err.code)) deadLetter = err.message;
    if (err && deadLetter === undefined) {
      this.events.failed(err);
    } else {
      if (create) {
        create.acknowledged = true;
        let through = 0;
        while (through < this.creates.length && this.creates[through]!.acknowledged) through++;
        if (through > 0) this.cursor = this.creates.splice(0, through).at(-1)!.createdAt;
      }
      if (deadLetter === undefined) this.events.acknowledged(message.type);
      else this.events.deadLettered(message, deadLetter);
    }
    if (!this.full()) this.wake();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }

  private topicOf(message: StreamMessage): string {
    if (message.source) return eventTopic(this.prefix, message.source);
    // A reset concerns every device; a catch-up message carries only its JSON.
    const data = JSON.parse(Buffer.from(message.data).toString('utf8')) as { device_id?: string | null; event_schema?: string; reason?: string };
    if (message.type === 'deleted' && data.reason === 'reset') return resetTopic(this.prefix);
    return eventTopic(this.prefix, { deviceId: data.device_id ?? null, eventSchema: data.event_schema ?? '' });
  }
}
