/**
 * Topics of published events (docs/OPERATIONS.md, "MQTT"): `<prefix>/<device_id>/<event_schema>`.
 * A value becomes one topic level: `/`, `+`, `#`, `%` and NUL are percent-encoded so a device id
 * can neither add levels nor act as a wildcard, and `decodeURIComponent` gives the value back; an
 * event without a device id has the level `_` (a device literally named `_` is `%5F`).
 */
import type { MessageSource } from '../stream/stream-message.js';

/** The level standing for "no value". */
export const NO_VALUE_LEVEL = '_';

/** One topic level for `value` (null or empty: NO_VALUE_LEVEL). */
export function topicLevel(value: string | null): string {
  if (value === null || value === '') return NO_VALUE_LEVEL;
  if (value === NO_VALUE_LEVEL) return '%5F';
  return value.replace(/[%/+#\u0000]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
}

/** The topic of an event's messages. */
export function eventTopic(prefix: string, source: MessageSource): string {
  return `${prefix}/${topicLevel(source.deviceId)}/${topicLevel(source.eventSchema)}`;
}

/** The topic of a reset's one message (it concerns every device). */
export function resetTopic(prefix: string): string {
  return `${prefix}/${NO_VALUE_LEVEL}reset`;
}
