/**
 * `/stats`' `next_cleanup_will_delete` predicts the retention stage of the next cleanup
 * (docs/API.md, "Statistics", "Cleanup and reset"; docs/OPERATIONS.md, "Keeping the disk
 * bounded"): over real HTTP with real media, the records, files and bytes past retention that
 * `/stats` answers are exactly what `POST /admin/cleanup` then deletes, with cloud upload off
 * (everything past retention goes) and on (drafts are kept, so they are not predicted either).
 */
import t, { type Test } from 'tap';
import { fixture, getJson, imageEvent, postJson, smallEvent } from './support/events.js';
import { FakeCloud } from './support/fake-cloud.js';
import { postFile } from './support/multipart.js';
import { startStore, type TestStore } from './support/store-server.js';
import { until } from './support/waiting.js';

/** RETENTION_DAYS of these tests: 2.592 s. */
const RETENTION_DAYS = '0.00003';
const KEY = 'cloud-key';

async function create(store: TestStore, body: Record<string, unknown>): Promise<{ id: string; image_ids: string[] }> {
  const res = await postJson(`${store.url}/v2/events`, body);
  if (res.status !== 201) throw new Error(`create answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body;
}

/** Waits until the store's own retention cutoff (`/stats`) has passed the event `id`: it is old. */
async function pastRetention(store: TestStore, id: string): Promise<void> {
  const createdAt = (await getJson(`${store.url}/v2/events/${id}`)).body.created_at as string;
  // Both are formatMicros strings, which sort as the times they name.
  await until(`event ${id} past retention`, async () => (await getJson(`${store.url}/stats`)).body.next_cleanup_will_delete.retention_cutoff_timestamp > createdAt);
}

/** Asks `/stats` for its prediction, runs a cleanup at once, and returns both. */
async function predictThenClean(t: Test, store: TestStore) {
  const stats = await getJson(`${store.url}/stats`);
  t.equal(stats.status, 200);
  const cleanup = await postJson(`${store.url}/admin/cleanup`, '');
  t.equal(cleanup.status, 200);
  return { predicted: stats.body.next_cleanup_will_delete, result: cleanup.body };
}

async function status(url: string): Promise<number> {
  const res = await fetch(url);
  await res.arrayBuffer();
  return res.status;
}

t.test('cloud upload off: /stats predicts every record, file and byte retention then deletes', async (t) => {
  const store = await startStore({ RETENTION_DAYS });
  t.teardown(store.stop);
  await create(store, imageEvent({}, 'cat.jpg'));
  await create(store, imageEvent({}, 'camera.jpg'));
  await create(store, smallEvent());
  const draft = await create(store, imageEvent({ draft: true }, 'rocket.jpg'));
  t.equal((await postFile(`${store.url}/v2/events/${draft.id}/local-only-files`, fixture('retina.jpg'), {}, 'image/jpeg')).status, 201);
  await pastRetention(store, draft.id);
  const fresh = await create(store, imageEvent());

  const { predicted, result } = await predictThenClean(t, store);
  const oldBytes = ['cat.jpg', 'camera.jpg', 'rocket.jpg', 'retina.jpg'].reduce((sum, name) => sum + fixture(name).length, 0);
  t.same(
    [predicted.records_past_retention, predicted.files_past_retention, predicted.bytes_past_retention],
    [4, 4, oldBytes],
    'the prediction counts the four old events, their four files and their bytes',
  );
  t.equal(result.records_deleted.retention, predicted.records_past_retention, 'records deleted as predicted');
  t.equal(result.files_deleted.retention, predicted.files_past_retention, 'files deleted as predicted');
  t.equal(result.bytes_freed, predicted.bytes_past_retention, 'bytes freed as predicted');
  t.equal(await status(`${store.url}/v2/events/${fresh.id}`), 200, 'the fresh event stays');
});

t.test('cloud upload on: drafts are kept by cleanup and left out of the prediction', async (t) => {
  const cloud = await FakeCloud.start(KEY);
  t.teardown(() => cloud.close());
  const store = await startStore({ RETENTION_DAYS, CLOUD_UPLOAD_URL: cloud.url, CLOUD_API_KEY: KEY, DEFAULT_SOLUTION_ID: 'uc-default' });
  t.teardown(store.stop);
  const shipped = [await create(store, imageEvent({}, 'cat.jpg')), await create(store, imageEvent({}, 'camera.jpg'))];
  const draft = await create(store, imageEvent({ draft: true }, 'rocket.jpg'));
  await until('both finalized events shipped and off the queue', async () =>
    shipped.every(({ id }) => cloud.events.has(id)) && (await getJson(`${store.url}/stats`)).body.capacity.uploads_pending === 0);
  await pastRetention(store, draft.id);

  const { predicted, result } = await predictThenClean(t, store);
  t.same(
    [predicted.records_past_retention, predicted.files_past_retention, predicted.bytes_past_retention],
    [2, 2, fixture('cat.jpg').length + fixture('camera.jpg').length],
    'the prediction counts the shipped events only, not the draft',
  );
  t.equal(result.records_deleted.retention, predicted.records_past_retention, 'records deleted as predicted');
  t.equal(result.files_deleted.retention, predicted.files_past_retention, 'files deleted as predicted');
  t.equal(result.bytes_freed, predicted.bytes_past_retention, 'bytes freed as predicted');
  t.equal(await status(`${store.url}/v2/events/${draft.id}`), 200, 'the draft is kept');
  for (const { id } of shipped) t.equal(await status(`${store.url}/v2/events/${id}`), 404, 'a shipped event past retention is gone');
});
