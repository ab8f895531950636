/**
 * YOLO (Ultralytics detect) labels of exported images (docs/API.md, "Dataset export", "YOLO"):
 * pure functions from an image's predictions to its label file and from the classes to
 * `data.yaml`.
 *
 * Every object with a box (detections, and the boxes of instance segmentations and keypoint
 * groups) is one line `class_index cx cy w h`: the box clipped to the image (geometry.ts), its
 * centre and size divided by the image's width and height, so each value is in [0, 1], written
 * with 6 decimals. The detect format has no place for polygons, keypoints or classifications:
 * they are not exported.
 */
import type { Detection } from '../events/types.js';
import type { ExportImage } from './export-types.js';
import { clippedBox } from './geometry.js';

/** Class indices by name, from 0 in order of first use, kept in memory. */
export class YoloClasses {
  private readonly indices = new Map<string, number>();

  /** The index of `name`, made on first use. */
  indexOf(name: string): number {
    let index = this.indices.get(name);
    if (index === undefined) {
      index = this.indices.size;
      this.indices.set(name, index);
    }
    return index;
  }

  /** Class names by index. */
  names(): string[] {
    return [...this.indices.keys()];
  }
}

const sixDecimals = (value: number): string => Math.min(Math.max(value, 0), 1).toFixed(6);

/** The label lines of `image` (no trailing newline on the last); objects outside it are left out. */
export function yoloLabelLines(image: ExportImage, classes: YoloClasses): string[] {
  const { width, height, results } = image;
  const boxed: Detection[] = [...results.object_detections, ...results.instance_segmentations, ...results.keypoints];
  const lines: string[] = [];
  for (const object of boxed) {
    const box = clippedBox(object, width, height);
    if (!box) continue;
    const cx = (box.left + box.width / 2) / width;
    const cy = (box.top + box.height / 2) / height;
    lines.push(`${classes.indexOf(object.class)} ${sixDecimals(cx)} ${sixDecimals(cy)} ${sixDecimals(box.width / width)} ${sixDecimals(box.height / height)}`);
  }
  return lines;
}

/** `labels/<basename>.txt` for an image at `images/<basename>.<ext>`. */
export function yoloLabelPath(imageFileName: string): string {
  const base = imageFileName.slice(imageFileName.lastIndexOf('/') + 1);
  const dot = base.lastIndexOf('.');
  return `labels/${dot > 0 ? base.slice(0, dot) : base}.txt`;
}

/**
 * `data.yaml` as Ultralytics reads it: `path: .` (the directory the zip is extracted to),
 * `train` and `val` both `images` (the export has no split), `nc` and `names` by index. Names
 * are written as YAML double-quoted scalars (JSON string syntax, which YAML accepts).
 */
export function yoloDataYaml(names: string[]): string {
  const lines = ['path: .', 'train: images', 'val: images', `nc: ${names.length}`, names.length === 0 ? 'names: {}' : 'names:'];
  names.forEach((name, index) => lines.push(`  ${index}: ${JSON.stringify(name)}`));
  return `${lines.join('\n')}\n`;
}
