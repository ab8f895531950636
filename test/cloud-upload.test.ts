/**
 * Cloud upload and its back-pressure (docs/OPERATIONS.md, "Cloud upload"; docs/API.md, "Capacity
 * and 529", E1, E10) against a real local HTTP server standing in for the cloud Vision Events API,
 * with real JPEGs and videos. Waits are bounded polls, never fixed sleeps.
 */
import t, { type Test } from 'tap';
import { loadConfig } from '../src/config.js';
import { presentEventJson } from '../src/events/present.js';
import { CloudSink, type CloudSinkDeps } from '../src/lifecycle/cloud-uploader.js';
import { shipNextBatch } from '../src/lifecycle/sink-runner.js';
import { createLogger } from '../src/logger.js';
import { openDatabases } from '../src/store/index/lmdb-env.js';
import { deadLetterKey } from '../src/store/index/index-keys.js';
import { StoreView } from '../src/store/read/store-view.js';
import { enterLedger, isProtected } from '../src/store/ledger/sink-ledger.js';
import { fixture, getJson, imageEvent, postJson, smallEvent } from './support/events.js';
import { BATCH_PATH, FakeCloud, UPLOAD_PATH } from './support/fake-cloud.js';
import { postFile } from './support/multipart.js';
import { startStore, type TestStore } from './support/store-server.js';
import { until } from './support/waiting.js';
import { storeHandles } from '../src/store/read/store-view.js';
import { LifecycleStore } from '../src/store/engine/lifecycle-store.js';

const KEY = 'cloud-key';

/** Polls `probe` every 50 ms until it returns a truthy value; fails after `timeoutMs`. */

async function startCloud(t: Test): Promise<FakeCloud> {
  const cloud = await FakeCloud.start(KEY);
  t.teardown(() => cloud.close());
  return cloud;
}

/**
 * A store shipping to `cloud`. A sink sees an event once a checkpoint committed it, and with a sink
 * the checkpoint waits INDEX_CHECKPOINT_MS (docs/STORAGE.md, "When a checkpoint runs"): 50 ms
 * here, not the default second.
 */
const cloudEnv = (cloud: FakeCloud, env: Record<string, string> = {}) => ({ CLOUD_UPLOAD_URL: cloud.url, CLOUD_API_KEY: KEY, DEFAULT_SOLUTION_ID: 'uc-default', INDEX_CHECKPOINT_MS: '50', ...env });

async function create(store: TestStore, body: Record<string, unknown>): Promise<{ id: string; image_ids: string[] }> {
  const res = await postJson(`${store.url}/v2/events`, body);
  if (res.status !== 201) throw new Error(`create answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body;
}

/** The created_at keys still in the upload queue, and the dead letters, of a stopped store. */
function queues(view: StoreView) {
  const keys = (code: string) => [...view[storeHandles].dbs.index.getKeys({ start: [code, -Infinity], end: [code, Infinity] })].map((k) => (k as [string, number])[1]);
  return { queued: keys('U'), dead: keys('X') };
}

/** Every object key of `value`, at any depth, except inside `customMetadata` (the producer's own keys). */
function keysOf(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(keysOf);
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, inner]) => [key, ...(key === 'customMetadata' ? [] : keysOf(inner))]);
}

t.test('finalized events ship oldest first, in camelCase, with the exact image bytes', async (t) => {
  const cloud = await startCloud(t);
  const store = await startStore(cloudEnv(cloud));
  t.teardown(store.stop);
  const detection = { class: 'cat', x: 225, y: 150, width: 200, height: 180, confidence: 0.92 };
  const results = {
    objectDetections: [detection],
    classifications: [{ class: 'cat', confidence: 0.97 }],
    instanceSegmentations: [{ ...detection, points: [[1, 2], [3, 4]] }],
    keypoints: [{ ...detection, keypoints: [{ id: 0, x: 1, y: 2, occluded: false }] }],
  };
  const a = await create(store, imageEvent({
    solution: 'uc-line-a',
    streamId: 'stream-7',
    displayImagePosition: 0,
    images: [{ label: 'front', base64Image: fixture('cat.jpg').toString('base64'), inputBase64Image: fixture('rocket.jpg').toString('base64'), ...results }],
  }));
  const b = await create(store, imageEvent({ solution: 'uc-line-a' }, 'camera.jpg'));
  const c = await create(store, smallEvent({ event_data: { value: 'ok', external_id: 'x-9' } }));

  await until('three events in the cloud', () => cloud.events.size === 3);
  t.same(cloud.order, [a.id, b.id, c.id], 'shipped in created_at order');
  const stored = (await getJson(`${store.url}/v2/events/${a.id}`)).body;
  const shipped = cloud.events.get(a.id)!;
  const [image] = shipped.images;
  t.strictSame(shipped, {
    eventId: a.id,
    eventType: 'quality_check',
    useCaseId: 'uc-line-a',
    timestamp: stored.inference_timestamp,
    deviceId: 'cam-1',
    streamId: 'stream-7',
    workflowId: 'wf-inspect',
    eventData: { result: 'pass', externalId: 'lot-1' },
    customMetadata: { line: 'A', temperature: 21.5 },
    displayImagePosition: 0,
    images: [{ sourceId: image.sourceId, inputSourceId: image.inputSourceId, label: 'front', ...results }],
  });
  t.same(cloud.image(image.sourceId)?.bytes, fixture('cat.jpg'), 'image bytes exact');
  t.equal(cloud.image(image.sourceId)?.contentType, 'image/jpeg');
  t.equal(cloud.image(image.sourceId)?.name, `${a.image_ids[0]}.jpg`);
  t.same(cloud.image(image.inputSourceId)?.bytes, fixture('rocket.jpg'), 'input image bytes exact');
  t.same(cloud.image(cloud.events.get(b.id)!.images[0].sourceId)?.bytes, fixture('camera.jpg'));
  t.strictSame(cloud.events.get(c.id)!.eventData, { value: 'ok', externalId: 'x-9' }, 'snake_case input ships camelCase');
  t.equal(cloud.events.get(c.id)!.useCaseId, 'uc-default', 'without solution, useCaseId is DEFAULT_SOLUTION_ID');
  t.same([...cloud.events.values()].flatMap(keysOf).filter((key) => key.includes('_')), [], 'no snake_case field anywhere');
  t.equal(cloud.images.length, 3, 'each image uploaded once');
  t.same(cloud.requests.filter((r) => r.answer === 401), [], 'every request carried the Bearer key');
});

t.test('drafts wait until finalized; videos and local-only files are never uploaded', async (t) => {
  const cloud = await startCloud(t);
  const store = await startStore(cloudEnv(cloud));
  t.teardown(store.stop);
  const draft = await create(store, imageEvent({ draft: true }, 'camera.jpg'));
  t.equal((await postFile(`${store.url}/v2/events/${draft.id}/videos`, fixture('cat-zoom.mp4'))).status, 201);
  t.equal((await postFile(`${store.url}/v2/events/${draft.id}/local-only-files`, fixture('retina.jpg'), {}, 'image/jpeg')).status, 201);
  const later = await create(store, smallEvent());

  await until('the finalized event in the cloud', () => cloud.events.has(later.id));
  t.notOk(cloud.events.has(draft.id), 'the draft is not shipped');
  t.equal(cloud.images.length, 0, 'none of the draft\'s files uploaded');

  t.equal((await postJson(`${store.url}/v2/events/${draft.id}/finalize`, {})).status, 200);
  await until('the finalized draft in the cloud', () => cloud.events.has(draft.id));
  t.equal(cloud.images.length, 1, 'only the event image is uploaded');
  t.same(cloud.images[0].bytes, fixture('camera.jpg'));
  t.equal(cloud.events.get(draft.id)!.images[0].sourceId, cloud.images[0].sourceId);
  t.notOk(keysOf(cloud.events.get(draft.id)).some((key) => /video|local/i.test(key)), 'no video or local-only file listed');
});

t.test('E1: with cloud upload on and no DEFAULT_SOLUTION_ID, a create without solution answers 400', async (t) => {
  const cloud = await startCloud(t);
  const store = await startStore({ CLOUD_UPLOAD_URL: cloud.url, CLOUD_API_KEY: KEY });
  t.teardown(store.stop);
  const refused = await postJson(`${store.url}/v2/events`, smallEvent());
  t.equal(refused.status, 400);
  t.match(refused.body.detail, /solution/);
  const own = await create(store, smallEvent({ solution: 'uc-own' }));
  await until('the event in the cloud', () => cloud.events.has(own.id));
  t.equal(cloud.events.get(own.id)!.useCaseId, 'uc-own');
  t.equal(cloud.events.size, 1, 'nothing of the refused create shipped');
});

t.test('5xx, 429 (Retry-After) and dropped connections are retried until the event ships once', async (t) => {
  const cloud = await startCloud(t);
  cloud.inject({ status: 500 }, { path: UPLOAD_PATH, times: 2 });
  cloud.inject({ status: 429, headers: { 'retry-after': '1' } }, { path: BATCH_PATH, times: 1 });
  cloud.inject('close', { path: BATCH_PATH, times: 1 });
  const store = await startStore(cloudEnv(cloud));
  t.teardown(store.stop);
  const event = await create(store, imageEvent());

  await until('the event in the cloud', () => cloud.events.has(event.id));
  t.equal(cloud.seen(UPLOAD_PATH, 500).length, 2);
  t.equal(cloud.seen(UPLOAD_PATH, 201).length, 1, 'the image is uploaded once, before the batch');
  t.same(cloud.requests.filter((r) => r.path === BATCH_PATH).map((r) => r.answer), [429, 'close', 201]);
  const [limited, next] = cloud.requests.filter((r) => r.path === BATCH_PATH);
  t.ok(next.at - limited.at >= 990, `the retry after a 429 waited its Retry-After (${next.at - limited.at} ms)`);
  t.equal(cloud.deliveries.get(event.id), 1);
  t.same(cloud.events.get(event.id)!.images[0].sourceId, cloud.images[0].sourceId);
});

t.test('a wrong key (401) is retried, never dead-lettered: the events stay queued and protected', async (t) => {
  const cloud = await startCloud(t);
  const store = await startStore(cloudEnv(cloud, { CLOUD_API_KEY: 'not-the-key' }));
  const event = await create(store, smallEvent());
  await until('two refused attempts', () => cloud.seen(BATCH_PATH, 401).length >= 2);
  await store.stop();
  t.equal(cloud.events.size, 0);

  const view = new StoreView(openDatabases(store.dataDir), store.dataDir, { sinks: ['cloud'], present: presentEventJson });
  t.teardown(() => view.close());
  const createdAt = view.getEvent(event.id)!.created_at;
  t.same(queues(view), { queued: [createdAt], dead: [] });
  t.ok(isProtected(view, createdAt));
});

t.test('upload state survives a restart; a refused event is dead-lettered and the rest ship once, in order', async (t) => {
  const cloud = await startCloud(t);
  cloud.inject({ status: 500 });
  const first = await startStore(cloudEnv(cloud));
  const [a, b, c] = [await create(first, imageEvent()), await create(first, smallEvent()), await create(first, imageEvent({}, 'rocket.jpg'))];
  await until('the cloud refused an attempt', () => cloud.requests.length > 0);
  await first.stop();
  t.equal(cloud.events.size, 0, 'nothing shipped while the cloud failed');

  cloud.heal();
  cloud.refuseEvent(b.id);
  const second = await startStore(cloudEnv(cloud, { DATA_DIR: first.dataDir }));
  await until('a and c in the cloud', () => cloud.events.has(a.id) && cloud.events.has(c.id));
  // The cloud has them before the store has recorded them shipped: wait for that too.
  // The worker reports its shipped and dead-lettered totals in a message after the commit that
  // empties the queue: wait until all three events are accounted for, then check each figure.
  await until('the upload queue recorded empty', async () => (await getJson(`${second.url}/stats`)).body.capacity.uploads_pending === 0);
  await until('all three events counted shipped or dead-lettered', async () => {
    const { cloud } = (await getJson(`${second.url}/stats`)).body.sinks;
    return cloud.shipped_total + cloud.dead_lettered_total >= 3;
  });
  const { cloud: status } = (await getJson(`${second.url}/stats`)).body.sinks;
  t.match(status, { backlog_events: 0, oldest_unshipped_age_seconds: null, shipped_total: 2, dead_lettered_total: 1, stalled: false }, '/stats sinks.cloud');
  const metrics = await (await fetch(`${second.url}/metrics`)).text();
  t.match(metrics, /edge_events_sink_shipped_total\{sink="cloud"\} 2/);
  t.match(metrics, /edge_events_sink_dead_lettered_total\{sink="cloud"\} 1/);
  await second.stop();
  t.same(cloud.order, [a.id, c.id], 'in created_at order');
  t.same([...cloud.deliveries.values()], [1, 1], 'each event delivered once');
  t.same(cloud.images.map((i) => i.bytes), [fixture('cat.jpg'), fixture('rocket.jpg')], 'each image uploaded once');
  t.same(cloud.seen(BATCH_PATH, 400).map((r) => r.eventIds), [[a.id, b.id, c.id], [a.id, b.id], [b.id]], 'the refused batch is halved down to the bad event');

  const view = new StoreView(openDatabases(first.dataDir), first.dataDir, { sinks: ['cloud'], present: presentEventJson });
  t.teardown(() => view.close());
  const createdAtB = view.getEvent(b.id)!.created_at;
  t.same(queues(view), { queued: [], dead: [createdAtB] }, 'queue empty; the refused event is a dead letter');
  t.ok(view[storeHandles].dbs.index.doesExist(deadLetterKey(createdAtB, 'cloud')));
  t.equal(isProtected(view, createdAtB), false, 'a dead letter is no longer protected from cleanup');
});

t.test('the cloud sink: hung and dropped requests are retried, a vanished image is left out, stop aborts', async (t) => {
  const cloud = await startCloud(t);
  cloud.inject({ status: 500 });
  const store = await startStore(cloudEnv(cloud));
  const event = await create(store, imageEvent({
    images: [{ label: 'front', base64Image: fixture('cat.jpg').toString('base64'), inputBase64Image: fixture('rocket.jpg').toString('base64') }],
  }));
  await store.stop();
  cloud.heal();

  const config = loadConfig({ DATA_DIR: store.dataDir, ...cloudEnv(cloud) });
  // The lifecycle worker's handle, as the cloud sink runs in the worker: it deletes a file too.
  const view = LifecycleStore.open(store.dataDir, { sinks: ['cloud'], present: presentEventJson }, () => undefined);
  t.teardown(() => view.close());
  const record = view.getEvent(event.id)!;
  await view.deleteFiles([{ createdAt: record.created_at, fileId: record.images[0].input_file_id! }]);
  const deps = { log: createLogger('silent'), backoff: { baseMs: 5, capMs: 20 }, requestTimeoutMs: 300 };
  const pass = (options: CloudSinkDeps, signal = new AbortController().signal) => shipNextBatch(view, new CloudSink(view, config, options), ['cloud'], signal);

  cloud.inject('hang', { path: UPLOAD_PATH, times: 1 });
  cloud.inject('close', { path: BATCH_PATH, times: 1 });
  t.same(await pass(deps), { shipped: 1, deadLettered: 0 });
  t.equal(cloud.seen(UPLOAD_PATH, 'hang').length, 1, 'the hung upload timed out and was retried');
  t.equal(cloud.seen(BATCH_PATH, 'close').length, 1);
  const shipped = cloud.events.get(event.id)!;
  t.same(cloud.image(shipped.images[0].sourceId)?.bytes, fixture('cat.jpg'));
  t.notOk('inputSourceId' in shipped.images[0], 'the vanished input image is left out');
  t.equal(cloud.images.length, 1);
  t.same(queues(view).queued, []);
  t.equal(await pass(deps), undefined, 'nothing left to ship');

  await view[storeHandles].dbs.root.transaction(() => enterLedger(view[storeHandles].dbs, record.created_at)); // ship it again
  cloud.inject('hang');
  const stop = new AbortController();
  const hung = pass({ ...deps, requestTimeoutMs: 60_000 }, stop.signal);
  await until('a hung request', () => cloud.seen(UPLOAD_PATH, 'hang').length === 2);
  stop.abort();
  await t.rejects(hung, { name: 'AbortError' }, 'stop ends a hung request at once');
  t.same(queues(view).queued, [record.created_at], 'the event stays queued');
});

t.test('protection and back-pressure: un-uploaded events are kept, the store blocks (529), then drains and reopens', async (t) => {
  const cloud = await startCloud(t);
  cloud.inject({ status: 500 });
  const store = await startStore(cloudEnv(cloud, { MAX_RECORDS: '5', CLEANUP_INTERVAL_SECONDS: '3600' }));
  t.teardown(store.stop);
  const draft = await create(store, smallEvent({ draft: true }));
  const events = [await create(store, imageEvent())];
  for (let i = 0; i < 3; i++) events.push(await create(store, smallEvent()));
  // Five kept records fill MAX_RECORDS: the next create would overfill the store, so it is refused.
  t.equal((await postJson(`${store.url}/v2/events`, smallEvent())).status, 529, 'the create that would overfill');

  const cleanup = await postJson(`${store.url}/admin/cleanup`, {});
  t.equal(cleanup.status, 200);
  t.equal(cleanup.body.records_deleted.total, 0, 'nothing un-uploaded (nor the draft) is deleted');
  t.equal(cleanup.body.after.records, 5);

  const imageUrl = `${store.url}/images/${events[0].image_ids[0]}`;
  t.equal((await postJson(`${store.url}/v2/events`, smallEvent())).status, 529, 'create');
  t.equal((await getJson(`${store.url}/v2/events`)).status, 529, 'list');
  t.equal((await getJson(`${store.url}/v2/events/${events[1].id}`)).status, 529, 'get');
  t.equal((await postFile(`${store.url}/v2/events/${draft.id}/videos`, fixture('cat-zoom.mp4'))).status, 529, 'attach');
  t.equal((await fetch(imageUrl)).status, 529, 'download');
  const finalized = await postJson(`${store.url}/v2/events/${draft.id}/finalize`, {});
  t.equal(finalized.status, 200, 'finalize stays available (E10)');
  t.equal(finalized.body.already_finalized, false);

  cloud.heal();
  await until('every event in the cloud', () => cloud.events.size === 5); // none was deleted un-uploaded
  let reopened: { count?: number } = {};
  await until('the gate to reopen', async () => {
    const res = await getJson(`${store.url}/v2/events?limit=100`);
    reopened = res.body;
    return res.status === 200;
  });
  t.equal(reopened.count, 5, 'every record is still there');
  t.equal((await postJson(`${store.url}/v2/events`, smallEvent())).status, 201, 'create works again');
  await until('cleanup to delete a shipped record', async () => (await getJson(`${store.url}/stats`)).body.current.total_events === 5);
  t.equal((await getJson(`${store.url}/stats`)).body.capacity.blocked, false);
});
