/**
 * Values as single levels of MQTT topics and tokens of NATS subjects (docs/OPERATIONS.md, "MQTT"
 * and "NATS JetStream"): the characters a level or token may not hold, and `%`, are
 * percent-encoded as UTF-8, so a device id can neither add levels, act as a wildcard nor make a
 * malformed packet, and `decodeURIComponent` gives the value back (a lone surrogate comes back
 * as U+FFFD). No value (null or empty) is `_`; a value literally
 * `_` is `%5F`.
 */

/** The level or token standing for "no value". */
export const NO_VALUE = '_';

/**
 * What an MQTT topic level may not hold: the separator and the wildcards (MQTT 5, 4.7), and what
 * a UTF-8 string of MQTT must not or should not (MQTT 5, 1.5.4): NUL, the other C0 and the C1
 * controls, DEL, the non-characters U+FDD0-U+FDEF, U+FFFE and U+FFFF, and lone surrogates. A
 * broker drops a client that publishes to a topic with a control character in it (mosquitto:
 * DISCONNECT 0x81, malformed packet), which stopped every later publish.
 */
export const MQTT_RESERVED = /[%/+#\u0000-\u001f\u007f-\u009f\ufdd0-\ufdef\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
/** What a NATS subject token may not hold: the separator, the wildcards, whitespace and control characters. */
export const NATS_RESERVED = /[%.*>\s\u0000-\u001f\u007f]/g;

/** A character percent-encoded as its UTF-8 bytes (a lone surrogate, which has none, as U+FFFD's). */
function percentEncoded(char: string): string {
  const code = char.charCodeAt(0);
  if (code < 0x80) return `%${code.toString(16).toUpperCase().padStart(2, '0')}`;
  return code >= 0xd800 && code <= 0xdfff ? '%EF%BF%BD' : encodeURIComponent(char);
}

/** `value` as one level or token, with the characters `reserved` matches (a global regex) percent-encoded as UTF-8. */
export function subjectToken(value: string | null, reserved: RegExp): string {
  if (value === null || value === '') return NO_VALUE;
  if (value === NO_VALUE) return '%5F';
  return value.replace(reserved, percentEncoded);
}
