/**
 * Create (`POST /v2/events`; docs/API.md, "Create an event"): validation, `solution_required`, image decoding
 * (`image_decode_failed`), and the durable write. Answers only once the record and its image bytes are durable.
 */
import type { Config } from '../config.js';
import { AppError, type ValidationIssue } from '../errors.js';
import { type DecodedImage, type EventStore, formatMicros, type NewEvent, type PreparedCreate } from '../store/index.js';
import { decodeImage, nonImageIssue } from './decode-image.js';
import { assertEventPredictionLimit, assertPointLimit, assertPredictionLimit } from './prediction-limit.js';
import type { CreateEventInput } from './types.js';
import { ignoredKeyIssue, ignoredKeys, type IgnoredKey } from './unknown-keys.js';
import { validateCreateBody } from './validate.js';

/**
 * What a create needs of the store: `EventStore.create`, which resolves once the event and its
 * images are durable. Everything before it (validation, image decoding) is createEvent's own.
 */
export type EventWriter = Pick<EventStore, 'create'>;

/**
 * The bounds on predictions a create checks: MAX_PREDICTIONS_PER_IMAGE, MAX_PREDICTIONS_PER_EVENT
 * and MAX_POINTS_PER_EVENT (docs/API.md, "Create an event").
 */
export type PredictionLimits = Pick<Config, 'maxPredictionsPerImage' | 'maxPredictionsPerEvent' | 'maxPointsPerEvent'>;

/** The settings a create body is checked against (docs/API.md, "Create an event"; docs/OPERATIONS.md, "Settings"). */
export type CreateLimits = PredictionLimits & Pick<Config, 'defaultSolutionId' | 'cloudUploadUrl' | 'unknownKeys' | 'nonImagePayloads'>;

/** The 201 body of a create (docs/API.md, "Response shapes"). */
export interface CreateResponse {
  id: string;
  image_ids: string[];
  created_at: string;
  draft: boolean;
  message: string;
  /**
   * One per key of the body the store ignored (docs/API.md, "Ignored keys") and per image stored
   * though it is none (NON_IMAGE_PAYLOADS=warn; "Image types"); absent when there is none.
   */
  warnings?: ValidationIssue[];
}

/** A create body made ready to store, the keys of it the store ignored, and the answer's warnings. */
export interface PreparedBody<E = NewEvent> {
  event: E;
  /** The keys the store ignored: /metrics counts them by path. */
  ignored: IgnoredKey[];
  /** The 201's `warnings`: each ignored key, then each image stored though it is none. */
  warnings: ValidationIssue[];
}

/**
 * Validates and stores one event: `prepareCreate`, then `storeCreate`.
 * @param body the parsed JSON body, camelCase or snake_case
 * @throws what prepareCreate and storeCreate throw
 */
export async function createEvent(store: EventWriter, limits: CreateLimits, body: unknown): Promise<CreateResponse> {
  const { event, warnings } = await prepareCreate(body, limits);
  return storeCreate(store, event, warnings);
}

/**
 * Everything of a create but the write, and nothing that needs the store: the body validated and
 * checked against the limits, its images decoded. Runs on the HTTP thread or on the create
 * preparer's worker (create-preparer.ts).
 * @param body the parsed JSON body, camelCase or snake_case
 * @returns the event to store, without the images' base64 text, the keys of the body the
 *   store ignored (unknown-keys.ts; docs/API.md, "Ignored keys"), and the answer's warnings
 * @throws AppError validation_failed / unknown_event_schema (422; validation_failed also
 *   for an image over MAX_PREDICTIONS_PER_IMAGE and an event over MAX_POINTS_PER_EVENT, for
 *   ignored keys under UNKNOWN_KEYS=reject, and for images whose bytes are none under
 *   NON_IMAGE_PAYLOADS=reject, naming each), event_data_invalid (400), solution_required (400),
 *   image_decode_failed (400)
 */
export async function prepareCreate(body: unknown, limits: CreateLimits): Promise<PreparedBody> {
  // Before validation, which drops them.
  const ignored = ignoredKeys(body);
  const input = validatedCreate(body, limits);
  if (ignored.length > 0 && limits.unknownKeys === 'reject') {
    throw new AppError('validation_failed', ignored.map((key) => ignoredKeyIssue(key, 'reject')));
  }
  if (input.solution === null && limits.defaultSolutionId === undefined && limits.cloudUploadUrl !== undefined) {
    throw new AppError('solution_required');
  }
  const { images, ...fields } = input;
  const decoded = await decodeImages(images, limits.nonImagePayloads);
  if (decoded.nonImages.length > 0 && limits.nonImagePayloads === 'reject') throw new AppError('validation_failed', decoded.nonImages);
  const warnings = [...ignored.map((key) => ignoredKeyIssue(key, 'warn')), ...decoded.nonImages];
  return { event: { fields, images: decoded.images }, ignored, warnings };
}

/**
 * A create body validated and held to the prediction limits: what a create and a hub import
 * (src/hub/event-import.ts) both check.
 * @param body the parsed JSON body, camelCase or snake_case
 * @throws AppError validation_failed / unknown_event_schema (422; validation_failed also for an
 *   image over MAX_PREDICTIONS_PER_IMAGE and an event over MAX_PREDICTIONS_PER_EVENT or
 *   MAX_POINTS_PER_EVENT), event_data_invalid (400)
 */
export function validatedCreate(body: unknown, limits: PredictionLimits): CreateEventInput {
  const input = validateCreateBody(body);
  assertPredictionLimit(input.images, limits.maxPredictionsPerImage);
  assertEventPredictionLimit(input.images, limits.maxPredictionsPerEvent);
  assertPointLimit(input.images, limits.maxPointsPerEvent);
  return input;
}

/**
 * Stores a prepared create durably and words its answer: `event` as `prepareCreate` gives it, or
 * its record already built and encoded (the create preparer's worker: create-preparer.ts).
 * @param warnings the answer's `warnings` (PreparedBody's)
 * @throws AppError disk_full (507), disk_io_error (503), store_failure (500): EventStore.create's
 */
export async function storeCreate(store: EventWriter, event: NewEvent | PreparedCreate, warnings: ValidationIssue[] = []): Promise<CreateResponse> {
  const created = await store.create(event);
  const response: CreateResponse = {
    id: created.id,
    image_ids: created.image_ids,
    created_at: formatMicros(created.created_at),
    draft: created.draft,
    message: created.draft ? 'Draft event created' : 'Event created',
  };
  if (warnings.length > 0) response.warnings = warnings;
  return response;
}

/** The images decoded in order, and an issue for each whose bytes are no image (docs/API.md, "Image types"). */
async function decodeImages(images: CreateEventInput['images'], policy: CreateLimits['nonImagePayloads']) {
  const nonImages: ValidationIssue[] = [];
  const decode = async (text: string | null, i: number, key: string): Promise<DecodedImage | null> => {
    if (text === null) return null;
    const { image, format } = await decodeImage(text, `images[${i}].${key}`);
    if (!format.image) nonImages.push(nonImageIssue(['body', 'images', i, key], format, policy));
    return image;
  };
  const decoded: NewEvent['images'] = [];
  for (const [i, { base64_image, input_base64_image, ...results }] of images.entries()) {
    decoded.push({ results, image: await decode(base64_image, i, 'base64Image'), input: await decode(input_base64_image, i, 'inputBase64Image') });
  }
  return { images: decoded, nonImages };
}
