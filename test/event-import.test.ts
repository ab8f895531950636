/**
 * Importing a consumed event (docs/OPERATIONS.md, "Hub mode"; src/hub/event-import.ts) into a
 * real store: device-side ids kept, idempotent by id, a file absent from the source waited for
 * or, at the last delivery, left out. The files come from a map of fixture bytes standing for
 * the fleet's bucket (the bucket itself is exercised in test/end-to-end/nats-hub.test.ts).
 */
import t, { type Test } from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { PredictionLimits } from '../src/events/create-event.js';
import { FileMissing, IdCollision, importEvent, type FileSource } from '../src/hub/event-import.js';
import { loadConfig } from '../src/config.js';
import type { AppError, ValidationIssue } from '../src/errors.js';
import { fixture, imageEvent } from './support/events.js';
import { openLocalStore, type LocalStore } from './support/local-store.js';

/** The defaults of MAX_PREDICTIONS_PER_IMAGE, MAX_PREDICTIONS_PER_EVENT and MAX_POINTS_PER_EVENT. */
const { maxPredictionsPerImage, maxPredictionsPerEvent, maxPointsPerEvent } = loadConfig({});
const LIMITS: PredictionLimits = { maxPredictionsPerImage, maxPredictionsPerEvent, maxPointsPerEvent };
/** Bounds a test's events pass by one: 10 predictions an image, 100 points an event. */
const TIGHT: PredictionLimits = { maxPredictionsPerImage: 10, maxPredictionsPerEvent: 1000, maxPointsPerEvent: 100 };

/** A device's event as its store presents it (GET /v2/events/{id}). */
async function deviceEvent(): Promise<Record<string, any>> {
  const device = await openLocalStore();
  const { id } = await device.create(imageEvent({ images: [{ label: 'front', base64Image: fixture('cat.jpg').toString('base64'), inputBase64Image: fixture('rocket.jpg').toString('base64') }] }));
  const event = JSON.parse(device.store.getEventJson(id)!.toString('utf8'));
  await device.close();
  return event;
}

function source(files: Map<string, Buffer>): FileSource {
  return {
    bytes: async (fileId) => (files.has(fileId) ? { bytes: files.get(fileId)!, contentType: 'image/jpeg' } : null),
    chunks: async () => null,
  };
}

/** A device's event imported into a new hub store (closed with the test), and the source it came from. */
async function importedOnHub(t: Test): Promise<{ event: Record<string, any>; image: Record<string, any>; hub: LocalStore; files: FileSource }> {
  const event = await deviceEvent();
  const [image] = event.images;
  const hub = await openLocalStore();
  t.teardown(hub.close);
  const files = source(new Map([[image.file_id, fixture('cat.jpg')], [image.input_file_id, fixture('rocket.jpg')]]));
  t.equal(await importEvent(hub.store, structuredClone(event), files, 'wait', LIMITS), 'stored');
  return { event, image, hub, files };
}

t.test('an imported event keeps its ids; importing it again changes nothing', async (t) => {
  const { event, image, hub, files } = await importedOnHub(t);
  const stored = JSON.parse(hub.store.getEventJson(event.id)!.toString('utf8'));
  t.same({ ...stored, created_at: 0, finalized_at: 0 }, { ...event, created_at: 0, finalized_at: 0 }, 'the same event but for created_at and finalized_at (the hub\'s)');
  t.same(await hub.store.openFile(image.file_id)!.readAll(), fixture('cat.jpg'));
  t.equal(await importEvent(hub.store, structuredClone(event), files, 'wait', LIMITS), 'present');
  t.equal(hub.store.counters().events, 1);
});

t.test('a file not in the source: waited for (nothing stored), or at the last delivery left out', async (t) => {
  const event = await deviceEvent();
  const [image] = event.images;
  const hub = await openLocalStore();
  t.teardown(hub.close);
  const onlyInput = source(new Map([[image.input_file_id, fixture('rocket.jpg')]]));
  await t.rejects(importEvent(hub.store, structuredClone(event), onlyInput, 'wait', LIMITS), new FileMissing(image.file_id));
  t.equal(hub.store.getEvent(event.id), undefined, 'nothing stored');
  t.equal(await importEvent(hub.store, structuredClone(event), onlyInput, 'skip', LIMITS), 'stored');
  const stored = hub.store.getEvent(event.id)!;
  t.equal(stored.images[0]!.file_id, null, 'stored without the missing image');
  t.equal(stored.images[0]!.input_file_id, image.input_file_id);
});

/** A source holding the event's images and one video (cat-zoom.mp4) under any id asked for. */
function sourceWithVideo(files: Map<string, Buffer>): FileSource {
  return { ...source(files), chunks: async () => (async function* () { yield fixture('cat-zoom.mp4'); })() };
}

t.test('an import never takes over an id stored here: another event\'s file, another device\'s event, a local draft (#31 item 6)', async (t) => {
  const { event, image, hub, files } = await importedOnHub(t);

  const forgedFiles = source(new Map([[image.file_id, fixture('camera.jpg')], [image.input_file_id, fixture('camera.jpg')]]));
  const reusesFile = { ...structuredClone(event), id: '01900000-0000-7000-8000-000000000001', device_id: 'intruder' };
  await t.rejects(importEvent(hub.store, reusesFile, forgedFiles, 'wait', LIMITS), IdCollision, 'a new event naming a stored image id is refused');
  t.same(await hub.store.openFile(image.file_id)!.readAll(), fixture('cat.jpg'), 'the stored image keeps its bytes');
  t.equal(hub.store.getEvent(reusesFile.id), undefined, 'nothing of it stored');

  const otherDevice = { ...structuredClone(event), device_id: 'intruder' };
  await t.rejects(importEvent(hub.store, otherDevice, files, 'wait', LIMITS), IdCollision, 'the same event id from another device is refused');

  const local = await hub.create(imageEvent({ draft: true }));
  const draft = JSON.parse(hub.store.getEventJson(local.id)!.toString('utf8'));
  const takeover = { ...draft, videos: [{ file_id: '01900000-0000-7000-8000-0000000000aa', label: 'forged', content_type: 'video/mp4' }], images: [] };
  await t.rejects(importEvent(hub.store, takeover, sourceWithVideo(new Map()), 'wait', LIMITS), IdCollision, 'a message carrying a local draft\'s id and other images is refused');
  const after = hub.store.getEvent(local.id)!;
  t.equal(after.draft, true, 'the local draft stays a draft');
  t.same(after.videos, [], 'nothing attached to it');
});

t.test('imported ids, videos and predictions pass what a create and an attachment check (#31 items 3, 7, 10)', async (t) => {
  const event = await deviceEvent();
  const [image] = event.images;
  const hub = await openLocalStore();
  t.teardown(hub.close);
  const files = sourceWithVideo(new Map([[image.file_id, fixture('cat.jpg')], [image.input_file_id, fixture('rocket.jpg')]]));
  const video = { file_id: '01900000-0000-7000-8000-0000000000bb', label: 'clip', content_type: 'video/mp4' };
  const outside = path.join(os.tmpdir(), `edge-events-traversal-${process.pid}`);
  const refusals: [string, Record<string, unknown>, (string | number)[]][] = [
    ['a video file_id that climbs out of the staging folder', { videos: [{ ...video, file_id: `../../../../..${outside}` }] }, ['body', 'videos', 0, 'file_id']],
    ['an upper-case file id', { images: [{ ...image, file_id: image.file_id.toUpperCase() }] }, ['body', 'images', 0, 'file_id']],
    ['an event id that is no UUID', { id: 'not-a-uuid' }, ['body', 'id']],
    ['a video content_type with CR/LF', { videos: [{ ...video, content_type: 'video/mp4\r\nSet-Cookie: a=b' }] }, ['body', 'videos', 0, 'content_type']],
    ['a video content_type listing two types', { videos: [{ ...video, content_type: 'image/png; a="x\\"; b=", text/html; c="' }] }, ['body', 'videos', 0, 'content_type']],
    ['a label holding NUL and ESC', { videos: [{ ...video, label: 'clip\u0000\u001b[31m' }] }, ['body', 'videos', 0, 'label']],
    ['more predictions than MAX_PREDICTIONS_PER_IMAGE', { images: [{ ...image, object_detections: Array.from({ length: 11 }, () => ({ class: 'cat', confidence: 0.9, x: 1, y: 1, width: 2, height: 2 })) }] }, ['body', 'images', 0]],
    ['more points than MAX_POINTS_PER_EVENT', { images: [{ ...image, instance_segmentations: [{ class: 'cat', confidence: 0.9, x: 1, y: 1, width: 2, height: 2, points: Array.from({ length: 101 }, (_, i) => [i, i]) }] }] }, ['body', 'images', 0]],
  ];
  for (const [what, change, loc] of refusals) {
    const error = await importEvent(hub.store, { ...structuredClone(event), ...change }, files, 'wait', TIGHT).then(() => null, (err: unknown) => err);
    t.match(error, { code: 'validation_failed', status: 422 }, `${what}: refused as a create would be`);
    t.same(((error as AppError).detail as ValidationIssue[])[0]?.loc, loc, `${what}: the issue names ${loc.join('.')}`);
  }
  t.equal(hub.store.counters().events, 0, 'nothing stored');
  t.notOk(fs.existsSync(`${outside}.part`), 'no file opened outside the data directory');
  t.same(fs.readdirSync(hub.store.stagingDir), [], 'no staging file left');

  t.equal(await importEvent(hub.store, { ...structuredClone(event), videos: [video] }, files, 'wait', TIGHT), 'stored', 'the same event with clean fields is stored');
  t.same(hub.store.getEvent(event.id)!.videos.map((v) => [v.file_id, v.label]), [[video.file_id, 'clip']]);
});
