/**
 * Recovery after a kill -9 of the built store (docs/STORAGE.md, "Recovery"): every acknowledged
 * create is there with its exact image bytes, from the index or replayed from the log, and counted
 * once, also after a second kill before the first checkpoint; an attach and a finalize, durable in
 * the log before they answered, are replayed, and a reset, flushed before it answered, is never
 * undone. Replay in one process, without a real kill: recovery.test.ts.
 */
import { once } from 'node:events';
import t from 'tap';
import { spawnStore, type SpawnedStore } from '../../scripts/lib/spawned-store.js';
import { fixture, getJson, imageEvent, postJson, smallEvent } from '../support/events.js';
import { postFile } from '../support/multipart.js';
import { tempDataDir } from '../support/store-server.js';

/** No cleanup pass within a test. */
const QUIET = { CLEANUP_INTERVAL_SECONDS: '3600' };

async function kill(store: SpawnedStore): Promise<void> {
  const exited = once(store.child, 'exit');
  store.child.kill('SIGKILL');
  await exited;
}

/** The `store opened` report of a spawned store's log. */
function openReport(store: SpawnedStore): { replayed: number; changesReplayed: number } {
  const line = store.output().split('\n').find((l) => l.includes('"msg":"store opened"'));
  if (!line) throw new Error(`no "store opened" line in: ${store.output().slice(0, 500)}`);
  return JSON.parse(line).store;
}

t.test('kill -9: every acknowledged create is there, from the index or replayed from the log', async (t) => {
  const dataDir = tempDataDir();
  const env = { PORT: '0', DATA_DIR: dataDir, ...QUIET };
  let store = await spawnStore(env);
  t.teardown(() => void store.child.kill('SIGKILL'));
  const images = ['cat.jpg', 'camera.jpg', 'rocket.jpg'];
  const created: { id: string; image_ids: string[]; image: string }[] = [];
  await Promise.all(Array.from({ length: 8 }, async (_, writer) => {
    for (let i = 0; i < 25; i++) {
      const image = images[(writer + i) % images.length];
      const body = i % 5 === 0
        ? imageEvent({ deviceId: `cam-${writer}`, customMetadata: { n: i } }, image)
        : smallEvent({ device_id: `cam-${writer}`, custom_metadata: { n: i } });
      const res = await postJson(`${store.url}/v2/events`, body);
      t.equal(res.status, 201);
      created.push({ id: res.body.id, image_ids: res.body.image_ids ?? [], image });
    }
  }));
  await kill(store);

  store = await spawnStore(env);
  const lost: string[] = [];
  const differing: string[] = [];
  let imagesChecked = 0;
  for (const { id, image_ids, image } of created) {
    const got = await getJson(`${store.url}/v2/events/${id}`);
    if (got.status !== 200) lost.push(id);
    for (const fileId of image_ids) {
      const bytes = Buffer.from(await (await fetch(`${store.url}/images/${fileId}`)).arrayBuffer());
      if (!bytes.equals(fixture(image))) differing.push(fileId);
      imagesChecked++;
    }
  }
  t.equal(created.length, 200, 'every create was acknowledged before the kill');
  t.same(lost, [], `each of the ${created.length} acknowledged events is there`);
  t.ok(imagesChecked > 0, `${imagesChecked} images checked`);
  t.same(differing, [], 'each image with its exact bytes');
  const stats = (await getJson(`${store.url}/stats`)).body.current;
  t.equal(stats.total_events, created.length, 'the counters agree with the events');
  t.equal(stats.total_images, created.filter((c) => c.image_ids.length > 0).length);
  const perDevice = (await getJson(`${store.url}/v2/events?device_id=cam-3&metadata_filter=n:eq:10&limit=100`)).body;
  t.equal(perDevice.events.length, 1, 'the replayed index entries answer filtered lists');

  // The replayed creates wait in the head for the first checkpoint: a kill before it is
  // flushed replays them again, still counted once.
  await kill(store);
  store = await spawnStore(env);
  t.ok(openReport(store).replayed <= created.length, 'at most the same creates replayed again');
  t.equal((await getJson(`${store.url}/stats`)).body.current.total_events, created.length, 'counted once after a second kill');
  const again = (await getJson(`${store.url}/v2/events?device_id=cam-3&metadata_filter=n:eq:10&limit=100`)).body;
  t.equal(again.events.length, 1, 'listed once after a second kill');
});

t.test('kill -9 never undoes an attach, a finalize or a reset: the first two replayed from the log, a reset flushed', async (t) => {
  const dataDir = tempDataDir();
  // No checkpoint before the kill: the attach and the finalize are in the log and the head only.
  const env = { PORT: '0', DATA_DIR: dataDir, INDEX_CHECKPOINT_MS: '60000', ...QUIET };
  let store = await spawnStore(env);
  t.teardown(() => void store.child.kill('SIGKILL'));
  const draft = (await postJson(`${store.url}/v2/events`, smallEvent({ draft: true }))).body;
  const video = fixture('cat-zoom.mp4');
  const attached = await postFile(`${store.url}/v2/events/${draft.id}/videos`, video, { label: 'clip' }, 'application/octet-stream');
  t.equal(attached.status, 201);
  const finalized = await postJson(`${store.url}/v2/events/${draft.id}/finalize`, '');
  t.equal(finalized.status, 200);
  await kill(store);
  store = await spawnStore(env);
  t.equal(openReport(store).changesReplayed, 2, 'the attach and the finalize were replayed');
  const event = (await getJson(`${store.url}/v2/events/${draft.id}`)).body;
  t.same([event.draft, event.finalized_at], [false, finalized.body.finalized_at], 'still finalized');
  t.same(event.videos.map((v: { file_id: string }) => v.file_id), [attached.body.file_id], 'the video is still listed');
  const back = Buffer.from(await (await fetch(`${store.url}/videos/${attached.body.file_id}`)).arrayBuffer());
  t.ok(back.equals(video), 'and downloads whole');
  const stats = (await getJson(`${store.url}/stats`)).body.current;
  t.same([stats.total_events, stats.draft_events], [1, 0], 'counted once, as finalized');

  const doomed = (await postJson(`${store.url}/v2/events`, imageEvent())).body;
  const token = (await postJson(`${store.url}/reset/request`, '')).body.reset_token;
  t.equal((await postJson(`${store.url}/reset/confirm`, { reset_token: token })).status, 200);
  await kill(store);
  store = await spawnStore(env);
  t.equal((await getJson(`${store.url}/v2/events/${doomed.id}`)).status, 404, 'a reset event stays deleted');
  t.equal((await getJson(`${store.url}/stats`)).body.current.total_events, 0);
  const after = await postJson(`${store.url}/v2/events`, imageEvent());
  t.equal(after.status, 201, 'and the store takes events again');
  await kill(store);
  store = await spawnStore(env);
  t.equal((await getJson(`${store.url}/v2/events/${after.body.id}`)).status, 200, 'a create after the reset is replayed');
});
