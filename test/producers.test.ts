/**
 * Real producers work unchanged (docs/API.md, "Create an event", "Capacity and 529", "Errors"):
 * the requests that device-side producers send, against the real store on port 0 over HTTP, with
 * real LMDB and real images. Each case failed before the store was made lenient where producers
 * differ from the contract's letter, and prompt and quiet with back-pressure.
 */
import t from 'tap';
import { fixture, getJson, imageEvent, postJson, producerKeypointEvent, smallEvent, wrappedBase64 } from './support/events.js';
import { unusedPort } from '../scripts/lib/raw-http.js';
import { spawnStore } from '../scripts/lib/spawned-store.js';
import { startStore, tempDataDir } from './support/store-server.js';

/** Settings of a store whose cloud upload target never answers: nothing is ever shipped. */
async function unreachableCloud(env: Record<string, string> = {}): Promise<Record<string, string>> {
  return { CLOUD_UPLOAD_URL: `http://127.0.0.1:${await unusedPort()}`, CLOUD_API_KEY: 'k', ...env };
}

t.test('a keypoint event as the producers send it is stored: occluded false, unknown keys dropped, wrapped base64 decoded', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const created = await postJson(`${store.url}/v2/events`, producerKeypointEvent());
  t.equal(created.status, 201, JSON.stringify(created.body));
  t.notOk('warnings' in created.body, 'the producers\' own keys (class_id, detection_id, tracker_id, parent_id, a keypoint\'s class_name) draw no warning');
  const event = (await getJson(`${store.url}/v2/events/${created.body.id}`)).body;
  const [image] = event.images;
  t.same(image.keypoints[0].keypoints, [{ id: 0, x: 300, y: 80, occluded: false }, { id: 1, x: 290, y: 70, occluded: false }]);
  t.same(Object.keys(image.keypoints[0]).sort(), ['class', 'confidence', 'height', 'keypoints', 'width', 'x', 'y']);
  t.same(image.object_detections, [{ class: 'person', x: 320, y: 240, width: 180, height: 400, confidence: 0.87 }], 'stored with its defined keys only');
  const bytes = Buffer.from(await (await fetch(`${store.url}/images/${image.file_id}`)).arrayBuffer());
  t.same(bytes, fixture('rocket.jpg'), 'the exact bytes');
});

t.test('the keys roboflow/inference and supervision put in predictions are accepted without a warning, and not stored', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const box = { x: 320, y: 240, width: 180, height: 400, confidence: 0.87, class: 'person' };
  // inference's HTTP answer (inference/core/entities/responses/inference.py, ObjectDetectionPrediction)
  const httpAnswer = { ...box, class_confidence: null, class_id: 0, tracker_id: 12, detection_id: 'f3a1c2d4-0000-4000-8000-000000000003', parent_id: 'image' };
  // a Workflow's sv.Detections (inference/core/workflows/core_steps/common/serializers.py, serialise_sv_detections)
  const workflow = {
    ...box, class_id: 0, tracker_id: 12, detection_id: 'd-1', parent_id: 'crop-1', root_parent_id: 'image', parent_origin: { offset_x: 0, offset_y: 0, width: 640, height: 480 },
    root_parent_origin: { offset_x: 0, offset_y: 0, width: 640, height: 480 }, time_in_zone: 3.5, path_deviation: 0.1, velocity: [1, 0], speed: 1, smoothed_velocity: [1, 0],
    smoothed_speed: 1, area_px: 72000, area_converted: 7.2, data: 'QR-118', rect: [[0, 0], [1, 0], [1, 1], [0, 1]], angle: 0, polygon: [[0, 0], [1, 0], [1, 1]],
  };
  // supervision's JSONSink row (supervision/detection/tools/json_sink.py), beside the store's box
  const sinkRow = { ...box, x_min: 230, y_min: 40, x_max: 410, y_max: 440, class_id: 0, tracker_id: 12, class_name: 'person' };
  const created = await postJson(`${store.url}/v2/events`, imageEvent({
    images: [{
      base64Image: fixture('cat.jpg').toString('base64'),
      objectDetections: [httpAnswer, workflow, sinkRow],
      classifications: [{ class: 'cat', class_id: 3, confidence: 0.9 }],
      instanceSegmentations: [{ ...box, class_id: 0, detection_id: 'd-2', parent_id: 'image', rle_mask: { size: [480, 640], counts: 'x' }, points: [[0, 0], [1, 0], [1, 1]] }],
      keypoints: [{ ...box, class_id: 0, keypoints: [{ id: 0, x: 300, y: 80, class_id: 0, class: 'nose', confidence: 0.91 }] }],
    }],
  }));
  t.equal(created.status, 201, JSON.stringify(created.body));
  t.notOk('warnings' in created.body, JSON.stringify(created.body.warnings));
  const [image] = (await getJson(`${store.url}/v2/events/${created.body.id}`)).body.images;
  t.same(image.object_detections, [box, box, box].map(({ class: name, ...rest }) => ({ class: name, ...rest })), 'stored with the shape\'s keys only');
  t.same(image.classifications, [{ class: 'cat', confidence: 0.9 }]);
  t.same(image.keypoints[0].keypoints, [{ id: 0, x: 300, y: 80, occluded: false }]);
  const misspelt = await postJson(`${store.url}/v2/events`, imageEvent({ images: [{ objectDetections: [{ ...box, trakcer_id: 12 }] }] }));
  t.match(misspelt.body.warnings, [{ loc: ['body', 'images', 0, 'objectDetections', 0, 'trakcer_id'], msg: 'unknown key, ignored; did you mean \'tracker_id\'?' }], 'a misspelt one is still named');
});

t.test('base64 with line breaks is accepted; what does not decode is still refused (E3)', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const jpeg = fixture('cat.jpg');
  for (const [name, text] of [['LF every 76', wrappedBase64(jpeg)], ['CRLF every 76', wrappedBase64(jpeg, '\r\n')], ['spaces and tabs', jpeg.toString('base64').replace(/(.{64})/g, '$1 \t')]]) {
    const res = await postJson(`${store.url}/v2/events`, imageEvent({ images: [{ base64Image: text }] }));
    t.equal(res.status, 201, name);
    const stored = await fetch(`${store.url}/images/${res.body.image_ids[0]}`);
    t.same(Buffer.from(await stored.arrayBuffer()), jpeg, `${name}: the exact bytes`);
  }
  const before = (await getJson(`${store.url}/stats`)).body.current.total_events;
  for (const [name, text] of [['a stray character', `${wrappedBase64(jpeg)}!`], ['truncated', wrappedBase64(jpeg).slice(0, 304)], ['only white space', ' \n\t ']]) {
    const res = await postJson(`${store.url}/v2/events`, imageEvent({ images: [{ base64Image: text }] }));
    t.equal(res.status, 400, name);
    t.match(res.body.detail, /images\[0\]\.base64Image is not valid base64/);
  }
  t.equal((await getJson(`${store.url}/stats`)).body.current.total_events, before, 'nothing refused was stored');
});

t.test('529 comes at the very create that would overfill the store, and then on every gated route', async (t) => {
  const store = await startStore(await unreachableCloud({ MAX_RECORDS: '3', DEFAULT_SOLUTION_ID: 'uc' }));
  t.teardown(store.stop);
  const statuses: number[] = [];
  for (let i = 0; i < 12; i++) statuses.push((await postJson(`${store.url}/v2/events`, smallEvent())).status);
  t.same(statuses, [201, 201, 201, ...Array(9).fill(529)], 'no create past the limit cleanup cannot relieve');
  t.equal((await getJson(`${store.url}/v2/events`)).status, 529, 'the gate closed for the query routes too');
  const stats = (await getJson(`${store.url}/stats`)).body;
  t.equal(stats.current.total_events, 3);
  t.match(stats.capacity, { blocked: true, uploads_pending: 3, requests_refused: 10 });
});

t.test('concurrent creates at the limit: exactly the room left is admitted', async (t) => {
  const store = await startStore(await unreachableCloud({ MAX_RECORDS: '4', DEFAULT_SOLUTION_ID: 'uc' }));
  t.teardown(store.stop);
  t.equal((await postJson(`${store.url}/v2/events`, smallEvent({ draft: true }))).status, 201, 'a draft counts as kept');
  const statuses = await Promise.all(Array.from({ length: 12 }, () => postJson(`${store.url}/v2/events`, smallEvent()).then((r) => r.status)));
  t.equal(statuses.filter((s) => s === 201).length, 3);
  t.equal(statuses.filter((s) => s === 529).length, 9);
  t.equal((await getJson(`${store.url}/stats`)).body.current.total_events, 4);
});

t.test('529 is logged once, at warn, without a stack; the refusals are counted', async (t) => {
  const store = await spawnStore({ ...(await unreachableCloud({ MAX_RECORDS: '2', DEFAULT_SOLUTION_ID: 'uc' })), PORT: '0', DATA_DIR: tempDataDir() });
  t.teardown(() => store.child.kill('SIGKILL'));
  for (let i = 0; i < 10; i++) await postJson(`${store.url}/v2/events`, smallEvent());
  t.equal((await getJson(`${store.url}/stats`)).body.capacity.requests_refused, 8);
  const lines = store.output().split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as { level: number; msg: string; err?: unknown });
  t.same(lines.filter((line) => line.level >= 50), [], 'nothing at error level');
  const blocked = lines.filter((line) => /capacity blocked/.test(line.msg));
  t.equal(blocked.length, 1, 'the crossing is logged once');
  t.equal(blocked[0].level, 40, 'at warn');
  t.notOk(blocked[0].err, 'with no error or stack');
});

t.test('a blank solution is absent: with cloud upload on and no default it answers 400 (E1)', async (t) => {
  const store = await startStore(await unreachableCloud());
  t.teardown(store.stop);
  for (const solution of ['', '   ']) {
    const res = await postJson(`${store.url}/v2/events`, smallEvent({ solution }));
    t.equal(res.status, 400, JSON.stringify(solution));
    t.match(res.body.detail, /solution is required/);
  }
  t.equal((await postJson(`${store.url}/v2/events`, smallEvent({ solution: 'uc-1' }))).status, 201);
});

t.test('a misspelled metadata_filter operator answers 400 naming the valid ones; values with colons still match', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const at = (await postJson(`${store.url}/v2/events`, smallEvent({ custom_metadata: { temperature: 31, time: '10:30' } }))).body.id;
  for (const filter of ['temperature:ge:30', 'temperature:GTE:30', 'temperature:>=:30', 'temperature:neq:30']) {
    const res = await getJson(`${store.url}/v2/events?metadata_filter=${encodeURIComponent(filter)}`);
    t.equal(res.status, 400, filter);
    t.match(res.body.detail, /unknown operator .*expected one of eq, ne, gt, lt, gte, lte/);
  }
  const colon = await getJson(`${store.url}/v2/events?metadata_filter=${encodeURIComponent('time:10:30')}`);
  t.same(colon.body.events.map((e: { id: string }) => e.id), [at], 'time:10:30 is time eq "10:30"');
  const gte = await getJson(`${store.url}/v2/events?metadata_filter=${encodeURIComponent('temperature:gte:30')}`);
  t.same(gte.body.events.map((e: { id: string }) => e.id), [at]);
});

t.test('a known path with a wrong method answers 405 with Allow', async (t) => {
  const store = await startStore({ API_KEY: 'k' });
  t.teardown(store.stop);
  for (const [method, path, allow] of [['DELETE', '/v2/events', 'POST, GET'], ['PUT', '/v2/events/some-id', 'GET'], ['GET', '/v2/events/some-id/finalize', 'POST'], ['POST', '/stats', 'GET'], ['PATCH', '/v2/events/', 'POST, GET']]) {
    const res = await fetch(`${store.url}${path}`, { method });
    t.equal(res.status, 405, `${method} ${path}`);
    t.equal(res.headers.get('allow'), allow);
    t.match(await res.json(), { detail: new RegExp(`^Method ${method} not allowed`) });
  }
  t.equal((await fetch(`${store.url}/no/such/path/here`, { method: 'DELETE' })).status, 404, 'an unknown path stays 404');
});
