/**
 * Event and file ids: UUIDv7 (RFC 9562, section 5.7), time-ordered, so new ids land at the
 * right edge of the `event_ids` and `files` B-trees instead of on random pages.
 */
import { randomUUID } from 'node:crypto';

/** A UUID as the store writes ids: 8-4-4-4-12 lower-case hex digits (RFC 9562, section 4). */
const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * True when `id` is a UUID in the form the store writes: the only ids the log's frames can hold
 * (segment-frames.ts keeps an id as its 16 bytes) and the only ones used in a path.
 */
export function isCanonicalId(id: unknown): boolean {
  return typeof id === 'string' && CANONICAL_UUID.test(id);
}

/**
 * A UUIDv7 string: the Unix time in ms (48 bits), version 7, then 74 random bits. Built from
 * a random (version 4) UUID from node:crypto, whose variant bits are already those of v7.
 */
export function timeOrderedId(nowMs = Date.now()): string {
  const random = randomUUID();
  const time = nowMs.toString(16).padStart(12, '0');
  return `${time.slice(0, 8)}-${time.slice(8)}-7${random.slice(15)}`;
}
