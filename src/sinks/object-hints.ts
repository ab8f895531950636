/**
 * The `Edge-Events-Objects` header of an event's message (docs/OPERATIONS.md, "NATS JetStream",
 * "Hub mode"): the NATS sink names there what the bucket said of each of the event's files as it
 * stored them (the object's nuid, size, chunks, digest and description), so a hub reads an image
 * of one chunk with one direct get of its chunk, without asking the object's info first
 * (native-bench/PROFILE.md, "The hub's import"). A hint only saves a request: the hub checks the
 * bytes it reads against the hint's digest and size, and asks the info when the hint is absent,
 * unreadable, or names a chunk the bucket no longer holds (the object was put again).
 */
import type { ObjectInfo } from '@nats-io/obj';

/** The header's name. */
export const OBJECT_HINTS_HEADER = 'Edge-Events-Objects';

/** What a hint keeps of an object's info (@nats-io/obj ObjectInfo). */
export type ObjectHint = Pick<ObjectInfo, 'name' | 'nuid' | 'size' | 'chunks' | 'digest' | 'description'>;

/** The header's value for the infos of the files stored for an event: JSON, one line. */
export function encodeObjectHints(infos: readonly ObjectInfo[]): string {
  return JSON.stringify(infos.map(({ name, nuid, size, chunks, digest, description }) => ({ name, nuid, size, chunks, digest, description })));
}

/**
 * The hints of a header's value by object name: only entries of the expected shape (anything else
 * in the header is left out, and the hub asks those objects' info).
 * @param value the header's value, or undefined when the message has none
 */
export function decodeObjectHints(value: string | undefined): Map<string, ObjectHint> {
  const hints = new Map<string, ObjectHint>();
  if (!value) return hints;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return hints;
  }
  if (!Array.isArray(parsed)) return hints;
  for (const entry of parsed as Partial<Record<keyof ObjectHint, unknown>>[]) {
    if (entry && typeof entry.name === 'string' && typeof entry.nuid === 'string' && Number.isSafeInteger(entry.size) && Number.isSafeInteger(entry.chunks)
      && typeof entry.digest === 'string' && typeof (entry.description ?? '') === 'string') {
      hints.set(entry.name, { name: entry.name, nuid: entry.nuid, size: entry.size as number, chunks: entry.chunks as number, digest: entry.digest, description: (entry.description ?? '') as string });
    }
  }
  return hints;
}
