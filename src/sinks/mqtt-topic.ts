/**
 * Topics of published events (docs/OPERATIONS.md, "MQTT"): `<prefix>/<device_id>/<event_schema>`,
 * each value one topic level (subject-tokens.ts: `/`, `+`, `#`, `%`, control characters,
 * non-characters and lone surrogates percent-encoded; no device id is `_`).
 */
import type { MessageSource, StreamMessageType } from '../stream/stream-message.js';
import { MQTT_RESERVED, NO_VALUE, subjectToken } from './subject-tokens.js';

/** The messages published; `files_attached` is not (the `finalized` that follows carries the files). */
export const PUBLISHED_TYPES: ReadonlySet<StreamMessageType> = new Set(['created', 'finalized', 'deleted']);

/** One topic level for `value` (null or empty: `_`). */
export const topicLevel = (value: string | null): string => subjectToken(value, MQTT_RESERVED);

/** The topic of an event's messages. */
export function eventTopic(prefix: string, source: MessageSource): string {
  return `${prefix}/${topicLevel(source.deviceId)}/${topicLevel(source.eventSchema)}`;
}

/** The topic of a reset's one message (it concerns every device). */
export function resetTopic(prefix: string): string {
  return `${prefix}/${NO_VALUE}reset`;
}
