/**
 * The dataset export's conversions (docs/API.md, "Dataset export", "Conversions"), on known
 * boxes: the store's centre-based boxes as COCO's top-left boxes, YOLO's normalised centres and
 * Label Studio's percentages; both shapes of segmentation points; keypoint visibility; what each
 * format leaves out.
 */
import t from 'tap';
import { CocoCategories, cocoAnnotations, cocoImage, finishKeypoints } from '../src/export/coco-format.js';
import { exportEventOf } from '../src/export/export-event.js';
import type { ExportImage } from '../src/export/export-types.js';
import { clippedBox, polygonArea, polygonsOf } from '../src/export/geometry.js';
import { imageDimensions, imageFileName } from '../src/export/image-file.js';
import { LabelStudioLabels, labelStudioConfig, labelStudioTask, modelVersion } from '../src/export/label-studio-format.js';
import { YoloClasses, yoloDataYaml, yoloLabelLines, yoloLabelPath } from '../src/export/yolo-format.js';
import { fixture } from './support/events.js';
import { results, storedEvent } from './support/export-data.js';

const box = { class: 'car', x: 50, y: 40, width: 20, height: 10, confidence: 0.9 };

/** A 100 x 80 image at images/f1.jpg with `overrides` as its results. */
function image(overrides: Parameters<typeof results>[0] = {}): ExportImage {
  return { fileId: 'f1', contentType: 'image/jpeg', fileName: 'images/f1.jpg', width: 100, height: 80, results: results(overrides) };
}

function counter(): () => number {
  let id = 0;
  return () => ++id;
}

t.test('a centre-based box becomes top-left, clipped to the image', async (t) => {
  t.same(clippedBox(box, 100, 80), { left: 40, top: 35, width: 20, height: 10 });
  t.same(clippedBox({ ...box, x: 95, y: 2 }, 100, 80), { left: 85, top: 0, width: 15, height: 7 }, 'corners clipped at the edges');
  t.equal(clippedBox({ ...box, x: 200 }, 100, 80), undefined, 'a box outside the image is left out');
  t.equal(clippedBox({ ...box, width: 0 }, 100, 80), undefined, 'a box without area is left out');
  t.equal(clippedBox({ ...box, x: Number.NaN }, 100, 80), undefined);
});

t.test('COCO: bbox [x, y, w, h] from the top-left, area, score, iscrowd 0', async (t) => {
  const categories = new CocoCategories();
  const { annotations, keypointDrafts } = cocoAnnotations(image({ object_detections: [box, { ...box, class: 'bus', x: 10, y: 10 }] }), 7, categories, counter());
  t.same(annotations, [
    { id: 1, image_id: 7, category_id: 1, bbox: [40, 35, 20, 10], area: 200, iscrowd: 0, score: 0.9 },
    { id: 2, image_id: 7, category_id: 2, bbox: [0, 5, 20, 10], area: 200, iscrowd: 0, score: 0.9 },
  ]);
  t.same(keypointDrafts, []);
  t.same(categories.list(), [{ id: 1, name: 'car', supercategory: 'none' }, { id: 2, name: 'bus', supercategory: 'none' }]);
});

t.test('COCO: classifications go in the image record, which names its file and size', async (t) => {
  const event = storedEvent('ev-1', [{ fileId: 'f1' }]);
  const record = cocoImage(event, image({ classifications: [{ class: 'night', confidence: 0.8 }] }), 3);
  t.same(record, {
    id: 3, file_name: 'images/f1.jpg', width: 100, height: 80, date_captured: '2026-11-22T01:00:00Z', event_id: 'ev-1',
    classifications: [{ class: 'night', confidence: 0.8 }],
  });
  const { annotations } = cocoAnnotations(image({ classifications: [{ class: 'night', confidence: 0.8 }] }), 3, new CocoCategories(), counter());
  t.same(annotations, [], 'no annotation without a box');
});

t.test('segmentation points in both shapes become the same flat polygons', async (t) => {
  const pairs = [[40, 35], [60, 35], [60, 45], [40, 45]];
  const flat = [[40, 35, 60, 35, 60, 45, 40, 45]];
  t.same(polygonsOf(pairs, 100, 80), [[40, 35, 60, 35, 60, 45, 40, 45]], 'one polygon of [x, y] pairs');
  t.same(polygonsOf(flat, 100, 80), [[40, 35, 60, 35, 60, 45, 40, 45]], 'flat polygons');
  t.same(polygonsOf([[0, 0, 10, 0, 10, 10], [20, 20, 30, 20, 30, 30, 99]], 100, 80), [[0, 0, 10, 0, 10, 10], [20, 20, 30, 20, 30, 30]], 'several flat polygons; an odd last number is dropped');
  t.same(polygonsOf([[1, 1], [2, 2]], 100, 80), [], 'fewer than three points: no polygon');
  t.same(polygonsOf([[-5, 10], [150, 10], [150, 90]], 100, 80), [[0, 10, 100, 10, 100, 80]], 'points clamped into the image');
  t.equal(polygonArea([40, 35, 60, 35, 60, 45, 40, 45]), 200);

  const categories = new CocoCategories();
  const { annotations } = cocoAnnotations(image({ instance_segmentations: [{ ...box, points: [[40, 35], [60, 35], [50, 45]] }] }), 1, categories, counter());
  t.same(annotations, [{ id: 1, image_id: 1, category_id: 1, bbox: [40, 35, 20, 10], area: 100, iscrowd: 0, score: 0.9, segmentation: [[40, 35, 60, 35, 50, 45]] }], 'COCO area is the polygon area');
});

t.test('COCO keypoints: v 2 visible, 1 occluded, 0 not predicted, laid out by the category\'s ids', async (t) => {
  const categories = new CocoCategories();
  const person = (keypoints: { id: number; x: number; y: number; occluded: boolean }[]) => ({ ...box, class: 'person', keypoints });
  const first = cocoAnnotations(image({ keypoints: [person([{ id: 3, x: 45, y: 38, occluded: false }, { id: 0, x: 55, y: 42, occluded: true }])] }), 1, categories, counter());
  const second = cocoAnnotations(image({ keypoints: [person([{ id: 5, x: 150, y: 40, occluded: false }])] }), 2, categories, counter());
  const [a] = first.keypointDrafts.map((draft) => finishKeypoints(draft, categories));
  const [b] = second.keypointDrafts.map((draft) => finishKeypoints(draft, categories));
  t.same(categories.list(), [{ id: 1, name: 'person', supercategory: 'none', keypoints: ['0', '3', '5'], skeleton: [] }]);
  t.same(a.keypoints, [55, 42, 1, 45, 38, 2, 0, 0, 0]);
  t.equal(a.num_keypoints, 2);
  t.same(b.keypoints, [0, 0, 0, 0, 0, 0, 100, 40, 2], 'a keypoint outside the image is clamped to its edge');
  t.equal(b.num_keypoints, 1);
});

t.test('YOLO: class cx cy w h normalised by the image size', async (t) => {
  const classes = new YoloClasses();
  const lines = yoloLabelLines(image({
    object_detections: [box],
    instance_segmentations: [{ ...box, class: 'bus', points: [] }],
    keypoints: [{ ...box, class: 'person', keypoints: [] }],
    classifications: [{ class: 'night', confidence: 0.5 }],
  }), classes);
  t.same(lines, ['0 0.500000 0.500000 0.200000 0.125000', '1 0.500000 0.500000 0.200000 0.125000', '2 0.500000 0.500000 0.200000 0.125000']);
  t.same(classes.names(), ['car', 'bus', 'person'], 'classifications make no class');
  t.same(yoloLabelLines(image({ object_detections: [{ ...box, x: 95, y: 2 }] }), classes), ['0 0.925000 0.043750 0.150000 0.087500'], 'clipped, then normalised');
  t.equal(yoloLabelPath('images/abc.jpg'), 'labels/abc.txt');
  t.equal(yoloDataYaml(['car', 'a "b"']), 'path: .\ntrain: images\nval: images\nnc: 2\nnames:\n  0: "car"\n  1: "a \\"b\\""\n');
});

t.test('Label Studio: percentages, result fields, model_version from the workflow', async (t) => {
  const labels = new LabelStudioLabels();
  const event = storedEvent('ev-1', [{ fileId: 'f1' }]);
  const task = labelStudioTask(event, image({
    object_detections: [box],
    instance_segmentations: [{ ...box, class: 'bus', points: [[40, 35, 60, 35, 50, 45]] }],
    keypoints: [{ ...box, class: 'person', confidence: 0.7, keypoints: [{ id: 1, x: 25, y: 20, occluded: true }] }],
    classifications: [{ class: 'night', confidence: 0.6 }],
  }), labels);
  t.same(task.data, { image: 'images/f1.jpg', event_id: 'ev-1', device_id: 'cam-1', event_schema: 'custom', inference_timestamp: '2026-11-22T01:00:00Z' });
  t.equal(task.predictions.length, 1);
  const [prediction] = task.predictions;
  t.equal(prediction.model_version, 'wf-1@3');
  const common = { to_name: 'image', original_width: 100, original_height: 80, image_rotation: 0 };
  t.same(prediction.result, [
    { id: '1', type: 'rectanglelabels', from_name: 'box', ...common, value: { x: 40, y: 43.75, width: 20, height: 12.5, rotation: 0, rectanglelabels: ['car'] }, score: 0.9 },
    { id: '2', type: 'rectanglelabels', from_name: 'box', ...common, value: { x: 40, y: 43.75, width: 20, height: 12.5, rotation: 0, rectanglelabels: ['person'] }, score: 0.7 },
    { id: '3', type: 'polygonlabels', from_name: 'polygon', ...common, value: { points: [[40, 43.75], [60, 43.75], [50, 56.25]], polygonlabels: ['bus'] }, score: 0.9 },
    { id: '4', type: 'keypointlabels', from_name: 'keypoint', ...common, value: { x: 25, y: 25, width: 0.5, keypointlabels: ['person:1'] }, score: 0.7 },
    { id: '5', type: 'choices', from_name: 'class', to_name: 'image', value: { choices: ['night'] }, score: 0.6 },
  ]);
  t.equal(prediction.score, (0.9 + 0.7 + 0.9 + 0.7 + 0.6) / 5, 'the prediction scores the mean confidence');
  const config = labelStudioConfig(labels);
  for (const control of ['<RectangleLabels name="box" toName="image">', '<PolygonLabels name="polygon" toName="image">', '<KeyPointLabels name="keypoint" toName="image">', '<Choices name="class" toName="image" choice="multiple">', '<Label value="person:1"/>', '<Choice value="night"/>', '<Image name="image" value="$image"/>']) {
    t.match(config, control);
  }
  t.same(labelStudioTask(event, image(), labels).predictions, [], 'no results, no prediction');
});

t.test('model_version leaves null pieces out', async (t) => {
  const event = storedEvent('ev', []);
  t.equal(modelVersion(event), 'wf-1@3');
  t.equal(modelVersion({ ...event, workflow_version: null }), 'wf-1');
  t.equal(modelVersion({ ...event, workflow_id: null }), '@3');
  t.equal(modelVersion({ ...event, workflow_id: null, workflow_version: null }), undefined);
});

t.test('images are named by file id and content type and measured from their headers', async (t) => {
  const id = '01a21826-5363-7be8-a9c6-bc9bde0e703e';
  t.equal(imageFileName(id, 'image/jpeg'), `images/${id}.jpg`);
  t.equal(imageFileName(id, 'image/png'), `images/${id}.png`);
  t.equal(imageFileName(id, 'application/x-unknown-thing'), `images/${id}.bin`);
  // #31 item 9: an id a hub stored unchecked never reaches an entry name.
  for (const forged of ['../../../../tmp/x', '/etc/passwd', 'a\\..\\b', 'x.jpg', 'a b', 'é', 'x'.repeat(65)]) {
    const name = imageFileName(forged, 'image/jpeg');
    t.match(name, /^images\/id-[0-9a-f]{32}\.jpg$/, `${JSON.stringify(forged)} becomes ${name}`);
    t.equal(imageFileName(forged, 'image/jpeg'), name, 'the same name every time');
  }
  t.not(imageFileName('../a', 'image/jpeg'), imageFileName('../b', 'image/jpeg'), 'two ids, two names');
  t.same(imageDimensions(fixture('cat.jpg')), { width: 451, height: 300 });
  t.same(imageDimensions(fixture('rocket.jpg')), { width: 640, height: 427 });
  t.equal(imageDimensions(Buffer.from('not an image')), undefined);
});

t.test('an event exports the file_id of each image, never input_file_id', async (t) => {
  const event = storedEvent('ev', [{ fileId: 'a', inputFileId: 'a-in' }, { fileId: 'b' }]);
  event.images.push({ ...results(), file_id: null, input_file_id: 'c-in' });
  const exported = exportEventOf(event, (id) => (id === 'a' ? 'image/png' : undefined));
  t.same(exported.images.map((i) => [i.fileId, i.contentType]), [['a', 'image/png'], ['b', 'application/octet-stream']]);
  t.notOk('file_id' in exported.images[0].results, 'results carry no file ids');
});
