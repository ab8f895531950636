/**
 * The per-image bound on predictions (MAX_PREDICTIONS_PER_IMAGE; docs/OPERATIONS.md, "Settings"). A
 * create body within MAX_RECORD_SIZE_BYTES can still carry hundreds of thousands of detections per
 * image, and every list page that returns such an event decodes and serializes them all; the bound
 * keeps one event's cost on the read routes in proportion to what a pipeline really sends.
 */
import { AppError } from '../errors.js';
import type { ImageResults } from './types.js';

/** The entries of an image that count: detections, segmentations, keypoint groups, classifications. */
export function predictionCount(image: ImageResults): number {
  return image.object_detections.length + image.instance_segmentations.length + image.keypoints.length + image.classifications.length;
}

/**
 * Checks every image of a validated, normalised create body against the bound.
 * @param images the images as `validateCreateBody` returns them (snake_case, arrays present)
 * @param maxPerImage MAX_PREDICTIONS_PER_IMAGE (entries per image)
 * @throws AppError validation_failed (422), one FastAPI-shaped issue at `['body', 'images', i]`
 *   naming MAX_PREDICTIONS_PER_IMAGE, for the first image over the bound
 */
export function assertPredictionLimit(images: readonly ImageResults[], maxPerImage: number): void {
  images.forEach((image, i) => {
    const count = predictionCount(image);
    if (count <= maxPerImage) return;
    throw new AppError('validation_failed', [{
      loc: ['body', 'images', i],
      msg: `image ${i} has ${count} predictions (object detections, instance segmentations, keypoint groups and classifications); `
        + `MAX_PREDICTIONS_PER_IMAGE allows at most ${maxPerImage} per image`,
      type: 'value_error.predictions.max_items',
    }]);
  });
}
