/**
 * The largest create bodies the store accepts, each at the caps of docs/API.md, "Create an event"
 * (MAX_RECORD_SIZE_BYTES, MAX_POINTS_PER_EVENT, MAX_PREDICTIONS_PER_IMAGE, the schema's 10,000
 * points per polygon): the heaviest valid requests for memory and for the HTTP thread, used by
 * `npm run memory-peak` (scripts/memory-peak.ts) and the tests of the bounds (scripts/lib is the
 * one place for harness code both use).
 */
import { fixture } from './fixtures.js';

/** The caps a maximal body is built to (the store's settings; defaults of docs/OPERATIONS.md). */
export interface CreateCaps {
  /** MAX_RECORD_SIZE_BYTES (bytes). */
  maxRecordSizeBytes: number;
  /** MAX_POINTS_PER_EVENT (points). */
  maxPointsPerEvent: number;
  /** MAX_PREDICTIONS_PER_IMAGE (entries per image). */
  maxPredictionsPerImage: number;
  /** MAX_PREDICTIONS_PER_EVENT (entries per create). */
  maxPredictionsPerEvent: number;
}

/** The default caps of a store with no settings (src/config.ts). */
export const DEFAULT_CAPS: CreateCaps = { maxRecordSizeBytes: 20 * 1024 * 1024, maxPointsPerEvent: 100_000, maxPredictionsPerImage: 10_000, maxPredictionsPerEvent: 100_000 };

/** Points per polygon the schema accepts (schemas/shapes.json, `points`). */
export const MAX_POINTS_PER_POLYGON = 10_000;

/** The kinds of maximal create (what fills the body). */
export type MaximalKind = 'image' | 'points' | 'detections';

/** Every kind, in the order `npm run memory-peak` sends them. */
export const MAXIMAL_KINDS: readonly MaximalKind[] = ['image', 'points', 'detections'];

/** Bytes kept below MAX_RECORD_SIZE_BYTES (the body is built to end just under it). */
const SLACK_BYTES = 1024;

const envelope = (images: unknown[]): Record<string, unknown> => ({
  inference_timestamp: '2026-11-22T01:00:00Z',
  event_schema: 'custom',
  event_data: { value: 'maximal' },
  device_id: 'cam-max',
  images,
});

/**
 * Segmentations holding `points` [x, y] pairs in all, at most MAX_POINTS_PER_POLYGON each.
 * @param dense the shortest text per point (`[1,2]`, 6 bytes, about 12 times that once parsed:
 *   the most memory per body byte a valid create can carry), else pixel coordinates with decimals
 *   as a segmentation model writes them
 */
export function segmentations(points: number, dense: boolean): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (let left = points; left > 0; left -= MAX_POINTS_PER_POLYGON) {
    const n = Math.min(left, MAX_POINTS_PER_POLYGON);
    const polygon = Array.from({ length: n }, (_, i) => (dense ? [i % 10, (i >> 3) % 10] : [1000 + ((i * 7.31) % 900) + 0.25, 500 + ((i * 3.17) % 500) + 0.5]));
    out.push({ class: 'part', x: 960, y: 540, width: 1800, height: 1000, confidence: 0.91, points: polygon });
  }
  return out;
}

/** Base64 of a real JPEG followed by filler bytes, exactly `length` characters (a multiple of 4). */
function paddedJpegBase64(length: number): string {
  const jpeg = fixture('cat.jpg');
  const bytes = Buffer.alloc(Math.max(jpeg.length, Math.floor(length / 4) * 3), 0x5a);
  jpeg.copy(bytes);
  return bytes.toString('base64');
}

/**
 * One maximal valid create body of `kind`, as JSON text of at most `caps.maxRecordSizeBytes`:
 * - `image`: one image whose base64 fills the body, with MAX_POINTS_PER_EVENT polygon points in
 *   model-like coordinates: the largest body, and the most geometry a create may carry;
 * - `points`: MAX_POINTS_PER_EVENT polygon points and nothing else, in the densest text: the most
 *   parsed memory per body byte, so the most of it MAX_INFLIGHT_BODY_BYTES lets in at once;
 * - `detections`: images of MAX_PREDICTIONS_PER_IMAGE detections each, as many as fit the body
 *   (up to the schema's 100 images) and MAX_PREDICTIONS_PER_EVENT: the most objects one valid
 *   create can carry (10 images of 10,000 by default; 26, 260,000 detections, before that bound).
 */
export function maximalCreate(kind: MaximalKind, caps: CreateCaps = DEFAULT_CAPS): string {
  const room = caps.maxRecordSizeBytes - SLACK_BYTES;
  if (kind === 'points') return JSON.stringify(envelope([{ label: 'dense', instance_segmentations: segmentations(caps.maxPointsPerEvent, true) }]));
  if (kind === 'image') {
    const image = { label: 'full', base64_image: '', instance_segmentations: segmentations(caps.maxPointsPerEvent, false) };
    const without = JSON.stringify(envelope([image])).length;
    if (without > room) throw new Error(`MAX_POINTS_PER_EVENT=${caps.maxPointsPerEvent} alone passes MAX_RECORD_SIZE_BYTES=${caps.maxRecordSizeBytes}`);
    image.base64_image = paddedJpegBase64(room - without);
    return JSON.stringify(envelope([image]));
  }
  const detection = (i: number) => ({ class: `c${i % 80}`, x: 100 + (i % 1700), y: 50 + (i % 1000), width: 40.5, height: 80.25, confidence: 0.875 });
  const image = { label: 'crowd', object_detections: Array.from({ length: caps.maxPredictionsPerImage }, (_, i) => detection(i)) };
  const perImage = JSON.stringify(image).length + 1;
  const fits = Math.max(1, Math.min(100, Math.floor(caps.maxPredictionsPerEvent / caps.maxPredictionsPerImage), Math.floor((room - JSON.stringify(envelope([])).length) / perImage)));
  return JSON.stringify(envelope(Array.from({ length: fits }, () => image)));
}
