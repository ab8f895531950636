/**
 * The fleet's object store bucket as the source of imported events' files (event-import.ts;
 * docs/OPERATIONS.md, "Hub mode"). The content type is the object's description. Sizes are
 * checked from the object's info before any byte is read: an image at most `maxRecordSizeBytes`,
 * a video at most `maxVideoUploadBytes`, as a create's and an upload's (docs/API.md, "Limits").
 *
 * An object of one chunk (every image up to the chunk size, 128 KiB by default) is read with one
 * direct get of its chunk's subject (the stream's message get where the stream does not allow
 * direct gets) and checked against the digest its info names; the
 * object store's own `get` starts a consumer for each object, which cost the hub and nats-server
 * more CPU than the import itself (native-bench/PROFILE.md, "The hub's import"). Larger objects,
 * videos, go through `get`. The layout read here is the object store's, ADR-20 of
 * nats-io/nats-architecture-and-design ("JetStream based Object Stores"): the bucket's stream is
 * `OBJ_<bucket>`, an object's chunks are the messages of `$O.<bucket>.C.<nuid>`, and its digest
 * is `SHA-256=` and the base64url of the SHA-256 of its bytes.
 */
import { createHash } from 'node:crypto';
import type { JetStreamManager, StoredMsg } from '@nats-io/jetstream';
import type { ObjectInfo, ObjectStore } from '@nats-io/obj';
import type { Config } from '../config.js';
import { validationError } from '../errors.js';
import { checkedContentType } from '../events/content-type.js';
import type { FileSource } from './event-import.js';

/** An import's view of the bucket: its files (event-import.ts), and an object's size in bytes (0 when absent). */
export interface BucketFiles extends FileSource {
  size(fileId: string): Promise<number>;
}

/** The bucket, by its object store and by the stream that holds it. */
export interface Bucket {
  name: string;
  objects: ObjectStore;
  /** JetStream's stream API (its message get answers JSON, the bytes in base64) and its direct get (the bytes as they are). */
  jsm: Pick<JetStreamManager, 'streams' | 'direct'>;
  /** Set once a direct get failed: the stream does not allow it (`allow_direct`, which the object stores of nats.js and nats.go set). */
  noDirect?: boolean;
}

const DIGEST_PREFIX = 'SHA-256=';

/**
 * The bytes of a one-chunk object: a direct get of the last message of its chunk's subject, or
 * the stream's message get once a direct get failed (`Bucket.noDirect`).
 * @throws Error when they are not the object's: another size, or a SHA-256 that is not its digest;
 *   the NATS error of a failed message get
 * @returns null when the stream no longer holds the chunk
 */
async function oneChunk(bucket: Bucket, info: ObjectInfo): Promise<Uint8Array | null> {
  const stream = `OBJ_${bucket.name}`;
  const query = { last_by_subj: `$O.${bucket.name}.C.${info.nuid}` };
  let stored: StoredMsg | null | undefined;
  if (!bucket.noDirect) {
    stored = await bucket.jsm.direct.getMessage(stream, query).catch(() => {
      bucket.noDirect = true;
      return undefined;
    });
  }
  if (stored === undefined) stored = await bucket.jsm.streams.getMessage(stream, query);
  if (!stored) return null;
  const data = stored.data; // decoded at each read where the answer was JSON
  const expected = info.digest.startsWith(DIGEST_PREFIX) ? Buffer.from(info.digest.slice(DIGEST_PREFIX.length), 'base64url') : undefined;
  const actual = createHash('sha256').update(data).digest();
  if (data.length !== info.size || !expected?.equals(actual)) {
    throw new Error(`object ${info.name} of bucket ${bucket.name}: its chunk (${data.length} bytes, SHA-256 ${actual.toString('base64url')}) is not the object its info names (${info.size} bytes, ${info.digest})`);
  }
  return data;
}

/**
 * The bucket as the source of imported events' files, for one import: each object's info is
 * asked once, weighing it and reading it sharing the answer.
 * @throws (from its methods) AppError validation_failed (422) for an object over its limit or a
 *   description that is not one clean MIME type; the NATS error of a failed read
 */
export function filesOf(bucket: Bucket, limits: Pick<Config, 'maxRecordSizeBytes' | 'maxVideoUploadBytes'>): BucketFiles {
  const checkSize = (fileId: string, size: number, limit: number) => {
    if (size > limit) throw validationError(['bucket', fileId], `the object is ${size} bytes, over this store's limit of ${limit}`);
  };
  const infos = new Map<string, Promise<ObjectInfo | null>>();
  const infoOf = (fileId: string): Promise<ObjectInfo | null> => {
    let info = infos.get(fileId);
    if (!info) infos.set(fileId, (info = bucket.objects.info(fileId)));
    return info;
  };
  return {
    async size(fileId) {
      const info = await infoOf(fileId);
      return info && !info.deleted ? info.size : 0;
    },
    async bytes(fileId) {
      const info = await infoOf(fileId);
      if (!info || info.deleted) return null;
      checkSize(fileId, info.size, limits.maxRecordSizeBytes);
      // A device chose the description: only one clean MIME type is kept (content-type.ts).
      const contentType = checkedContentType(info.description || 'application/octet-stream', ['bucket', fileId, 'description']);
      const data = info.chunks === 1 && !info.options?.link ? await oneChunk(bucket, info) : await bucket.objects.getBlob(fileId);
      return data && { bytes: Buffer.from(data.buffer, data.byteOffset, data.byteLength), contentType };
    },
    async chunks(fileId) {
      const info = await infoOf(fileId);
      if (!info || info.deleted) return null;
      checkSize(fileId, info.size, limits.maxVideoUploadBytes);
      const result = await bucket.objects.get(fileId);
      if (!result) return null;
      return (async function* () {
        for await (const chunk of result.data) yield chunk;
        const error = await result.error; // a digest that does not match, a chunk missing
        if (error) throw error;
      })();
    },
  };
}
