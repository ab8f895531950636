/**
 * Values as single levels of MQTT topics and tokens of NATS subjects (docs/OPERATIONS.md, "MQTT"
 * and "NATS JetStream"): the characters a level or token may not hold, and `%`, are
 * percent-encoded, so a device id can neither add levels nor act as a wildcard, and
 * `decodeURIComponent` gives the value back. No value (null or empty) is `_`; a value literally
 * `_` is `%5F`.
 */

/** The level or token standing for "no value". */
export const NO_VALUE = '_';

/** What an MQTT topic level may not hold: the separator, the wildcards, NUL (MQTT 5, 4.7). */
export const MQTT_RESERVED = /[%/+#\u0000]/g;
/** What a NATS subject token may not hold: the separator, the wildcards, whitespace and control characters. */
export const NATS_RESERVED = /[%.*>\s\u0000-\u001f\u007f]/g;

/** `value` as one level or token, with the characters `reserved` matches (a global regex) percent-encoded. */
export function subjectToken(value: string | null, reserved: RegExp): string {
  if (value === null || value === '') return NO_VALUE;
  if (value === NO_VALUE) return '%5F';
  return value.replace(reserved, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
}
