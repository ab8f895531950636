/**
 * Keys of a create body that the schema does not define are ignored and named (docs/API.md,
 * "Ignored keys"), over real HTTP with a real photo: the 201's `warnings` give each one's path and
 * the key it likely meant, /metrics counts them by path, and UNKNOWN_KEYS=reject answers 422
 * naming every one and stores nothing. A body without them answers without `warnings`.
 */
import t from 'tap';
import { fixture, getJson, imageEvent, postJson } from './support/events.js';
import { startStore } from './support/store-server.js';

/** A safety alert whose pipeline misnamed its keypoints, beside a model output's key (tracker_id, known) and a key of its own. */
function misnamedEvent(): Record<string, unknown> {
  return {
    inferenceTimestamp: '2026-12-02T10:00:00Z',
    eventSchema: 'safety_alert',
    eventData: { alertType: 'no_helmet', severity: 'high' },
    deviceId: 'cam-7',
    devce_id: 'cam-7',
    images: [{
      base64Image: fixture('rocket.jpg').toString('base64'),
      objectDetections: [{ class: 'person', x: 10, y: 10, width: 4, height: 4, confidence: 0.9, tracker_id: 7, colour: 'red' }],
      keypointDetections: [{ class: 'person', x: 10, y: 10, width: 4, height: 4, confidence: 0.9, keypoints: [] }],
      keypoints: [{ class: 'hand', x: 1, y: 1, width: 1, height: 1, confidence: 0.5, keypoints: [{ id: 0, x: 1, y: 2, visibility: 1 }] }],
    }],
  };
}

t.test('ignored keys are named in the 201 and counted, and the event is stored without them', async (t) => {
  const store = await startStore();
  t.teardown(() => store.stop());
  const created = await postJson(`${store.url}/v2/events`, misnamedEvent());
  t.equal(created.status, 201, JSON.stringify(created.body));
  t.same(created.body.warnings, [
    { loc: ['body', 'devce_id'], msg: 'unknown key, ignored; did you mean \'device_id\'?', type: 'value_error.unknown_key' },
    { loc: ['body', 'images', 0, 'keypointDetections'], msg: 'unknown key, ignored; did you mean \'keypoints\'?', type: 'value_error.unknown_key' },
    { loc: ['body', 'images', 0, 'objectDetections', 0, 'colour'], msg: 'unknown key, ignored', type: 'value_error.unknown_key' },
    { loc: ['body', 'images', 0, 'keypoints', 0, 'keypoints', 0, 'visibility'], msg: 'unknown key, ignored', type: 'value_error.unknown_key' },
  ]);
  const stored = (await getJson(`${store.url}/v2/events/${created.body.id}`)).body;
  t.same(stored.images[0].keypoints.map((group: { class: string }) => group.class), ['hand'], 'the misnamed list is not stored');
  t.same(Object.keys(stored.images[0].object_detections[0]).sort(), ['class', 'confidence', 'height', 'width', 'x', 'y']);

  const plain = await postJson(`${store.url}/v2/events`, imageEvent());
  t.equal(plain.status, 201);
  t.notOk('warnings' in plain.body, 'no warnings when nothing was ignored');

  const metrics = await (await fetch(`${store.url}/metrics`)).text();
  for (const path of ['devce_id', 'images.keypointDetections', 'images.objectDetections.colour', 'images.keypoints.keypoints.visibility']) {
    t.match(metrics, `edge_events_ignored_keys_total{path="${path}"} 1`, `/metrics counts ${path}`);
  }
});

t.test('UNKNOWN_KEYS=reject answers 422 naming every ignored key, and stores nothing', async (t) => {
  const store = await startStore({ UNKNOWN_KEYS: 'reject' });
  t.teardown(() => store.stop());
  const refused = await postJson(`${store.url}/v2/events`, misnamedEvent());
  t.equal(refused.status, 422);
  t.same(refused.body.detail.map((issue: { loc: unknown[] }) => issue.loc.at(-1)), ['devce_id', 'keypointDetections', 'colour', 'visibility']);
  t.match(refused.body.detail[1], { msg: 'unknown key (UNKNOWN_KEYS=reject); did you mean \'keypoints\'?', type: 'value_error.unknown_key' });
  t.equal((await getJson(`${store.url}/stats`)).body.current.total_events, 0, 'nothing stored');
  t.equal((await postJson(`${store.url}/v2/events`, imageEvent())).status, 201, 'a body without them is stored');
});

t.test('a prediction list under another name gets the list it stands for as its did-you-mean, spelt as the body spells', async (t) => {
  const store = await startStore();
  t.teardown(() => store.stop());
  const box = { class: 'person', x: 10, y: 10, width: 4, height: 4, confidence: 0.9 };
  const camel = await postJson(`${store.url}/v2/events`, imageEvent({
    images: [{ base64Image: fixture('cat.jpg').toString('base64'), detections: [box], predictions: [box], keypointDetections: [{ ...box, keypoints: [] }], segmentations: [] }],
  }));
  t.equal(camel.status, 201, JSON.stringify(camel.body));
  t.same(camel.body.warnings.map(({ loc, msg }: { loc: unknown[]; msg: string }) => [loc.at(-1), msg]), [
    ['detections', 'unknown key, ignored; did you mean \'objectDetections\'?'],
    ['predictions', 'unknown key, ignored; did you mean \'objectDetections\'?'],
    ['keypointDetections', 'unknown key, ignored; did you mean \'keypoints\'?'],
    ['segmentations', 'unknown key, ignored; did you mean \'instanceSegmentations\'?'],
  ]);
  const snake = await postJson(`${store.url}/v2/events`, imageEvent({ images: [{ base64_image: fixture('cat.jpg').toString('base64'), detections: [box], keypoint_detections: [] }] }));
  t.same(snake.body.warnings.map(({ msg }: { msg: string }) => msg), [
    'unknown key, ignored; did you mean \'object_detections\'?',
    'unknown key, ignored; did you mean \'keypoints\'?',
  ], 'snake_case in a snake_case body');
  const bare = await postJson(`${store.url}/v2/events`, imageEvent({ images: [{ predictions: [box] }] }));
  t.equal(bare.status, 201);
  t.match(bare.body.warnings[0].msg, 'did you mean \'objectDetections\'?', 'camelCase when nothing tells');
});

t.test('a 201 with warnings says how many in X-Edge-Events-Warnings, which a listed origin\'s page may read; a 201 without has none', async (t) => {
  const origin = 'http://dashboard:3000';
  const store = await startStore({ CORS_ALLOWED_ORIGINS: origin });
  t.teardown(() => store.stop());
  const post = (body: unknown) => fetch(`${store.url}/v2/events`, { method: 'POST', headers: { 'Content-Type': 'application/json', Origin: origin }, body: JSON.stringify(body) });
  const warned = await post(misnamedEvent());
  t.equal(warned.status, 201);
  const { warnings } = await warned.json() as { warnings: unknown[] };
  t.equal(warned.headers.get('x-edge-events-warnings'), String(warnings.length));
  t.equal(warnings.length, 4);
  t.match(warned.headers.get('access-control-expose-headers'), /\bX-Edge-Events-Warnings\b/);
  const plain = await post(imageEvent());
  t.equal(plain.status, 201);
  t.equal(plain.headers.get('x-edge-events-warnings'), null);
});
