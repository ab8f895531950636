/**
 * The dataset export written for real (docs/API.md, "Dataset export"): zips of fixture photos
 * written into temporary files by writeDataset, read back with yauzl and checked against each
 * format's published description; the images byte-identical; backpressure, an abandoned
 * consumer, a failing read, and ZIP64 past 65,535 entries.
 */
import t from 'tap';
import type { Test } from 'tap';
import { execFileSync } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { finished } from 'node:stream/promises';
import { AppError } from '../src/errors.js';
import type { ResponseStream } from '../src/http/exchange.js';
import { DatasetZip } from '../src/export/dataset-zip.js';
import { writableSink } from './support/writable-sink.js';
import type { ByteSink } from '../src/export/dataset-zip.js';
import { writeDataset } from '../src/export/dataset-writer.js';
import type { ExportFormat, ExportSummary } from '../src/export/export-types.js';
import { fixture } from './support/events.js';
import { requireProgram } from './support/host-program.js';
import { COCO_CHECK_PY, cocoProblems, exportEvents, listZip, readZip, results, storedEvent } from './support/export-data.js';

// Two tests count the export's temporary folders (`edge-export-*` in os.tmpdir()): this process
// gets a temp dir of its own, so an export of another test file running meanwhile (tap runs 3
// files at once) is not counted as one left behind. os.tmpdir() reads TMPDIR at each call.
const ownTempDir = mkdtempSync(path.join(os.tmpdir(), 'export-zip-test-'));
process.env.TMPDIR = ownTempDir;
process.once('exit', () => rmSync(ownTempDir, { recursive: true, force: true }));

const photos: Record<string, Buffer> = { cat: fixture('cat.jpg'), rocket: fixture('rocket.jpg'), camera: fixture('camera.jpg'), retina: fixture('retina.jpg') };
const sizes: Record<string, [number, number]> = { cat: [451, 300], rocket: [640, 427], camera: [512, 512], retina: [1411, 1411] };

/** Four events over the four photos, with every kind of prediction; `gone` has no file. */
function events() {
  const detection = (cls: string, x: number, y: number, w: number, h: number, confidence = 0.9) => ({ class: cls, x, y, width: w, height: h, confidence });
  return [
    storedEvent('ev-1', [{ fileId: 'cat', inputFileId: 'cat-input', results: {
      object_detections: [detection('cat', 225, 150, 200, 180), detection('cat', 440, 290, 40, 40, 0.4)],
      classifications: [{ class: 'indoor', confidence: 0.8 }],
    } }]),
    storedEvent('ev-2', [
      { fileId: 'rocket', results: { instance_segmentations: [{ ...detection('rocket', 320, 200, 100, 300), points: [[300, 60], [340, 60], [350, 340], [290, 340]] }] } },
      { fileId: 'gone', results: { object_detections: [detection('cat', 10, 10, 5, 5)] } },
    ], { workflow_version: null }),
    storedEvent('ev-3', [{ fileId: 'camera', results: {
      keypoints: [{ ...detection('person', 256, 256, 200, 400), keypoints: [{ id: 0, x: 250, y: 100, occluded: false }, { id: 2, x: 260, y: 300, occluded: true }] }],
      instance_segmentations: [{ ...detection('person', 256, 256, 200, 400), points: [[160, 60, 350, 60, 350, 450], [170, 70, 180, 70, 180, 80]] }],
    } }]),
    storedEvent('ev-4', [{ fileId: 'retina', results: results() }], { workflow_id: null, workflow_version: null }),
  ];
}

/** The route hands a started response to writeDataset as its sink: the shapes must stay compatible. */
export const responseIsASink = (response: ResponseStream): ByteSink => response;

const readImage = async (fileId: string) => photos[fileId] ?? null;

/** Writes the export of `events()` in `format` to a temporary file; returns its path and summary. */
async function exportToFile(t: Test, format: ExportFormat): Promise<{ zipPath: string; summary: ExportSummary }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'export-test-'));
  t.teardown(() => execFileSync('rm', ['-rf', dir]));
  const zipPath = path.join(dir, `dataset-${format}.zip`);
  const out = createWriteStream(zipPath);
  const summary = await writeDataset(format, exportEvents(events()), readImage, writableSink(out));
  await finished(out);
  return { zipPath, summary };
}

/** The images of the zip are the source bytes, STOREd, named by file id; no input image. */
function checkImages(t: Test, entries: { name: string; method: number; bytes: Buffer }[]): void {
  const images = entries.filter((e) => e.name.startsWith('images/'));
  t.same(images.map((e) => e.name), ['images/cat.jpg', 'images/rocket.jpg', 'images/camera.jpg', 'images/retina.jpg']);
  for (const entry of images) {
    const id = entry.name.slice('images/'.length, -'.jpg'.length);
    t.ok(entry.bytes.equals(photos[id]), `${entry.name} is byte-identical to its source`);
    t.equal(entry.method, 0, `${entry.name} is STOREd`);
  }
}

const expectedSummary = (annotations: number) => ({ events: 4, images: 4, skippedImages: 1, annotations, aborted: false });

t.test('COCO: a consistent annotations.coco.json beside the images', async (t) => {
  const { zipPath, summary } = await exportToFile(t, 'coco');
  const entries = await readZip(zipPath);
  t.same(entries.map((e) => e.name).at(-1), 'annotations.coco.json', 'the annotations come last');
  checkImages(t, entries);
  const doc = JSON.parse(entries.at(-1)!.bytes.toString());
  t.same(cocoProblems(doc), [], 'consistent per the COCO format');
  t.same(doc.images.map((i: any) => [i.file_name, i.width, i.height]), [
    ['images/cat.jpg', ...sizes.cat], ['images/rocket.jpg', ...sizes.rocket], ['images/camera.jpg', ...sizes.camera], ['images/retina.jpg', ...sizes.retina],
  ]);
  t.same(doc.categories.map((c: any) => c.name), ['cat', 'rocket', 'person']);
  t.same(doc.annotations.length, 5, 'two detections, two segmentations, one keypoint group');
  t.same(doc.annotations.find((a: any) => a.score === 0.4).bbox, [420, 270, 31, 30], 'a box over the edge is clipped to the image');
  const keypoints = doc.annotations.find((a: any) => a.keypoints);
  t.same(keypoints.keypoints, [250, 100, 2, 260, 300, 1]);
  t.same(doc.images[0].classifications, [{ class: 'indoor', confidence: 0.8 }]);
  t.same(summary, { ...expectedSummary(5), bytes: summary.bytes });
  t.ok(summary.bytes > Object.values(photos).reduce((sum, b) => sum + b.length, 0));
});

t.test('COCO: Python\'s json module loads the document and finds it consistent', async (t) => {
  const python = requireProgram('python3');
  const { zipPath } = await exportToFile(t, 'coco');
  const entries = await readZip(zipPath);
  const jsonPath = path.join(path.dirname(zipPath), 'annotations.coco.json');
  writeFileSync(jsonPath, entries.find((e) => e.name === 'annotations.coco.json')!.bytes);
  const scriptPath = path.join(path.dirname(zipPath), 'check.py');
  writeFileSync(scriptPath, COCO_CHECK_PY);
  const report = JSON.parse(execFileSync(python, [scriptPath, jsonPath], { encoding: 'utf8' }));
  t.same(report, { images: 4, annotations: 5, categories: 3, problems: [] });
});

t.test('YOLO: label files parse, values in [0, 1], class indices below nc', async (t) => {
  const { zipPath, summary } = await exportToFile(t, 'yolo');
  const entries = await readZip(zipPath);
  checkImages(t, entries);
  t.same(entries.map((e) => e.name), [
    'images/cat.jpg', 'labels/cat.txt', 'images/rocket.jpg', 'labels/rocket.txt',
    'images/camera.jpg', 'labels/camera.txt', 'images/retina.jpg', 'labels/retina.txt', 'data.yaml',
  ]);
  const yaml = entries.at(-1)!.bytes.toString();
  t.match(yaml, /^path: \.\ntrain: images\nval: images\nnc: 3\nnames:\n/);
  const nc = Number(/^nc: (\d+)$/m.exec(yaml)![1]);
  const names = [...yaml.matchAll(/^ {2}(\d+): "(.*)"$/gm)].map((m) => [Number(m[1]), m[2]]);
  t.same(names, [[0, 'cat'], [1, 'rocket'], [2, 'person']]);
  let lines = 0;
  for (const entry of entries.filter((e) => e.name.startsWith('labels/'))) {
    const text = entry.bytes.toString();
    for (const line of text.split('\n').filter(Boolean)) {
      const fields = line.split(' ');
      t.equal(fields.length, 5, `${entry.name}: 5 fields`);
      t.ok(Number.isInteger(Number(fields[0])) && Number(fields[0]) < nc, `${entry.name}: class index below nc`);
      t.ok(fields.slice(1).every((f) => Number(f) >= 0 && Number(f) <= 1), `${entry.name}: ${line} normalised`);
      lines += 1;
    }
  }
  t.equal(entries.find((e) => e.name === 'labels/retina.txt')!.bytes.length, 0, 'an image without boxes has an empty label file');
  t.equal(entries.find((e) => e.name === 'labels/cat.txt')!.bytes.toString().split('\n')[0], '0 0.498891 0.500000 0.443459 0.600000');
  t.same(summary, { ...expectedSummary(lines), bytes: summary.bytes });
});

t.test('Label Studio: one task per image, results in percent of the image', async (t) => {
  const { zipPath, summary } = await exportToFile(t, 'labelstudio');
  const entries = await readZip(zipPath);
  checkImages(t, entries);
  t.same(entries.slice(-2).map((e) => e.name), ['tasks.json', 'labeling-config.xml']);
  const tasks = JSON.parse(entries.at(-2)!.bytes.toString());
  t.same(tasks.map((task: any) => task.data.image), ['images/cat.jpg', 'images/rocket.jpg', 'images/camera.jpg', 'images/retina.jpg']);
  t.same(tasks.map((task: any) => task.predictions[0]?.model_version), ['wf-1@3', 'wf-1', 'wf-1@3', undefined]);
  let count = 0;
  for (const task of tasks) {
    const [w, h] = sizes[task.data.image.slice(7, -4)];
    for (const result of task.predictions[0]?.result ?? []) {
      count += 1;
      t.equal(result.to_name, 'image');
      if (result.type === 'choices') continue;
      t.same([result.original_width, result.original_height], [w, h]);
      const v = result.value;
      const xs = result.type === 'polygonlabels' ? v.points.map((p: number[]) => p[0]) : [v.x, v.x + (result.type === 'rectanglelabels' ? v.width : 0)];
      const ys = result.type === 'polygonlabels' ? v.points.map((p: number[]) => p[1]) : [v.y, v.y + (result.type === 'rectanglelabels' ? v.height : 0)];
      t.ok([...xs, ...ys].every((p: number) => p >= 0 && p <= 100 + 1e-9), `${result.type} within 0-100`);
    }
  }
  const cat = tasks[0].predictions[0].result[0];
  t.same(cat.value, { x: (125 / 451) * 100, y: (60 / 300) * 100, width: (200 / 451) * 100, height: (180 / 300) * 100, rotation: 0, rectanglelabels: ['cat'] });
  t.same(summary, { ...expectedSummary(count), bytes: summary.bytes });
  t.match(entries.at(-1)!.bytes.toString(), '<Label value="person:2"/>');
});

/**
 * A sink that takes `perTick` bytes, then answers false and is writable again after a timer.
 * `consumed` is what it acknowledged (bytes before its last `writable()` resolved);
 * `writesWhileBehind` counts writes made after a false and before `writable()` resolved.
 */
function slowSink(perTick: number) {
  let pending = 0;
  let behind = false;
  return {
    bytes: 0, consumed: 0, writesWhileBehind: 0, ended: false, aborted: false,
    write(chunk: Buffer): boolean {
      if (behind) this.writesWhileBehind += 1;
      this.bytes += chunk.length;
      pending += chunk.length;
      behind = pending >= perTick;
      return !behind;
    },
    writable(): Promise<void> {
      return new Promise((resolve) => setTimeout(() => {
        pending = 0;
        behind = false;
        this.consumed = this.bytes;
        resolve();
      }, 2));
    },
    end() {
      this.ended = true;
    },
  };
}

t.test('backpressure: nothing is written while the consumer is behind; reads stay about two images ahead', async (t) => {
  const image = photos.rocket;
  const sink = slowSink(16 * 1024);
  let worstLead = 0;
  const many = Array.from({ length: 40 }, (_, i) => storedEvent(`ev-${i}`, [{ fileId: `f${i}`, results: results({ object_detections: [{ class: 'x', x: 10, y: 10, width: 5, height: 5, confidence: 1 }] }) }]));
  const summary = await writeDataset('yolo', exportEvents(many), async (fileId) => {
    const index = Number(fileId.slice(1));
    worstLead = Math.max(worstLead, index - Math.floor(sink.consumed / image.length));
    return image;
  }, sink);
  t.equal(summary.images, 40);
  t.ok(sink.ended);
  t.equal(sink.writesWhileBehind, 0, 'no write between a false and writable()');
  t.ok(worstLead >= 1, `the next image is read ahead (worst lead ${worstLead})`);
  t.ok(worstLead <= 3, `reads stay within three images of what the consumer took (worst lead ${worstLead})`);
});

t.test('a consumer that goes away stops the export: no more reads, the sink not ended, temp files removed', async (t) => {
  const tempBefore = readdirSync(os.tmpdir()).filter((name) => name.startsWith('edge-export-')).length;
  const sink = slowSink(64 * 1024);
  let reads = 0;
  const many = Array.from({ length: 50 }, (_, i) => storedEvent(`ev-${i}`, [{ fileId: `f${i}` }]));
  const summary = await writeDataset('coco', exportEvents(many), async () => {
    reads += 1;
    if (reads === 5) sink.aborted = true;
    return photos.cat;
  }, sink);
  t.equal(summary.aborted, true);
  t.ok(summary.events < 50 && reads <= 7, `stopped early (${summary.events} events, ${reads} reads)`);
  t.equal(sink.ended, false);
  t.equal(readdirSync(os.tmpdir()).filter((name) => name.startsWith('edge-export-')).length, tempBefore, 'temporary directory removed');
});

t.test('a failing read fails the export as a registered error, temp files removed', async (t) => {
  const tempBefore = readdirSync(os.tmpdir()).filter((name) => name.startsWith('edge-export-')).length;
  const sink = slowSink(1 << 30);
  const failure = Object.assign(new Error('EIO: i/o error, read'), { code: 'EIO' });
  const outcome = await writeDataset('labelstudio', exportEvents(events()), async (id) => {
    if (id === 'camera') throw failure;
    return photos[id] ?? null;
  }, sink).then(() => undefined, (err: unknown) => err);
  t.ok(outcome instanceof AppError, 'an AppError');
  t.equal((outcome as AppError).code, 'store_failure');
  t.equal((outcome as AppError).cause, failure, 'the read error is its cause');
  t.equal(sink.ended, false, 'the sink is not ended: the response must be destroyed');
  t.equal(readdirSync(os.tmpdir()).filter((name) => name.startsWith('edge-export-')).length, tempBefore);
});

t.test('ZIP64: more than 65,535 entries are written and read back', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'export-zip64-'));
  t.teardown(() => execFileSync('rm', ['-rf', dir]));
  const zipPath = path.join(dir, 'many.zip');
  const out = createWriteStream(zipPath);
  const zip = new DatasetZip(writableSink(out));
  const count = 65_600;
  for (let i = 0; i < count; i++) await zip.addBuffer(`labels/${i}.txt`, Buffer.from(`${i}\n`), { compress: false });
  await zip.finish();
  await finished(out);
  const tail = readFileSync(zipPath).subarray(-200);
  t.ok(tail.includes(Buffer.from([0x50, 0x4b, 0x06, 0x06])), 'a ZIP64 end of central directory record');
  t.ok(tail.includes(Buffer.from([0x50, 0x4b, 0x06, 0x07])), 'a ZIP64 end of central directory locator');
  const entries = await listZip(zipPath);
  t.equal(entries.length, count, 'yauzl lists every entry');
  t.same(entries.at(-1), { name: `labels/${count - 1}.txt`, size: String(count - 1).length + 1 });
});
