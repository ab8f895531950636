/**
 * Label Studio tasks of exported images (docs/API.md, "Dataset export", "Label Studio"): pure
 * functions from an image and its event to one task with one prediction, in Label Studio's JSON
 * format for pre-annotations (its guide "Import pre-annotated data into Label Studio"), and the
 * labeling configuration whose control names the results use.
 *
 * Every result carries `id`, `type`, `from_name`, `to_name` (`image`), `original_width`,
 * `original_height`, `image_rotation` 0, `value` and `score` (the confidence). Values are
 * percentages of the image's width (x) and height (y), 0-100:
 * - detections and the boxes of keypoint groups: `rectanglelabels` (from `box`), `x`, `y` the
 *   top-left corner, `width`, `height`, `rotation` 0; boxes clipped to the image (geometry.ts);
 * - instance segmentations: one `polygonlabels` result (from `polygon`) per polygon, `points` as
 *   `[x, y]` pairs;
 * - keypoints: one `keypointlabels` result (from `keypoint`) per keypoint, labelled
 *   `<class>:<keypoint id>`, `width` 0.5 (the point's drawn size); Label Studio has no
 *   visibility flag, so occluded keypoints are exported like visible ones;
 * - classifications: one `choices` result (from `class`) per class.
 * The prediction's `model_version` is `<workflow_id>@<workflow_version>` with null pieces left
 * out (`wf-1@3`, `wf-1`, `@3`; absent when both are null); its `score` the mean confidence.
 */
import type { StoredEvent } from '../events/types.js';
import type { ExportImage } from './export-types.js';
import { clippedBox, polygonsOf } from './geometry.js';

/** One result of a prediction. */
export interface LabelStudioResult {
  id: string;
  type: 'rectanglelabels' | 'polygonlabels' | 'keypointlabels' | 'choices';
  from_name: string;
  to_name: string;
  original_width?: number;
  original_height?: number;
  image_rotation?: number;
  value: Record<string, unknown>;
  score: number;
}

export interface LabelStudioTask {
  data: { image: string; event_id: string; device_id: string | null; event_schema: string; inference_timestamp: string };
  predictions: { model_version?: string; score: number; result: LabelStudioResult[] }[];
}

/** The control tags' names, as `labelStudioConfig` declares them. */
export const LABEL_STUDIO_CONTROLS = { box: 'box', polygon: 'polygon', keypoint: 'keypoint', choices: 'class', image: 'image' } as const;

/** Labels seen per control, kept in memory for the labeling configuration. */
export class LabelStudioLabels {
  readonly box = new Set<string>();
  readonly polygon = new Set<string>();
  readonly keypoint = new Set<string>();
  readonly choices = new Set<string>();
}

/** `model_version` of a prediction made by `event`'s workflow; undefined when it names none. */
export function modelVersion(event: StoredEvent): string | undefined {
  const version = `${event.workflow_id ?? ''}${event.workflow_version === null ? '' : `@${event.workflow_version}`}`;
  return version === '' ? undefined : version;
}

/**
 * The task of `image` (of `event`); `data.image` is the image's path in the zip. An image without
 * results has `predictions: []`. Labels used are added to `labels`.
 */
export function labelStudioTask(event: StoredEvent, image: ExportImage, labels: LabelStudioLabels): LabelStudioTask {
  const { width, height, results } = image;
  const percentX = (x: number) => (x / width) * 100;
  const percentY = (y: number) => (y / height) * 100;
  const result: LabelStudioResult[] = [];
  const spatial = (type: LabelStudioResult['type'], fromName: string, value: Record<string, unknown>, score: number) => {
    result.push({
      id: String(result.length + 1), type, from_name: fromName, to_name: LABEL_STUDIO_CONTROLS.image,
      original_width: width, original_height: height, image_rotation: 0, value, score,
    });
  };
  for (const object of [...results.object_detections, ...results.keypoints]) {
    const box = clippedBox(object, width, height);
    if (!box) continue;
    labels.box.add(object.class);
    spatial('rectanglelabels', LABEL_STUDIO_CONTROLS.box, {
      x: percentX(box.left), y: percentY(box.top), width: percentX(box.width), height: percentY(box.height),
      rotation: 0, rectanglelabels: [object.class],
    }, object.confidence);
  }
  for (const segment of results.instance_segmentations) {
    for (const polygon of polygonsOf(segment.points, width, height)) {
      const points: [number, number][] = [];
      for (let i = 0; i < polygon.length; i += 2) points.push([percentX(polygon[i]), percentY(polygon[i + 1])]);
      labels.polygon.add(segment.class);
      spatial('polygonlabels', LABEL_STUDIO_CONTROLS.polygon, { points, polygonlabels: [segment.class] }, segment.confidence);
    }
  }
  for (const group of results.keypoints) {
    for (const point of group.keypoints) {
      if (!Number.isFinite(point.x) || !Number.isFinite(point.y)) continue;
      const label = `${group.class}:${point.id}`;
      labels.keypoint.add(label);
      spatial('keypointlabels', LABEL_STUDIO_CONTROLS.keypoint, {
        x: percentX(Math.min(Math.max(point.x, 0), width)), y: percentY(Math.min(Math.max(point.y, 0), height)),
        width: 0.5, keypointlabels: [label],
      }, group.confidence);
    }
  }
  for (const classification of results.classifications) {
    labels.choices.add(classification.class);
    result.push({
      id: String(result.length + 1), type: 'choices', from_name: LABEL_STUDIO_CONTROLS.choices, to_name: LABEL_STUDIO_CONTROLS.image,
      value: { choices: [classification.class] }, score: classification.confidence,
    });
  }
  const task: LabelStudioTask = {
    data: { image: image.fileName, event_id: event.id, device_id: event.device_id, event_schema: event.event_schema, inference_timestamp: event.inference_timestamp },
    predictions: [],
  };
  if (result.length > 0) {
    const version = modelVersion(event);
    const score = result.reduce((sum, item) => sum + item.score, 0) / result.length;
    task.predictions.push(version === undefined ? { score, result } : { model_version: version, score, result });
  }
  return task;
}

const escapeXml = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * A labeling configuration (`labeling-config.xml`) that declares every control the tasks' results
 * name, with the labels seen: paste it into the project's Labeling Interface before importing.
 */
export function labelStudioConfig(labels: LabelStudioLabels): string {
  const control = (tag: string, name: string, values: Set<string>, child = 'Label') => values.size === 0
    ? []
    : [`  <${tag} name="${name}" toName="${LABEL_STUDIO_CONTROLS.image}"${tag === 'Choices' ? ' choice="multiple"' : ''}>`,
      ...[...values].map((value) => `    <${child} value="${escapeXml(value)}"/>`), `  </${tag}>`];
  return [
    '<View>',
    `  <Image name="${LABEL_STUDIO_CONTROLS.image}" value="$image"/>`,
    ...control('RectangleLabels', LABEL_STUDIO_CONTROLS.box, labels.box),
    ...control('PolygonLabels', LABEL_STUDIO_CONTROLS.polygon, labels.polygon),
    ...control('KeyPointLabels', LABEL_STUDIO_CONTROLS.keypoint, labels.keypoint),
    ...control('Choices', LABEL_STUDIO_CONTROLS.choices, labels.choices, 'Choice'),
    '</View>',
    '',
  ].join('\n');
}
