/**
 * Heavy create bodies are parsed, validated and decoded, and their records encoded, on the create
 * preparer's worker, off the HTTP thread (src/events/create-preparer.ts; docs/OPERATIONS.md, "Memory"), over real HTTP with
 * real photos: a body weighing at least OFF_THREAD_MIN_WEIGHT_BYTES goes there and a light one
 * does not (/metrics counts them); what comes back is the event that was sent, its images to the
 * byte, whether their bytes were moved between threads or copied (a small image shares Node's
 * buffer pool); a refusal decided on the worker answers as the same refusal decided in place
 * (status, code, detail, an event_data refusal's errors); a preparer closed starts a new worker for the next body.
 */
import sharp from 'sharp';
import t from 'tap';
import { loadConfig } from '../src/config.js';
import type { AppError } from '../src/errors.js';
import { prepareCreate } from '../src/events/create-event.js';
import { CreatePreparer, OFF_THREAD_MIN_WEIGHT_BYTES } from '../src/events/create-preparer.js';
import { parsedExtraBytes } from '../src/http/body-budget.js';
import type { NewEvent, PreparedCreate } from '../src/store/engine/prepared-create.js';
import { fixture, getJson, postJson, smallEvent } from './support/events.js';
import { responseProblems } from './support/response-shapes.js';
import { startStore, type TestStore } from './support/store-server.js';

/** MAX_POINTS_PER_EVENT here: a light body can pass it, so that the same refusal is seen made in place. */
const MAX_POINTS = 20_000;

/** A polygon of `count` points (`[x, y]`), as a segmentation model gives one. */
const polygon = (count: number) => Array.from({ length: count }, (_, i) => [100 + (i % 300), 50 + Math.floor(i / 300)]);

const segmentation = (points: number) => ({ class: 'cat', x: 225, y: 150, width: 200, height: 180, confidence: 0.9, points: polygon(points) });

/** A create the worker prepared: its record built and encoded (store/engine/prepared-create.ts). */
function offThread(prepared: NewEvent | PreparedCreate): PreparedCreate {
  if (!('encoded' in prepared)) throw new Error('prepared in place, not on the worker');
  return prepared;
}

/** What a body weighs in the body budget (bytes): its bytes plus what parsing adds. */
const weightOf = (text: string) => Buffer.byteLength(text) + parsedExtraBytes(Buffer.from(text));

/** The store's count of creates prepared off the HTTP thread. */
async function preparedOffThread(store: TestStore): Promise<number> {
  const text = await (await fetch(`${store.url}/metrics`)).text();
  return Number(/^edge_events_creates_prepared_off_thread_total (\S+)$/m.exec(text)![1]);
}

/**
 * A valid create weighing over OFF_THREAD_MIN_WEIGHT_BYTES: two polygons of 7,000 points on a real
 * photo, a second image with an input image, and a third image small enough to share Node's pool.
 */
async function heavyEvent() {
  const tiny = await sharp({ create: { width: 2, height: 2, channels: 3, background: '#c00' } }).png().toBuffer();
  return {
    inferenceTimestamp: '2026-11-22T01:00:00Z',
    eventSchema: 'safety_alert',
    eventData: { severity: 'high' },
    deviceId: 'cam-heavy',
    images: [
      { label: 'retina', base64Image: fixture('retina.jpg').toString('base64'), instanceSegmentations: [segmentation(7000), segmentation(7000)] },
      { label: 'cat', base64Image: fixture('cat.jpg').toString('base64'), inputBase64Image: fixture('camera.jpg').toString('base64') },
      { label: 'tiny', base64Image: tiny.toString('base64') },
    ],
  };
}

t.test('a heavy create is prepared off the HTTP thread and stored as sent, its images to the byte', async (t) => {
  const store = await startStore({ MAX_POINTS_PER_EVENT: String(MAX_POINTS) });
  t.teardown(() => store.stop());
  const event = await heavyEvent();
  t.ok(weightOf(JSON.stringify(event)) >= OFF_THREAD_MIN_WEIGHT_BYTES, 'the body weighs enough to go to the worker');

  const created = await postJson(`${store.url}/v2/events`, { ...event, cameraName: 'north gate' });
  t.equal(created.status, 201, JSON.stringify(created.body));
  t.equal(await preparedOffThread(store), 1);
  t.same(created.body.warnings?.map((warning: { loc: unknown[] }) => warning.loc), [['body', 'cameraName']], 'a key the worker ignored is named too');
  const light = await postJson(`${store.url}/v2/events`, smallEvent());
  t.equal(light.status, 201);
  t.equal(await preparedOffThread(store), 1, 'a light create is prepared in place');

  const stored = (await getJson(`${store.url}/v2/events/${created.body.id}`)).body;
  t.same(stored.images.map((i: { label: string }) => i.label), ['retina', 'cat', 'tiny']);
  t.same(stored.images[0].instance_segmentations.map((s: { points: number[][] }) => s.points), [polygon(7000), polygon(7000)]);
  t.same(stored.event_data, { severity: 'high' });
  const [retina, cat, tiny] = created.body.image_ids as string[];
  const bytes = async (id: string) => Buffer.from(await (await fetch(`${store.url}/images/${id}`)).arrayBuffer());
  t.ok((await bytes(retina)).equals(fixture('retina.jpg')), 'the photo moved from the worker is intact');
  t.ok((await bytes(cat)).equals(fixture('cat.jpg')));
  t.ok((await bytes(stored.images[1].input_file_id)).equals(fixture('camera.jpg')), 'the input image too');
  t.ok((await bytes(tiny)).equals(Buffer.from(event.images[2].base64Image, 'base64')), 'an image in the pool is copied whole');
});

t.test('a refusal decided on the worker answers as the same refusal decided in place', async (t) => {
  const store = await startStore({ MAX_POINTS_PER_EVENT: String(MAX_POINTS) });
  t.teardown(() => store.stop());
  const heavy = await heavyEvent();
  /** Sends a light and a heavy body with the same fault; both answers, with the heavy one's weight. */
  const both = async (light: unknown, heavyBody: unknown) => {
    const text = typeof heavyBody === 'string' ? heavyBody : JSON.stringify(heavyBody);
    t.ok(weightOf(text) >= OFF_THREAD_MIN_WEIGHT_BYTES);
    return [await postJson(`${store.url}/v2/events`, light), await postJson(`${store.url}/v2/events`, text)];
  };

  const [lightMissing, heavyMissing] = await both({ ...smallEvent(), event_schema: undefined }, { ...heavy, eventSchema: undefined });
  t.equal(heavyMissing.status, 422);
  t.same(heavyMissing.body, lightMissing.body, 'validation_failed, the same detail');

  // No light body has more points than MAX_POINTS: the refusal made in place is prepareCreate's, called here.
  const overPoints = { ...heavy, images: [{ ...heavy.images[0], instanceSegmentations: [segmentation(7000), segmentation(7000), segmentation(7000)] }] };
  const inPlace = await prepareCreate(overPoints, loadConfig({ MAX_POINTS_PER_EVENT: String(MAX_POINTS) })).catch((err: AppError) => err);
  const heavyPoints = await postJson(`${store.url}/v2/events`, overPoints);
  t.equal(heavyPoints.status, 422);
  t.equal(heavyPoints.body.detail[0].type, 'value_error.points.max_items');
  t.same(heavyPoints.body, { detail: (inPlace as AppError).detail });

  const badImage = { ...heavy, images: [heavy.images[0], { base64Image: 'not base64!' }] };
  const [lightImage, heavyImage] = await both({ ...smallEvent(), images: [{ base64Image: 'not base64!' }] }, badImage);
  t.equal(heavyImage.status, 400);
  t.same(heavyImage.body, { ...lightImage.body, detail: lightImage.body.detail.replace('images[0]', 'images[1]') });

  const badData = { eventSchema: 'inventory_count', eventData: { itemcount: 3, location: 'x'.repeat(1001) } };
  const [lightData, heavyData] = await both({ ...smallEvent(), ...badData, event_schema: undefined, event_data: undefined }, { ...heavy, ...badData });
  t.equal(lightData.status, 400);
  t.same(lightData.body, {
    detail: 'event_data does not conform to schema \'inventory_count\': unknown field \'itemcount\' (did you mean \'itemCount\'?); location must have at most 1000 characters',
    errors: [
      { loc: ['body', 'eventData', 'itemcount'], msg: 'unknown field \'itemcount\' (did you mean \'itemCount\'?)', type: 'value_error.extra' },
      { loc: ['body', 'eventData', 'location'], msg: 'location must have at most 1000 characters', type: 'value_error.any_str.max_length' },
    ],
  }, 'E2 on the wire: every problem in the string detail, and as issues');
  t.same(responseProblems('error', lightData.body), []);
  t.equal(heavyData.status, 400);
  t.same(heavyData.body, lightData.body, 'event_data_invalid, the same detail and errors');

  const text = JSON.stringify(heavy);
  const [lightCut, heavyCut] = await both(JSON.stringify(smallEvent()).slice(0, -1), text.slice(0, -1));
  t.equal(heavyCut.status, 422);
  t.equal(heavyCut.body.detail[0].type, 'value_error.jsondecode');
  t.equal(lightCut.body.detail[0].type, 'value_error.jsondecode');
  t.equal(await preparedOffThread(store), 5, 'each heavy body went to the worker, no light one');
  t.equal((await getJson(`${store.url}/stats`)).body.current.total_events, 0, 'nothing stored');
});

t.test('a closed preparer starts a new worker for the next heavy body', async (t) => {
  const preparer = new CreatePreparer(loadConfig({}));
  t.teardown(() => preparer.close());
  const text = Buffer.from(JSON.stringify(await heavyEvent()));
  const weight = text.length + parsedExtraBytes(text);
  const first = offThread((await preparer.prepare(Buffer.from(text), weight)).event);
  t.equal(first.imageBlobs[0].bytes.length, fixture('retina.jpg').length);
  t.ok(Buffer.isBuffer(first.imageBlobs[0].bytes), 'image bytes from the worker are a Buffer again');
  t.ok('unstamped' in first.encoded && Buffer.isBuffer(first.encoded.unstamped.value), 'the encoded record too');
  t.same(first.record.images[0].instance_segmentations.map((s) => (s as { points: unknown[] }).points), [[], []], 'the record for the head comes back without its geometry');
  await preparer.close();
  const second = offThread((await preparer.prepare(Buffer.from(text), weight)).event);
  t.same({ ...second.record, id: first.record.id, images: [] }, { ...first.record, images: [] });
  t.equal(preparer.preparedOffThread, 2);
});
