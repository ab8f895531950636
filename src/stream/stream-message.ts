/**
 * One message of the live event stream (docs/API.md, "Live stream") and its two wire forms:
 * a Server-Sent Events frame (`id:` only on `created`, the event's `created_at`, so a client's
 * `Last-Event-ID` is always a resume point) and a WebSocket text message
 * `{"type": ..., "id": ..., "data": ...}`. Each form is built once per message, however many
 * subscribers receive it.
 */
import { formatMicros } from '../store/index.js';

/** What a message announces. `closed` is the last message of a stream the store ends. */
export type StreamMessageType = 'created' | 'finalized' | 'files_attached' | 'deleted' | 'closed';

/** The event a message concerns, when the announcer knew it decoded (MQTT topics use it). */
export interface MessageSource {
  deviceId: string | null;
  eventSchema: string;
}

/** The source of a message about `record`. */
export const sourceOf = (record: { device_id: string | null; event_schema: string }): MessageSource => ({ deviceId: record.device_id, eventSchema: record.event_schema });

export class StreamMessage {
  private sseFrame: Buffer | undefined;
  private wsText: Buffer | undefined;

  /**
   * @param type what happened
   * @param data the message's JSON (UTF-8 bytes): a stored event, or a small object
   * @param createdAt the event's created_at (µs) for `created` (its resume point), else undefined
   * @param source the event's device and schema, when known without parsing `data`
   */
  constructor(readonly type: StreamMessageType, readonly data: Uint8Array, readonly createdAt?: number, readonly source?: MessageSource) {}

  /** A small message whose data is `value` as JSON. */
  static of(type: StreamMessageType, value: unknown, source?: MessageSource): StreamMessage {
    return new StreamMessage(type, Buffer.from(JSON.stringify(value)), undefined, source);
  }

  /** The Server-Sent Events frame (JSON has no raw newline, so `data:` is one line). */
  sse(): Buffer {
    this.sseFrame ??= Buffer.concat([
      Buffer.from(`${this.createdAt === undefined ? '' : `id: ${formatMicros(this.createdAt)}\n`}event: ${this.type}\ndata: `),
      this.data,
      NEWLINES,
    ]);
    return this.sseFrame;
  }

  /** The WebSocket text message. */
  ws(): Buffer {
    this.wsText ??= Buffer.concat([
      Buffer.from(`{"type":"${this.type}",${this.createdAt === undefined ? '' : `"id":"${formatMicros(this.createdAt)}",`}"data":`),
      this.data,
      CLOSE_BRACE,
    ]);
    return this.wsText;
  }
}

const NEWLINES = Buffer.from('\n\n');
const CLOSE_BRACE = Buffer.from('}');
