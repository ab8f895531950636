/**
 * COCO records of exported images (docs/API.md, "Dataset export", "COCO"): pure functions from an
 * image and its predictions to COCO's `images`, `annotations` and `categories` entries.
 *
 * Detections, instance segmentations and keypoint groups each become one annotation with a
 * top-left `bbox` `[x, y, w, h]` clipped to the image (geometry.ts), `iscrowd` 0 and `score` (the
 * confidence). Segmentations add `segmentation` (flat polygons) and their polygons' area;
 * keypoint groups add `keypoints` `[x, y, v, ...]` (v 1 occluded, 2 visible, 0 not predicted)
 * and `num_keypoints`. A category's keypoint names are the keypoint ids seen under its class,
 * ascending, so a group's array is laid out only once the whole export was seen: keypoint
 * annotations are drafts until `finishKeypoints`. Classifications have no box: they go in the
 * image record's `classifications`.
 */
import type { StoredEvent } from '../events/types.js';
import type { ExportImage } from './export-types.js';
import { clippedBox, polygonArea, polygonsOf } from './geometry.js';
import type { PixelBox } from './geometry.js';

export interface CocoImage {
  id: number;
  /** The image's path in the zip, relative to the annotations file. */
  file_name: string;
  width: number;
  height: number;
  date_captured: string;
  event_id: string;
  classifications: { class: string; confidence: number }[];
}

export interface CocoAnnotation {
  id: number;
  image_id: number;
  category_id: number;
  bbox: [number, number, number, number];
  area: number;
  iscrowd: 0;
  score: number;
  segmentation?: number[][];
  keypoints?: number[];
  num_keypoints?: number;
}

export interface CocoCategory {
  id: number;
  name: string;
  supercategory: string;
  /** Keypoint names (the store's keypoint ids) for classes of keypoint groups. */
  keypoints?: string[];
  skeleton?: [number, number][];
}

/** A keypoint annotation before its keypoints are laid out: `[id, x, y, v]` per keypoint. */
export interface CocoKeypointDraft extends CocoAnnotation {
  points: [number, number, number, number][];
}

/** Categories by class name, with ids from 1 in order of first use, kept in memory. */
export class CocoCategories {
  private readonly byName = new Map<string, { id: number; keypointIds: Set<number> }>();
  private readonly names: string[] = [];

  /** The id of `name`'s category, made on first use. */
  idOf(name: string): number {
    let entry = this.byName.get(name);
    if (!entry) {
      entry = { id: this.byName.size + 1, keypointIds: new Set() };
      this.byName.set(name, entry);
      this.names.push(name);
    }
    return entry.id;
  }

  /** Records keypoint ids seen under `name` (they become the category's keypoint names). */
  noteKeypoints(name: string, ids: Iterable<number>): void {
    this.idOf(name);
    const entry = this.byName.get(name)!;
    for (const id of ids) entry.keypointIds.add(id);
  }

  /** The ascending keypoint ids of category `categoryId` (empty when it has none). */
  keypointIds(categoryId: number): number[] {
    return [...(this.byName.get(this.names[categoryId - 1])?.keypointIds ?? [])].sort((a, b) => a - b);
  }

  /** COCO's `categories`, by id; keypoint classes carry `keypoints` and an empty `skeleton`. */
  list(): CocoCategory[] {
    return this.names.map((name, index) => {
      const id = index + 1;
      const keypoints = this.keypointIds(id);
      return keypoints.length === 0
        ? { id, name, supercategory: 'none' }
        : { id, name, supercategory: 'none', keypoints: keypoints.map(String), skeleton: [] };
    });
  }
}

/** The COCO `images` record of `image` (of `event`), numbered `imageId`. */
export function cocoImage(event: StoredEvent, image: ExportImage, imageId: number): CocoImage {
  return {
    id: imageId,
    file_name: image.fileName,
    width: image.width,
    height: image.height,
    date_captured: event.inference_timestamp,
    event_id: event.id,
    classifications: image.results.classifications.map(({ class: name, confidence }) => ({ class: name, confidence })),
  };
}

/**
 * The annotations of `image`: finished ones, and keypoint drafts (`finishKeypoints` lays them out
 * once every keypoint id of their category is known). Objects whose box is outside the image are
 * left out.
 * @param nextId the next free annotation id (ids are unique across the export)
 */
export function cocoAnnotations(image: ExportImage, imageId: number, categories: CocoCategories, nextId: () => number): { annotations: CocoAnnotation[]; keypointDrafts: CocoKeypointDraft[] } {
  const { width, height, results } = image;
  const annotations: CocoAnnotation[] = [];
  const keypointDrafts: CocoKeypointDraft[] = [];
  const base = (name: string, box: PixelBox, confidence: number): CocoAnnotation => ({
    id: nextId(), image_id: imageId, category_id: categories.idOf(name),
    bbox: [box.left, box.top, box.width, box.height], area: box.width * box.height, iscrowd: 0, score: confidence,
  });
  for (const detection of results.object_detections) {
    const box = clippedBox(detection, width, height);
    if (box) annotations.push(base(detection.class, box, detection.confidence));
  }
  for (const segment of results.instance_segmentations) {
    const box = clippedBox(segment, width, height);
    if (!box) continue;
    const annotation = base(segment.class, box, segment.confidence);
    const polygons = polygonsOf(segment.points, width, height);
    if (polygons.length > 0) {
      annotation.segmentation = polygons;
      annotation.area = polygons.reduce((sum, polygon) => sum + polygonArea(polygon), 0);
    }
    annotations.push(annotation);
  }
  for (const group of results.keypoints) {
    const box = clippedBox(group, width, height);
    if (!box) continue;
    const points: [number, number, number, number][] = [];
    const seen = new Set<number>();
    for (const point of group.keypoints) {
      if (!Number.isInteger(point.id) || point.id < 0 || seen.has(point.id) || !Number.isFinite(point.x) || !Number.isFinite(point.y)) continue;
      seen.add(point.id);
      points.push([point.id, Math.min(Math.max(point.x, 0), width), Math.min(Math.max(point.y, 0), height), point.occluded ? 1 : 2]);
    }
    categories.noteKeypoints(group.class, seen);
    keypointDrafts.push({ ...base(group.class, box, group.confidence), points });
  }
  return { annotations, keypointDrafts };
}

/**
 * The finished annotation of a keypoint draft: `keypoints` holds `[x, y, v]` for each keypoint
 * id of its category in ascending order (`0, 0, 0` for ids the group did not predict) and
 * `num_keypoints` counts those it did.
 */
export function finishKeypoints(draft: CocoKeypointDraft, categories: CocoCategories): CocoAnnotation {
  const { points, ...annotation } = draft;
  const ids = categories.keypointIds(draft.category_id);
  const keypoints = new Array<number>(ids.length * 3).fill(0);
  for (const [id, x, y, visibility] of points) {
    const at = ids.indexOf(id) * 3;
    keypoints[at] = x;
    keypoints[at + 1] = y;
    keypoints[at + 2] = visibility;
  }
  return { ...annotation, keypoints, num_keypoints: points.length };
}
