/**
 * GET /v2/export over real HTTP from a real store: each format on real photos, read back from
 * the zip (COCO consistency, YOLO lines in [0, 1], Label Studio tasks), known centre-based boxes
 * converted, images byte-identical to the stored ones, only the events the query matches, and
 * the errors answered before any byte of zip. The export runs on a worker thread
 * (src/export/export-worker.ts): `/health` and a create are answered while an export of heavy
 * events is under way, and the zip of heavy events is the one `writeDataset` writes of them.
 */
import t from 'tap';
import type { Test } from 'tap';
import { createWriteStream, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { finished } from 'node:stream/promises';
import os from 'node:os';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { maximalCreate } from '../scripts/lib/maximal-creates.js';
import { writeDataset } from '../src/export/dataset-writer.js';
import type { StoredEvent } from '../src/events/types.js';
import { cocoProblems, exportEvents, readZip } from './support/export-data.js';
import { fixture, getJson, imageEvent, postJson, smallEvent } from './support/events.js';
import { startStore, type TestStore } from './support/store-server.js';
import { until } from './support/waiting.js';
import { writableSink } from './support/writable-sink.js';

const person = { class: 'person', x: 225, y: 150, width: 200, height: 180, confidence: 0.92 };
const dogSegment = { class: 'dog', x: 100, y: 80, width: 40, height: 20, confidence: 0.7, points: [[80, 70], [120, 70], [120, 90], [80, 90]] };
const pose = { class: 'person', x: 300, y: 200, width: 60, height: 120, confidence: 0.8, keypoints: [{ id: 0, x: 300, y: 150 }, { id: 1, x: 310, y: 260, occluded: true }] };

interface Seeded {
  store: TestStore;
  /** Image file ids by photo of each event, in creation order. */
  files: string[];
}

/** Event 0: cat.jpg with a known box; 1: rocket.jpg with a segmentation; 2: camera.jpg with a pose; 3 (cam-9): nothing exported. */
async function seed(t: Test): Promise<Seeded> {
  const store = await startStore();
  t.teardown(store.stop);
  const bodies = [
    imageEvent({ images: [{ base64Image: fixture('cat.jpg').toString('base64'), objectDetections: [person], classifications: [{ class: 'indoor', confidence: 0.6 }] }] }),
    imageEvent({ workflowId: 'wf-seg', workflowVersion: '4', images: [{ base64Image: fixture('rocket.jpg').toString('base64'), instanceSegmentations: [dogSegment] }] }),
    imageEvent({ images: [{ base64Image: fixture('camera.jpg').toString('base64'), keypoints: [pose] }] }),
    imageEvent({ deviceId: 'cam-9' }),
  ];
  const files: string[] = [];
  for (const body of bodies) {
    const res = await postJson(`${store.url}/v2/events`, body);
    if (res.status !== 201) throw new Error(JSON.stringify(res.body));
    files.push(res.body.image_ids[0]);
  }
  return { store, files };
}

/** Downloads an export to a temp file and reads its entries. */
async function exportZip(t: Test, store: TestStore, query: string, format: string) {
  const res = await fetch(`${store.url}/v2/export?${new URLSearchParams({ q: query, format })}`);
  t.equal(res.status, 200, `${format}: 200`);
  t.equal(res.headers.get('content-type'), 'application/zip');
  t.equal(res.headers.get('content-disposition'), `attachment; filename="dataset-${format}.zip"`);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'export-route-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const zipPath = path.join(dir, 'd.zip');
  writeFileSync(zipPath, Buffer.from(await res.arrayBuffer()));
  const entries = await readZip(zipPath);
  return { entries, entry: (name: string) => entries.find((e) => e.name === name)!.bytes };
}

t.test('COCO: top-left boxes, polygons, keypoints, consistent, images byte-identical', async (t) => {
  const { store, files } = await seed(t);
  const { entries, entry } = await exportZip(t, store, 'device:cam-1', 'coco');
  t.same(entries.map((e) => e.name), [`images/${files[2]}.jpg`, `images/${files[1]}.jpg`, `images/${files[0]}.jpg`, 'annotations.coco.json'], 'newest first; cam-9 left out');
  ['camera.jpg', 'rocket.jpg', 'cat.jpg'].forEach((photo, i) => t.ok(entries[i].bytes.equals(fixture(photo)), `${photo} byte-identical`));
  const doc = JSON.parse(entry('annotations.coco.json').toString());
  t.same(cocoProblems(doc), [], 'consistent by the published format');
  const imageOf = (fileId: string) => doc.images.find((i: { file_name: string }) => i.file_name === `images/${fileId}.jpg`);
  const cat = imageOf(files[0]);
  t.ok(cat.width > 0 && cat.height > 0, `cat.jpg measured ${cat.width}x${cat.height}`);
  const categoryId = (name: string) => doc.categories.find((c: { name: string }) => c.name === name).id;
  const box = doc.annotations.find((a: { image_id: number }) => a.image_id === cat.id);
  t.same(box.bbox, [125, 60, 200, 180], 'centre (225, 150) size 200x180 -> top-left [125, 60, 200, 180]');
  t.equal(box.category_id, categoryId('person'));
  t.equal(box.area, 200 * 180);
  const seg = doc.annotations.find((a: { image_id: number }) => a.image_id === imageOf(files[1]).id);
  t.same(seg.bbox, [80, 70, 40, 20]);
  t.same(seg.segmentation, [[80, 70, 120, 70, 120, 90, 80, 90]], 'the polygon, flattened');
  t.equal(seg.category_id, categoryId('dog'));
  const kp = doc.annotations.find((a: { image_id: number }) => a.image_id === imageOf(files[2]).id);
  t.same(kp.keypoints, [300, 150, 2, 310, 260, 1], 'visible 2, occluded 1');
  t.equal(kp.num_keypoints, 2);
});

t.test('YOLO: label lines normalised into [0, 1], data.yaml names the classes', async (t) => {
  const { store, files } = await seed(t);
  const { entries, entry } = await exportZip(t, store, 'class:person', 'yolo');
  t.same(entries.map((e) => e.name), [`images/${files[2]}.jpg`, `labels/${files[2]}.txt`, `images/${files[0]}.jpg`, `labels/${files[0]}.txt`, 'data.yaml'], 'only events with a person');
  const data = parseYaml(entry('data.yaml').toString());
  t.same(data, { path: '.', train: 'images', val: 'images', nc: 1, names: { 0: 'person' } }, 'data.yaml, read by a YAML parser, names the one class');
  for (const name of entries.filter((e) => e.name.startsWith('labels/')).map((e) => e.name)) {
    for (const line of entry(name).toString().trim().split('\n')) {
      const fields = line.split(' ').map(Number);
      t.equal(fields.length, 5, `${name}: five fields`);
      t.equal(fields[0], 0, 'class index 0 of nc 1');
      t.ok(fields.slice(1).every((v) => v >= 0 && v <= 1), `${name}: ${line} within [0, 1]`);
    }
  }
  const [cls, cx, cy, w, h] = entry(`labels/${files[0]}.txt`).toString().trim().split(' ').map(Number);
  const coco = await exportZip(t, store, 'device:cam-1', 'coco');
  const cat = JSON.parse(coco.entry('annotations.coco.json').toString()).images.find((i: { file_name: string }) => i.file_name.includes(files[0]));
  t.equal(cls, 0);
  t.ok(Math.abs(cx - 225 / cat.width) < 1e-5 && Math.abs(cy - 150 / cat.height) < 1e-5, 'centre normalised by the image size');
  t.ok(Math.abs(w - 200 / cat.width) < 1e-5 && Math.abs(h - 180 / cat.height) < 1e-5, 'size normalised by the image size');
});

t.test('Label Studio: tasks with predictions in percent and the model version', async (t) => {
  const { store, files } = await seed(t);
  const { entry } = await exportZip(t, store, 'device:cam-1 -class:person', 'labelstudio');
  const tasks = JSON.parse(entry('tasks.json').toString());
  t.equal(tasks.length, 1, 'only the rocket event');
  t.equal(tasks[0].data.image, `images/${files[1]}.jpg`);
  const [prediction] = tasks[0].predictions;
  t.equal(prediction.model_version, 'wf-seg@4', 'workflow id and version');
  const polygon = prediction.result.find((r: { type: string }) => r.type === 'polygonlabels');
  t.ok(polygon, 'the segmentation is a polygon');
  t.same(polygon.value.polygonlabels, ['dog']);
  const { original_width: width, original_height: height } = polygon;
  t.ok(width > 0 && height > 0, 'original size given');
  t.same(polygon.value.points[0].map((v: number) => Math.round(v * 1000) / 1000), [Math.round((80 / width) * 100_000) / 1000, Math.round((70 / height) * 100_000) / 1000], 'points in percent of the image');
});

t.test('errors come before any byte of zip', async (t) => {
  const store = await startStore({ API_KEY: 'k' });
  t.teardown(store.stop);
  const bad = await getJson(`${store.url}/v2/export?q=${encodeURIComponent('class:person OR')}&format=coco`, { 'X-API-Key': 'k' });
  t.equal(bad.status, 400);
  t.match(bad.body.detail, /^Invalid query at column 14: OR needs a term after it/);
  const format = await getJson(`${store.url}/v2/export?q=*&format=voc`, { 'X-API-Key': 'k' });
  t.equal(format.status, 422);
  t.match(format.body.detail[0], { loc: ['query', 'format'], msg: 'format must be one of coco, yolo, labelstudio' });
  t.equal((await getJson(`${store.url}/v2/export?format=coco`, { 'X-API-Key': 'k' })).status, 422, 'q missing');
  t.equal((await getJson(`${store.url}/v2/export?q=*`)).status, 401, 'the key is asked for');
  const empty = await fetch(`${store.url}/v2/export?q=*`, { headers: { 'X-API-Key': 'k' } });
  t.equal(empty.status, 200, 'an empty store exports an empty dataset');
  t.equal(Buffer.from(await empty.arrayBuffer()).readUInt32LE(0), 0x04034b50, 'a zip');
});

t.test('/health and a small create are answered while an export of heavy events is under way', async (t) => {
  // The export's worker makes its temporary folder (edge-export-*) in os.tmpdir(), read at each
  // call: a folder of this test's own tells that this export has begun.
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'export-route-tmp-'));
  const before = process.env.TMPDIR;
  process.env.TMPDIR = tmp;
  t.teardown(() => {
    if (before === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = before;
    rmSync(tmp, { recursive: true, force: true });
  });
  const store = await startStore();
  t.teardown(store.stop);
  // The store: events of predictions without image files, each of the most detections a
  // create may carry (100,000); parsing each one is the export's work.
  const heavy = maximalCreate('detections');
  for (let i = 0; i < 4; i++) t.equal((await postJson(`${store.url}/v2/events`, heavy)).status, 201, `heavy event ${i} stored`);

  let exported: Buffer | undefined;
  const exporting = fetch(`${store.url}/v2/export?q=device:cam-max&format=coco`).then(async (res) => {
    exported = Buffer.from(await res.arrayBuffer());
  });
  await until('the export to begin', () => readdirSync(tmp).some((name) => name.startsWith('edge-export-')), 60_000, 5);
  const health = await fetch(`${store.url}/health`);
  t.equal(health.status, 200, '/health answered');
  t.equal(exported, undefined, '/health answered while the export is under way');
  const created = await postJson(`${store.url}/v2/events`, smallEvent());
  t.equal(created.status, 201, 'a small create answered');
  t.equal(exported, undefined, 'the create answered while the export is under way');
  t.ok(readdirSync(tmp).some((name) => name.startsWith('edge-export-')), 'the export still at work: its temporary folder, removed at its end, is there');

  await exporting;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'export-route-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(path.join(dir, 'd.zip'), exported!);
  const doc = JSON.parse((await readZip(path.join(dir, 'd.zip'))).find((e) => e.name === 'annotations.coco.json')!.bytes.toString());
  t.same([doc.images, doc.annotations], [[], []], 'a complete zip: events without image files export no image');
});

t.test('the zip of heavy events is the one writeDataset writes of the same events', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const box = (i: number) => ({ class: `c${i % 7}`, x: 10 + (i % 400), y: 10 + (i % 250), width: 20.5, height: 10.25, confidence: 0.5 + (i % 50) / 100 });
  const crowded = (photo: string) => ({
    base64Image: fixture(photo).toString('base64'),
    objectDetections: Array.from({ length: 4_000 }, (_, i) => box(i)),
    instanceSegmentations: [{ ...dogSegment, points: Array.from({ length: 2_000 }, (_, i) => [10 + (i % 300), 10 + ((i * 7) % 200)]) }],
    keypoints: [pose],
    classifications: [{ class: 'indoor', confidence: 0.6 }],
  });
  for (const photos of [['cat.jpg', 'rocket.jpg'], ['camera.jpg']]) {
    t.equal((await postJson(`${store.url}/v2/events`, imageEvent({ deviceId: 'cam-heavy', images: photos.map(crowded) }))).status, 201);
  }
  // The events as stored, newest first (as the export reads them), and their images' bytes.
  const events = (await getJson(`${store.url}/v2/events/search?q=device:cam-heavy`)).body.events as StoredEvent[];
  const images = new Map<string, Buffer>();
  for (const id of events.flatMap((e) => e.images.map((image) => image.file_id!))) {
    images.set(id, Buffer.from(await (await fetch(`${store.url}/images/${id}`)).arrayBuffer()));
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), 'export-route-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // COCO's info.date_created is the time of the export.
  const comparable = (entry: { name: string; bytes: Buffer }) => {
    if (entry.name !== 'annotations.coco.json') return entry.bytes.toString('base64');
    const { info: _info, ...doc } = JSON.parse(entry.bytes.toString());
    return JSON.stringify(doc);
  };
  for (const format of ['coco', 'yolo', 'labelstudio'] as const) {
    const route = await exportZip(t, store, 'device:cam-heavy', format);
    const reference = path.join(dir, `${format}.zip`);
    const out = createWriteStream(reference);
    const summary = await writeDataset(format, exportEvents(events), async (id) => images.get(id) ?? null, writableSink(out));
    await finished(out);
    t.ok(summary.annotations > 12_000, `${format}: ${summary.annotations} annotations`);
    const expected = await readZip(reference);
    t.same(route.entries.map((e) => [e.name, e.method]), expected.map((e) => [e.name, e.method]), `${format}: the same entries`);
    t.ok(route.entries.every((e, i) => comparable(e) === comparable(expected[i])), `${format}: every entry's bytes the same`);
  }
});
