/**
 * The bounds on a create's geometry (docs/API.md, "Create an event"; docs/RELIABILITY.md, "Memory under the largest valid creates": one image with one
 * segmentation of 3,100,000 points, 18.6 MB, under MAX_RECORD_SIZE_BYTES, was one prediction):
 * at most 10,000 points per polygon and 1,000 keypoints per group (schemas/shapes.json), and
 * MAX_POINTS_PER_EVENT polygon points and keypoints per create, and MAX_PREDICTIONS_PER_EVENT
 * predictions per create (a create of 260,000 detections cost 1.75 s of CPU: native-bench/RESULTS.stalls.md); past any,
 * 422 naming the path and the cap, nothing stored. Over real HTTP against a store on port 0.
 */
import t from 'tap';
import { ConfigError, loadConfig } from '../src/config.js';
import { MAX_POINTS_PER_POLYGON, segmentations } from '../scripts/lib/maximal-creates.js';
import { getJson, postJson, smallEvent } from './support/events.js';
import { startStore } from './support/store-server.js';

const MiB = 1024 * 1024;

const box = { class: 'part', x: 10, y: 10, width: 4, height: 4, confidence: 0.5 };
const pairs = (n: number) => Array.from({ length: n }, (_, i) => [i % 640, (i * 7) % 480]);
const keypoints = (n: number) => Array.from({ length: n }, (_, i) => ({ id: i, x: i % 640, y: 5 }));
const withImage = (image: Record<string, unknown>) => smallEvent({ images: [{ label: 'cam', ...image }] });

t.test('the report\'s 3,100,000-point segmentation answers 422 naming the path and the cap', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  // Single-digit pairs, `[3,1],`: 6 bytes a point, the report's 18.6 MB.
  const body = JSON.stringify(withImage({ instanceSegmentations: [{ ...box, points: Array.from({ length: 3_100_000 }, (_, i) => [i % 10, (i * 7) % 10]) }] }));
  t.ok(body.length < 20 * MiB, `${(body.length / MiB).toFixed(1)} MiB, under MAX_RECORD_SIZE_BYTES`);
  const refused = await postJson(`${store.url}/v2/events`, body);
  t.equal(refused.status, 422);
  t.same(refused.body.detail, [{ loc: ['body', 'images', 0, 'instanceSegmentations', 0, 'points'], msg: 'ensure this value has at most 10000 items', type: 'value_error.list.max_items' }]);
  t.equal((await getJson(`${store.url}/stats`)).body.current.total_events, 0, 'nothing stored');
});

t.test('10,000 points per polygon, 20,000 numbers per flat polygon, 1,000 keypoints per group', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const post = (image: Record<string, unknown>) => postJson(`${store.url}/v2/events`, withImage(image));

  t.equal((await post({ instance_segmentations: [{ ...box, points: pairs(MAX_POINTS_PER_POLYGON) }] })).status, 201, '10,000 [x, y] pairs: accepted');
  const pairsOver = await post({ instance_segmentations: [{ ...box, points: pairs(MAX_POINTS_PER_POLYGON + 1) }] });
  t.same([pairsOver.status, pairsOver.body.detail], [422, [{ loc: ['body', 'images', 0, 'instance_segmentations', 0, 'points'], msg: 'ensure this value has at most 10000 items', type: 'value_error.list.max_items' }]]);

  const flat = (n: number) => Array.from({ length: n }, (_, i) => i % 100);
  t.equal((await post({ instance_segmentations: [{ ...box, points: [flat(20_000), flat(6)] }] })).status, 201, 'a flat polygon of 20,000 numbers: accepted');
  const flatOver = await post({ instance_segmentations: [{ ...box, points: [flat(6), flat(20_001)] }] });
  t.same([flatOver.status, flatOver.body.detail[0].loc, flatOver.body.detail[0].msg], [422, ['body', 'images', 0, 'instance_segmentations', 0, 'points', 1], 'ensure this value has at most 20000 items']);

  t.equal((await post({ keypoints: [{ ...box, keypoints: keypoints(1000) }] })).status, 201, '1,000 keypoints in a group: accepted');
  const keypointsOver = await post({ keypoints: [{ ...box, keypoints: keypoints(1001) }] });
  t.same([keypointsOver.status, keypointsOver.body.detail], [422, [{ loc: ['body', 'images', 0, 'keypoints', 0, 'keypoints'], msg: 'ensure this value has at most 1000 items', type: 'value_error.list.max_items' }]]);
  t.equal((await getJson(`${store.url}/stats`)).body.current.total_events, 3, 'only the accepted events are stored');
});

t.test('MAX_POINTS_PER_EVENT bounds the points of a create over all its images', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  // The default, 100,000: ten full polygons in two images, and one point more.
  const atCap = smallEvent({ images: [{ instance_segmentations: segmentations(60_000, false) }, { instance_segmentations: segmentations(40_000, false) }] });
  t.equal((await postJson(`${store.url}/v2/events`, atCap)).status, 201, '100,000 points: accepted');
  const overCap = smallEvent({ images: [{ instance_segmentations: segmentations(60_000, false) }, { instance_segmentations: segmentations(40_000, false), keypoints: [{ ...box, keypoints: keypoints(1) }] }] });
  const refused = await postJson(`${store.url}/v2/events`, overCap);
  t.equal(refused.status, 422, 'one keypoint more: refused');
  t.same(refused.body.detail, [{
    loc: ['body', 'images', 1],
    msg: 'the event has 100001 points (instance segmentation polygon points and keypoints, over all its images), passing the bound at image 1; MAX_POINTS_PER_EVENT allows at most 100000 per event',
    type: 'value_error.points.max_items',
  }]);

  // How points count, against a low setting: an inner array counts half its numbers, rounded up, and at least one.
  const low = await startStore({ MAX_POINTS_PER_EVENT: '6' });
  t.teardown(low.stop);
  const count = async (image: Record<string, unknown>) => (await postJson(`${low.url}/v2/events`, withImage(image))).status;
  t.equal(await count({ instance_segmentations: [{ ...box, points: pairs(4) }], keypoints: [{ ...box, keypoints: keypoints(2) }] }), 201, '4 pairs + 2 keypoints = 6');
  t.equal(await count({ instance_segmentations: [{ ...box, points: [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]] }] }), 201, 'a flat polygon of 12 numbers = 6');
  t.equal(await count({ instance_segmentations: [{ ...box, points: [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]] }] }), 422, '13 numbers = 7');
  t.equal(await count({ instance_segmentations: [{ ...box, points: [[], [], [], [], [], [], []] }] }), 422, 'seven empty arrays = 7');
  t.equal(await count({ keypoints: [{ ...box, keypoints: keypoints(7) }] }), 422, '7 keypoints');
});

t.test('MAX_POINTS_PER_EVENT: 100,000 by default, a positive integer', async (t) => {
  t.equal(loadConfig({}).maxPointsPerEvent, 100_000);
  t.equal(loadConfig({ MAX_POINTS_PER_EVENT: '250000' }).maxPointsPerEvent, 250_000);
  for (const value of ['0', '1.5', 'many']) t.throws(() => loadConfig({ MAX_POINTS_PER_EVENT: value }), ConfigError, `${value} refused`);
});

t.test('MAX_PREDICTIONS_PER_EVENT bounds the predictions of a create over all its images', async (t) => {
  const store = await startStore({ MAX_PREDICTIONS_PER_EVENT: '10000' });
  t.teardown(store.stop);
  // Ten images of 1,000 detections: a body weighing over 1 MiB, prepared on the create
  // preparer's worker; then one classification more, in an eleventh image.
  const detection = (i: number) => ({ class: `c${i % 80}`, x: 100 + (i % 1700), y: 50 + (i % 1000), width: 40.5, height: 80.25, confidence: 0.875 });
  const images: Record<string, unknown>[] = Array.from({ length: 10 }, () => ({ object_detections: Array.from({ length: 1000 }, (_, i) => detection(i)) }));
  t.equal((await postJson(`${store.url}/v2/events`, smallEvent({ images }))).status, 201, '10,000 predictions: accepted');
  const refused = await postJson(`${store.url}/v2/events`, smallEvent({ images: [...images, { classifications: [{ class: 'crowd', confidence: 0.5 }] }] }));
  t.equal(refused.status, 422, 'one prediction more: refused');
  t.same(refused.body.detail, [{
    loc: ['body', 'images', 10],
    msg: 'the event has 10001 predictions (object detections, instance segmentations, keypoint groups and classifications, over all its images), '
      + 'passing the bound at image 10; MAX_PREDICTIONS_PER_EVENT allows at most 10000 per event',
    type: 'value_error.predictions.max_items',
  }]);
  t.equal((await getJson(`${store.url}/stats`)).body.current.total_events, 1, 'only the accepted event is stored');

  // Every kind counts, against a low setting; a light body is checked in place.
  const low = await startStore({ MAX_PREDICTIONS_PER_EVENT: '4' });
  t.teardown(low.stop);
  const status = async (list: Record<string, unknown>[]) => (await postJson(`${low.url}/v2/events`, smallEvent({ images: list }))).status;
  const classification = { class: 'day', confidence: 0.5 };
  t.equal(await status([{ object_detections: [box], classifications: [classification] }, { instance_segmentations: [{ ...box, points: pairs(3) }], keypoints: [{ ...box, keypoints: keypoints(2) }] }]), 201, 'one of each kind over two images = 4');
  t.equal(await status([{ object_detections: [box, box, box] }, { classifications: [classification, classification] }]), 422, '3 + 2 = 5');
});

t.test('MAX_PREDICTIONS_PER_EVENT: 100,000 by default, a positive integer', async (t) => {
  t.equal(loadConfig({}).maxPredictionsPerEvent, 100_000);
  t.equal(loadConfig({ MAX_PREDICTIONS_PER_EVENT: '260000' }).maxPredictionsPerEvent, 260_000);
  for (const value of ['0', '1.5', 'many']) t.throws(() => loadConfig({ MAX_PREDICTIONS_PER_EVENT: value }), ConfigError, `${value} refused`);
});
