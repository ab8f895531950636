/**
 * Stores an event consumed from a fleet's stream (docs/OPERATIONS.md, "Hub mode"): the event's
 * JSON as its device's store presented it, its files fetched from wherever the caller keeps them.
 * The event keeps its device-side id and file ids; its created_at is this store's (when it was
 * stored here). Idempotent by id, so a re-delivered message changes nothing: an event already
 * stored and finalized is left as it is; one stored as a draft by an import that stopped half-way
 * (it had videos) gets its missing videos and is finalized.
 */
import { validationError } from '../errors.js';
import { checkedLabel } from '../events/attach-file.js';
import { checkedContentType } from '../events/content-type.js';
import { validatedCreate, type PredictionLimits } from '../events/create-event.js';
import { attachStagedBlob, type DecodedImage, type EventRecord, type EventStore, finalizeEvent, isCanonicalId, StagingFile } from '../store/index.js';

/** A file the event names is not in its source (yet, when the files travel apart from the events). */
export class FileMissing extends Error {
  constructor(readonly fileId: string) {
    super(`file ${fileId} is not in the source`);
    this.name = 'FileMissing';
  }
}

/**
 * An imported event names an id this store already holds for something else: an event of
 * another device, or a file of another event. The import is refused, never merged: an import
 * never replaces a stored file nor changes an event it did not make (docs/OPERATIONS.md,
 * "Hub mode").
 */
export class IdCollision extends Error {
  constructor(readonly id: string, what: string) {
    super(`${what} ${id} is already stored here for another event or device`);
    this.name = 'IdCollision';
  }
}

/** Where an imported event's files come from (the fleet's object store). */
export interface FileSource {
  /** A file's bytes and content type; null when the source no longer has it. */
  bytes(fileId: string): Promise<DecodedImage | null>;
  /** A file's bytes as chunks; null when the source no longer has it. */
  chunks(fileId: string): Promise<AsyncIterable<Uint8Array> | null>;
}

interface ConsumedImage {
  file_id?: string | null;
  input_file_id?: string | null;
}

interface ConsumedVideo {
  file_id: string;
  label: string;
  contentType: string;
}

/**
 * The event's and its images' ids: canonical UUIDs (ids.ts), the only ids the log's frames hold.
 * @throws AppError validation_failed (422) naming the first that is not
 */
function checkIds(id: string, images: unknown): void {
  if (!isCanonicalId(id)) throw validationError(['body', 'id'], 'id must be a lower-case UUID');
  for (const [i, image] of (Array.isArray(images) ? images : []).entries()) {
    for (const key of ['file_id', 'input_file_id'] as const) {
      const fileId = (image as ConsumedImage | null)?.[key];
      if (fileId !== null && fileId !== undefined && !isCanonicalId(fileId)) throw validationError(['body', 'images', i, key], `${key} must be a lower-case UUID`);
    }
  }
}

/**
 * Every id a consumed event would store under: its own, its images' and its videos' file ids.
 * Imports that share one must run one after the other, so the second sees the first's files.
 */
export function claimedIds(event: Record<string, unknown>): string[] {
  const videos = Array.isArray(event.videos) ? (event.videos as ({ file_id?: unknown } | null)[]).map((video) => video?.file_id) : [];
  return [event.id, ...imageFileIds(event.images), ...videos].filter((id): id is string => typeof id === 'string');
}

/** The file ids of a consumed event's images (strings only; importEvent checks them as UUIDs). */
export function imageFileIds(images: unknown): string[] {
  return (Array.isArray(images) ? (images as (ConsumedImage | null)[]) : []).flatMap((image) => [image?.file_id, image?.input_file_id]).filter((fileId): fileId is string => typeof fileId === 'string');
}

/**
 * An event stored under the consumed event's id must be the one an earlier delivery of it
 * stored: the same device and the same image files. A draft of a local producer, or another
 * device's event, is never continued nor finalized by an import.
 * @throws IdCollision when it is not
 */
function assertSameOrigin(stored: EventRecord, event: Record<string, unknown>): void {
  const files = imageFileIds(event.images);
  const storedFiles = stored.images.flatMap((image) => [image.file_id, image.input_file_id]).filter((fileId): fileId is string => fileId !== null);
  const same = stored.device_id === (event.device_id ?? null) && storedFiles.every((fileId) => files.includes(fileId));
  if (!same) throw new IdCollision(String(event.id), 'event');
}

/**
 * The event's videos as an attachment takes them: a canonical UUID, a label of 1 to 256
 * characters without control characters, one clean MIME type (content-type.ts).
 * @throws AppError validation_failed (422) naming the first field that is not
 */
function checkedVideos(videos: unknown): ConsumedVideo[] {
  if (videos === undefined || videos === null) return [];
  if (!Array.isArray(videos)) throw validationError(['body', 'videos'], 'videos must be a list');
  return videos.map((video: Record<string, unknown> | null, i) => {
    if (!isCanonicalId(video?.file_id)) throw validationError(['body', 'videos', i, 'file_id'], 'file_id must be a lower-case UUID');
    const label = checkedLabel(video!.label ?? 'video', ['body', 'videos', i, 'label']);
    const contentType = typeof video!.content_type === 'string' ? checkedContentType(video!.content_type, ['body', 'videos', i, 'content_type']) : 'application/octet-stream';
    return { file_id: video!.file_id as string, label, contentType };
  });
}

/**
 * Stores `event` unless it is already stored whole.
 * @param event the event's JSON object as `GET /v2/events/{id}` returns it on its device
 * @param missingFiles what a file absent from `files` means: `wait` (it may come: throw
 *   FileMissing, nothing is stored) or `skip` (it is gone: store the event without it)
 * @param limits MAX_PREDICTIONS_PER_IMAGE and MAX_POINTS_PER_EVENT, as a create checks them
 *   (docs/API.md, "Create an event")
 * @returns `stored`, or `present` when it was already stored whole
 * @throws AppError validation_failed (422) or another create refusal for an event this store
 *   cannot take; the fs or lmdb error of a failed write (nothing half-stored stays visible as
 *   finalized: a retry completes it); FileMissing (with `wait`)
 */
export async function importEvent(store: EventStore, event: Record<string, unknown>, files: FileSource, missingFiles: 'wait' | 'skip', limits: PredictionLimits): Promise<'stored' | 'present'> {
  const fetch = async (fileId: string | null | undefined): Promise<DecodedImage | null> => {
    if (!fileId) return null;
    const file = await files.bytes(fileId);
    if (!file && missingFiles === 'wait') throw new FileMissing(fileId);
    return file;
  };
  const id = event.id;
  if (typeof id !== 'string' || id === '') throw validationError(['body', 'id'], 'a consumed event has no id', 'value_error.missing');
  const videos = checkedVideos(event.videos);
  checkIds(id, event.images);
  let stored = store.getEvent(id);
  if (stored) assertSameOrigin(stored, event);
  if (stored && !stored.draft) return 'present';
  if (!stored) {
    for (const fileId of imageFileIds(event.images)) if (store.openFile(fileId)) throw new IdCollision(fileId, 'file');
    // Read before validation: it drops the keys a create does not take (ajv's removeAdditional).
    const consumed = (Array.isArray(event.images) ? event.images : []).map((image: ConsumedImage) => ({ file_id: image.file_id, input_file_id: image.input_file_id }));
    const input = validatedCreate(event, limits);
    const images = await Promise.all(input.images.map(async ({ base64_image: _image, input_base64_image: _input, ...results }, i) => ({
      results,
      image: await fetch(consumed[i]?.file_id),
      input: await fetch(consumed[i]?.input_file_id),
    })));
    await store.create({
      // With videos, a draft until they are attached: never finalized with files missing.
      fields: { ...input, draft: videos.length > 0 },
      images,
      ids: { event: id, images: images.map((image, i) => ({ file: image.image ? consumed[i]!.file_id! : null, input: image.input ? consumed[i]!.input_file_id! : null })) },
    });
    stored = store.getEvent(id)!;
  }
  for (const video of videos) {
    if (stored.videos.some((attached) => attached.file_id === video.file_id)) continue;
    if (store.openFile(video.file_id)) throw new IdCollision(video.file_id, 'file');
    const chunks = await files.chunks(video.file_id);
    if (!chunks && missingFiles === 'wait') throw new FileMissing(video.file_id);
    if (!chunks) continue; // gone from the source: the event is stored without it
    const staging = new StagingFile(store.stagingDir, video.file_id);
    try {
      for await (const chunk of chunks) if (!staging.write(Buffer.from(chunk))) await staging.drained();
      const staged = await staging.finish('video');
      await attachStagedBlob(store, id, staged, { kind: 'video', label: video.label, contentType: video.contentType });
    } catch (err) {
      await staging.discard();
      throw err;
    }
  }
  if (videos.length > 0) await finalizeEvent(store, id);
  return 'stored';
}
