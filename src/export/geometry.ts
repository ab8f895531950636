/**
 * The geometry every format shares (docs/API.md, "Dataset export", "Conversions"): the store's
 * centre-based boxes as top-left boxes clipped to the image, instance-segmentation points as
 * polygons, and polygon areas. Pixels throughout.
 */
import type { Detection } from '../events/types.js';

/** A box by its top-left corner and size, pixels, inside the image. */
export interface PixelBox {
  left: number;
  top: number;
  width: number;
  height: number;
}

const clamp = (value: number, max: number): number => Math.min(Math.max(value, 0), max);

/**
 * The box of `detection` (centre `x`, `y`; full `width`, `height`) as top-left and size, its
 * corners clipped to the `imageWidth` x `imageHeight` image: centre (50, 40), size (20, 10) is
 * left 40, top 35, 20 x 10.
 * @returns undefined when nothing of the box is inside the image (zero width or height after
 *   clipping, or non-finite numbers)
 */
export function clippedBox(detection: Detection, imageWidth: number, imageHeight: number): PixelBox | undefined {
  const left = clamp(detection.x - detection.width / 2, imageWidth);
  const top = clamp(detection.y - detection.height / 2, imageHeight);
  const right = clamp(detection.x + detection.width / 2, imageWidth);
  const bottom = clamp(detection.y + detection.height / 2, imageHeight);
  const width = right - left;
  const height = bottom - top;
  return width > 0 && height > 0 ? { left, top, width, height } : undefined;
}

/**
 * The polygons of an instance segmentation's `points`, each flat `[x1, y1, x2, y2, ...]` with its
 * points clamped into the image. `points` is read in either of its two shapes: every inner array
 * of length 2 is one polygon as point pairs (`[[x, y], [x, y], ...]`); otherwise each inner array
 * is a flat polygon of its own. A flat polygon of odd length loses its last number; polygons of
 * fewer than three points are dropped.
 */
export function polygonsOf(points: number[][], imageWidth: number, imageHeight: number): number[][] {
  const pairs = points.length > 0 && points.every((point) => point.length === 2);
  const flats = pairs ? [points.flat()] : points;
  const polygons: number[][] = [];
  for (const flat of flats) {
    const even = flat.length - (flat.length % 2);
    if (even < 6 || !flat.every(Number.isFinite)) continue;
    const polygon = new Array<number>(even);
    for (let i = 0; i < even; i += 2) {
      polygon[i] = clamp(flat[i], imageWidth);
      polygon[i + 1] = clamp(flat[i + 1], imageHeight);
    }
    polygons.push(polygon);
  }
  return polygons;
}

/** The area of a flat polygon (shoelace formula), square pixels. */
export function polygonArea(polygon: number[]): number {
  let twice = 0;
  for (let i = 0; i < polygon.length; i += 2) {
    const j = (i + 2) % polygon.length;
    twice += polygon[i] * polygon[j + 1] - polygon[j] * polygon[i + 1];
  }
  return Math.abs(twice) / 2;
}
