/**
 * Create (`POST /v2/events`; docs/API.md, "Create an event"): validation, `solution_required`, image decoding
 * (`image_decode_failed`), and the durable write. Answers only once the record and its image bytes are durable.
 */
import type { Config } from '../config.js';
import { AppError } from '../errors.js';
import type { EventStore } from '../store/event-store.js';
import { formatMicros } from '../store/timestamps.js';
import { decodeImage } from './decode-image.js';
import { assertPointLimit, assertPredictionLimit } from './prediction-limit.js';
import type { CreateEventInput } from './types.js';
import { validateCreateBody } from './validate.js';

/**
 * What a create needs of the store: `EventStore.create`, which resolves once the event and its
 * images are durable. Everything before it (validation, image decoding) is createEvent's own.
 */
export type EventWriter = Pick<EventStore, 'create'>;

/** The 201 body of a create (docs/API.md, "Response shapes"). */
export interface CreateResponse {
  id: string;
  image_ids: string[];
  created_at: string;
  draft: boolean;
  message: string;
}

/**
 * Validates and stores one event.
 * @param body the parsed JSON body, camelCase or snake_case
 * @throws AppError validation_failed / unknown_event_schema (422; validation_failed also
 *   for an image over MAX_PREDICTIONS_PER_IMAGE and an event over MAX_POINTS_PER_EVENT),
 *   event_data_invalid
 *   (400), solution_required (400), image_decode_failed (400), disk_full (507),
 *   store_failure (500)
 */
export async function createEvent(store: EventWriter, config: Config, body: unknown): Promise<CreateResponse> {
  const input = validateCreateBody(body);
  assertPredictionLimit(input.images, config.maxPredictionsPerImage);
  assertPointLimit(input.images, config.maxPointsPerEvent);
  if (input.solution === null && config.defaultSolutionId === undefined && config.cloudUploadUrl !== undefined) {
    throw new AppError('solution_required');
  }
  const images = await decodeImages(input);
  const created = await store.create({ fields: input, images });
  return {
    id: created.id,
    image_ids: created.image_ids,
    created_at: formatMicros(created.created_at),
    draft: created.draft,
    message: created.draft ? 'Draft event created' : 'Event created',
  };
}

function decodeImages(input: CreateEventInput) {
  return Promise.all(
    input.images.map(async ({ base64_image, input_base64_image, ...results }, i) => ({
      results,
      image: base64_image === null ? null : await decodeImage(base64_image, `images[${i}].base64Image`),
      input: input_base64_image === null ? null : await decodeImage(input_base64_image, `images[${i}].inputBase64Image`),
    })),
  );
}
