/**
 * The bounds on what one create carries beyond its bytes (docs/API.md, "Create an event";
 * docs/OPERATIONS.md, "Settings"): predictions per image (MAX_PREDICTIONS_PER_IMAGE) and per event
 * (MAX_PREDICTIONS_PER_EVENT), and points per event (MAX_POINTS_PER_EVENT). A create body within MAX_RECORD_SIZE_BYTES can still carry hundreds
 * of thousands of detections per image, or millions of polygon points (a 20 MiB body holds 3.5
 * million `[x,y]` pairs, each a JavaScript array of about 70 bytes once parsed: 12 times its text),
 * and every list page that returns such an event decodes and serializes them all; the bounds keep
 * one event's memory and time, on the create and on the read routes, in proportion to what a
 * pipeline really sends. The schema bounds each polygon and keypoint group (schemas/shapes.json);
 * these bound the sums.
 */
import { AppError } from '../errors.js';
import type { ImageResults } from './types.js';

/** The entries of an image that count: detections, segmentations, keypoint groups, classifications. */
export function predictionCount(image: ImageResults): number {
  return image.object_detections.length + image.instance_segmentations.length + image.keypoints.length + image.classifications.length;
}

/**
 * The points of an image: those of its instance segmentations' polygons and its keypoints. A
 * segmentation's `points` is one polygon of `[x, y]` pairs or several flat `[x1, y1, x2, y2, ...]`
 * polygons (src/export/geometry.ts reads both); either way each inner array counts as half its
 * numbers, rounded up, and at least one point (an empty or one-number array still costs an array).
 * Each keypoint counts one.
 * @returns points (a count)
 */
export function pointCount(image: ImageResults): number {
  let points = 0;
  for (const segmentation of image.instance_segmentations) {
    for (const inner of segmentation.points) points += Math.max(1, Math.ceil(inner.length / 2));
  }
  for (const group of image.keypoints) points += group.keypoints.length;
  return points;
}

/**
 * Checks every image of a validated, normalised create body against the bound on predictions.
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

/**
 * Checks a validated, normalised create body against the bound on predictions per event: those
 * `predictionCount` counts, summed over all its images. A create of 260,000 detections (26 images
 * of 10,000, within MAX_RECORD_SIZE_BYTES) cost 1.75 s of CPU to take, and each read of its event
 * (a search's check, an export's conversion) about 0.2 s; the bound keeps both in proportion
 * (native-bench/RESULTS.stalls.md).
 * @param images the images as `validateCreateBody` returns them (snake_case, arrays present)
 * @param maxPerEvent MAX_PREDICTIONS_PER_EVENT (entries per create)
 * @throws AppError validation_failed (422), one FastAPI-shaped issue at `['body', 'images', i]`,
 *   the image at which the sum passes the bound, naming MAX_PREDICTIONS_PER_EVENT and the event's total
 */
export function assertEventPredictionLimit(images: readonly ImageResults[], maxPerEvent: number): void {
  assertEventSum(images.map(predictionCount), maxPerEvent, {
    what: 'predictions (object detections, instance segmentations, keypoint groups and classifications, over all its images)',
    setting: 'MAX_PREDICTIONS_PER_EVENT',
    type: 'value_error.predictions.max_items',
  });
}

/**
 * Throws when `counts` (one per image) sum past `maxPerEvent`, naming the image at which the sum
 * passes it, the event's total, what was counted and the setting that bounds it.
 * @throws AppError validation_failed (422), one FastAPI-shaped issue at `['body', 'images', i]`
 */
function assertEventSum(counts: number[], maxPerEvent: number, bound: { what: string; setting: string; type: string }): void {
  const total = counts.reduce((sum, count) => sum + count, 0);
  if (total <= maxPerEvent) return;
  let sum = 0;
  const at = counts.findIndex((count) => (sum += count) > maxPerEvent);
  throw new AppError('validation_failed', [{
    loc: ['body', 'images', at],
    msg: `the event has ${total} ${bound.what}, passing the bound at image ${at}; ${bound.setting} allows at most ${maxPerEvent} per event`,
    type: bound.type,
  }]);
}

/**
 * Checks a validated, normalised create body against the bound on points: polygon points and
 * keypoints summed over all its images (docs/API.md, "Create an event").
 * @param images the images as `validateCreateBody` returns them (snake_case, arrays present)
 * @param maxPerEvent MAX_POINTS_PER_EVENT (points per create, counted as `pointCount` does)
 * @throws AppError validation_failed (422), one FastAPI-shaped issue at `['body', 'images', i]`,
 *   the image at which the sum passes the bound, naming MAX_POINTS_PER_EVENT and the event's total
 */
export function assertPointLimit(images: readonly ImageResults[], maxPerEvent: number): void {
  assertEventSum(images.map(pointCount), maxPerEvent, {
    what: 'points (instance segmentation polygon points and keypoints, over all its images)',
    setting: 'MAX_POINTS_PER_EVENT',
    type: 'value_error.points.max_items',
  });
}
