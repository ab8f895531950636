/**
 * The lifecycle worker over real HTTP: cleanup by record cap and storage cap, the consistency
 * pass, /stats, and the worker's restart (docs/API.md, "Cleanup and reset", "Statistics");
 * retention through runCleanup itself, handed the time (`now`) instead of waiting for it.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { responseProblems } from './support/response-shapes.js';
import { runCleanup, storageTarget } from '../src/lifecycle/cleanup.js';
import { createEvent } from '../src/events/create-event.js';
import { FRAME_HEADER_BYTES } from '../src/store/log/segment-frames.js';
import { fixture, getJson, imageEvent, postJson, smallEvent } from './support/events.js';
import { clockPast, openLocalStore } from './support/local-store.js';
import { scan } from './support/segment-scan.js';
import { startStore, type TestStore } from './support/store-server.js';
import { until } from './support/waiting.js';
import { storeHandles } from '../src/store/read/store-view.js';

const cleanup = async (store: TestStore) => {
  const res = await postJson(`${store.url}/admin/cleanup`, '');
  if (res.status !== 200) throw new Error(`cleanup answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body;
};

const status = async (url: string) => {
  const res = await fetch(url);
  await res.arrayBuffer();
  return res.status;
};

t.test('retention deletes the records created before now minus RETENTION_DAYS, with their files', async (t) => {
  // runCleanup is handed `now` (the lifecycle worker passes the clock's): the events are made
  // a day old by moving `now`, not by waiting.
  const local = await openLocalStore({ RETENTION_DAYS: '1' });
  t.teardown(local.close);
  const old = [];
  for (let i = 0; i < 3; i++) old.push(await local.create(imageEvent()));
  // `now` is whole milliseconds: the fresh event goes into a later millisecond than the old ones.
  const boundaryMs = Math.floor(local.createdAt(old[2].id) / 1000) + 1;
  clockPast(boundaryMs * 1000);
  const fresh = await local.create(imageEvent());
  t.ok(local.createdAt(fresh.id) >= boundaryMs * 1000, 'the fresh event is created after the boundary');
  const day = 86_400_000;

  const early = await runCleanup(local.lifecycle, local.config, 'AUTOMATIC', local.hooks, local.ranUntil(Math.floor(local.createdAt(old[0].id) / 1000) + day));
  t.same([early.records_deleted.total, early.files_deleted.total], [0, 0], 'a day after the first event, nothing is older than a day yet');

  const result = await runCleanup(local.lifecycle, local.config, 'MANUAL', local.hooks, local.ranUntil(boundaryMs + day));
  t.same(responseProblems('cleanup-result', result), []);
  t.same(result.records_deleted, { total: 3, retention: 3, overlimit: 0, storage: 0 });
  t.same(result.files_deleted, { total: 3, retention: 3, overlimit: 0, storage: 0 });
  t.equal(result.bytes_freed, 3 * fixture('cat.jpg').length);
  t.same([result.before.records, result.after.records], [4, 1]);
  t.same([result.before.files, result.after.files], [4, 1]);
  t.ok(result.after.bytes < result.before.bytes, 'storage figure drops');
  t.equal(result.consistency.ran, true);
  for (const { id, image_ids } of old) {
    t.equal(local.store.getEvent(id), undefined, `old event ${id} deleted`);
    t.equal(local.store.getFile(image_ids[0]), undefined, 'with its image');
  }
  const kept = local.store.getFile(fresh.image_ids[0])!;
  const bytes = Buffer.alloc(kept.length);
  await local.store[storeHandles].blobs.read(kept.segment, kept.offset, bytes);
  t.ok(bytes.equals(fixture('cat.jpg')), 'the fresh event keeps its image bytes');

  const again = await runCleanup(local.lifecycle, local.config, 'MANUAL', local.hooks, local.ranUntil(boundaryMs + day));
  t.equal(again.records_deleted.total, 0, 'the same `now` again deletes nothing more');
});

t.test('an automatic cleanup checkpoints the head only when a deletion may be due', async (t) => {
  // A checkpoint on a grown index writes about a thousand pages however few creates it carries,
  // so the scheduled cleanup of a store within its limits leaves the head to its own checkpoint.
  const local = await openLocalStore({ MAX_RECORDS: '2', RETENTION_DAYS: '1' });
  t.teardown(local.close);
  let checkpoints = 0;
  const hooks = { ...local.hooks, checkpoint: () => (checkpoints++, local.hooks.checkpoint()) };
  const inHead = await createEvent(local.store, local.config, smallEvent());
  const now = Date.now();

  const within = await runCleanup(local.lifecycle, local.config, 'AUTOMATIC', hooks, { now });
  t.equal(checkpoints, 0, 'within its limits and nothing past retention: no checkpoint');
  t.equal(local.store[storeHandles].dbs.eventIds.get(inHead.id), undefined, 'the create is still in the head only');
  t.same([within.records_deleted.total, within.consistency.ran], [0, true], 'the consistency pass ran all the same');

  await runCleanup(local.lifecycle, local.config, 'MANUAL', hooks, { now });
  t.equal(checkpoints, 1, 'a manual cleanup always checkpoints');
  t.not(local.store[storeHandles].stored.createdAtOf(inHead.id), undefined, 'and the create is checkpointed');

  await runCleanup(local.lifecycle, local.config, 'AUTOMATIC', hooks, local.ranUntil(now + 2 * 86_400_000));
  t.equal(checkpoints, 2, 'a record in LMDB past retention: a checkpoint first');
  t.equal(local.store.getEvent(inHead.id), undefined, 'and retention deleted it');

  for (let i = 0; i < 3; i++) await createEvent(local.store, local.config, smallEvent());
  const over = await runCleanup(local.lifecycle, local.config, 'AUTOMATIC', hooks, { now });
  t.equal(checkpoints, 3, 'three creates in the head over MAX_RECORDS=2: a checkpoint first');
  t.same([over.records_deleted.overlimit, local.store.counters().events], [1, 2], 'and the oldest went');

  await createEvent(local.store, local.config, smallEvent());
  const failing = { ...hooks, usage: () => Promise.reject(new Error('the HTTP thread did not answer')) };
  await runCleanup(local.lifecycle, local.config, 'AUTOMATIC', failing, { now });
  t.equal(checkpoints, 4, 'a usage that could not be read counts as over the limits');
});

t.test('over-limit: the oldest records beyond MAX_RECORDS go, without waiting for the schedule', async (t) => {
  const store = await startStore({ MAX_RECORDS: '5' });
  t.teardown(store.stop);
  const ids: string[] = [];
  for (let i = 0; i < 8; i++) ids.push((await postJson(`${store.url}/v2/events`, smallEvent())).body.id);
  await until('the worker to enforce the cap', async () => (await getJson(`${store.url}/events/count/stats`)).body.total_count === 5);
  for (const id of ids.slice(0, 3)) t.equal(await status(`${store.url}/v2/events/${id}`), 404, 'oldest deleted');
  for (const id of ids.slice(3)) t.equal(await status(`${store.url}/v2/events/${id}`), 200, 'newest kept');
  const stats = (await getJson(`${store.url}/stats`)).body;
  t.equal(stats.next_cleanup_will_delete.excess_records_over_limit, 0);
});

t.test('storage: oldest files go first and their records stay with current_file_count lowered', async (t) => {
  const store = await startStore({ MAX_STORAGE_BYTES: String(1024 * 1024) });
  t.teardown(store.stop);
  const created = [];
  for (let i = 0; i < 6; i++) created.push((await postJson(`${store.url}/v2/events`, imageEvent({}, 'retina.jpg'))).body);
  await until('the worker to enforce the storage cap', async () => (await getJson(`${store.url}/stats`)).body.current.total_storage_bytes <= 1024 * 1024);
  const oldest = (await getJson(`${store.url}/v2/events/${created[0].id}`)).body;
  t.same([oldest.original_file_count, oldest.current_file_count], [1, 0], 'record kept, file count lowered');
  t.equal(await status(`${store.url}/images/${created[0].image_ids[0]}`), 404, 'its image is gone');
  const newest = (await getJson(`${store.url}/v2/events/${created[5].id}`)).body;
  t.equal(newest.current_file_count, 1);
  t.equal(await status(`${store.url}/images/${created[5].image_ids[0]}`), 200, 'the newest image stays');
  t.equal((await getJson(`${store.url}/events/count/stats`)).body.total_count, 6, 'no record deleted');
  const removed = (await Promise.all(created.map(async (c) => (await getJson(`${store.url}/v2/events/${c.id}`)).body.current_file_count))).filter((n) => n === 0).length;
  t.ok(removed > 0, `${removed} image files removed by the storage cap`);
  t.equal((await getJson(`${store.url}/stats`)).body.current.total_images, 6 - removed, 'total_images counts the image files still stored');
});

t.test('a storage cleanup runs only over MAX_STORAGE_BYTES, and then brings storage down to 95% of it', async (t) => {
  const limit = 8 * 1024 * 1024; // its 5% margin is wider than an image
  const local = await openLocalStore({ MAX_STORAGE_BYTES: String(limit) });
  t.teardown(local.close);
  const image = fixture('retina.jpg').length;
  t.equal(storageTarget(limit), limit - Math.floor(limit / 20), 'the target: 95% of the limit');
  // Under the limit but above the target: nothing to delete.
  while (local.store.storageBytes() + image <= limit) await local.create(imageEvent({}, 'retina.jpg'));
  t.ok(local.store.storageBytes() > storageTarget(limit), `${local.store.storageBytes()} bytes stored, over the target`);
  const under = await runCleanup(local.lifecycle, local.config, 'MANUAL', local.hooks);
  t.equal(under.files_deleted.total, 0, 'under the limit, no file deleted');
  // One more image crosses it: the cleanup deletes past the excess, down to the target.
  await local.create(imageEvent({}, 'retina.jpg'));
  const excess = local.store.storageBytes() - limit;
  t.ok(excess > 0 && excess < image, `over the limit by ${excess} bytes, less than one image`);
  const over = await runCleanup(local.lifecycle, local.config, 'MANUAL', local.hooks);
  t.ok(over.files_deleted.storage >= 2, `${over.files_deleted.storage} files deleted for an excess of less than one`);
  t.ok(local.store.storageBytes() <= storageTarget(limit), `${local.store.storageBytes()} bytes stored, within the target`);
  t.equal(over.records_deleted.total, 0, 'the records stay');
});

t.test('a cleanup started by a crossed limit leaves the consistency pass to the schedule', async (t) => {
  const limit = 1024 * 1024;
  const store = await startStore({ MAX_STORAGE_BYTES: String(limit), CLEANUP_INTERVAL_SECONDS: '3600' });
  t.teardown(store.stop);
  await cleanup(store); // the start-up cleanup is done: the stray file below is not seen by it
  const stray = path.join(store.dataDir, 'blobs', 'seg-09999999.blob');
  fs.writeFileSync(stray, 'stray');
  fs.utimesSync(stray, new Date(Date.now() - 3_600_000), new Date(Date.now() - 3_600_000));
  for (let i = 0; i < 5; i++) t.equal((await postJson(`${store.url}/v2/events`, imageEvent({}, 'retina.jpg'))).status, 201);
  await until('a cleanup started by the crossed limit', async () => (await getJson(`${store.url}/stats`)).body.current.total_storage_bytes <= storageTarget(limit));
  t.ok(fs.existsSync(stray), 'the stray file is still there');
  t.equal((await cleanup(store)).consistency.orphaned_disk_files_removed, 1, 'a scheduled or manual cleanup removes it');
});

t.test('total_images follows file deletions, then record deletions, down to zero and never below', async (t) => {
  const local = await openLocalStore({ RETENTION_DAYS: '1', MAX_STORAGE_BYTES: String(1024 * 1024) });
  t.teardown(local.close);
  const created = [];
  for (let i = 0; i < 6; i++) created.push(await local.create(imageEvent({}, 'retina.jpg')));
  await local.create({ ...smallEvent(), images: [{ label: 'results only', object_detections: [] }] });
  t.equal(local.store.counters().images, 7, 'six image files and one image entry without a file');
  const now = Math.floor(local.createdAt(created[5].id) / 1000) + 1;

  const storage = await runCleanup(local.lifecycle, local.config, 'MANUAL', local.hooks, { now });
  t.ok(storage.files_deleted.storage > 0, `the storage cap removed ${storage.files_deleted.storage} files`);
  t.equal(storage.records_deleted.total, 0, 'their records stay');
  t.equal(local.store.counters().images, 7 - storage.files_deleted.storage, 'lowered by each image file removed');

  const retention = await runCleanup(local.lifecycle, local.config, 'MANUAL', local.hooks, local.ranUntil(now + 2 * 86_400_000));
  t.equal(retention.records_deleted.retention, 7, 'retention deletes every record');
  t.same([local.store.counters().events, local.store.counters().images], [0, 0], 'no image counted twice');
});

t.test('consistency: missing and corrupt blobs are dropped, stray files removed, never a 500', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  await cleanup(store); // the worker's start-up pass is done: what follows is seen by our pass
  const first = (await postJson(`${store.url}/v2/events`, imageEvent())).body;
  const blobsDir = path.join(store.dataDir, 'blobs');
  const [segment] = fs.readdirSync(blobsDir);
  // Flip one data byte of the (only) image, the segment's first frame: its CRC fails.
  const file = path.join(blobsDir, segment);
  const bytes = fs.readFileSync(file);
  bytes[FRAME_HEADER_BYTES + 10] ^= 0xff;
  fs.writeFileSync(file, bytes);
  // A stray file, old enough not to be an upload in flight.
  const stray = path.join(blobsDir, 'seg-09999999.blob');
  fs.writeFileSync(stray, 'stray');
  fs.utimesSync(stray, new Date(Date.now() - 3_600_000), new Date(Date.now() - 3_600_000));
  // A recycled segment file as old, kept for the log to overwrite (docs/STORAGE.md, "Recycled segments").
  const recycled = path.join(blobsDir, 'recycled-00000001.blob');
  fs.writeFileSync(recycled, 'former frames');
  fs.utimesSync(recycled, new Date(Date.now() - 3_600_000), new Date(Date.now() - 3_600_000));
  const recycledInode = fs.statSync(recycled).ino;

  const result = await cleanup(store);
  t.equal(result.trigger, 'MANUAL', 'POST /admin/cleanup runs a MANUAL cleanup');
  t.equal(result.consistency.dangling_db_records_removed, 1, `corrupt blob dropped: ${JSON.stringify(result)}`);
  t.equal(result.consistency.orphaned_disk_files_removed, 1, 'stray file removed');
  t.notOk(fs.existsSync(stray));
  // Kept, or taken by the log for the segment compaction copied the event's record into.
  const reused = fs.readdirSync(blobsDir).some((name) => fs.statSync(path.join(blobsDir, name)).ino === recycledInode);
  t.ok(reused, 'the recycled file kept, not removed as a stray');
  t.equal(await status(`${store.url}/images/${first.image_ids[0]}`), 404);
  t.equal((await getJson(`${store.url}/v2/events/${first.id}`)).body.current_file_count, 0);

  // A segment deleted from under the store: 404 at once, dropped by the next pass.
  const second = (await postJson(`${store.url}/v2/events`, { ...imageEvent(), images: [{ base64Image: fixture('camera.jpg').toString('base64') }] })).body;
  for (const name of fs.readdirSync(blobsDir)) if (name.startsWith('seg-')) fs.rmSync(path.join(blobsDir, name));
  t.equal(await status(`${store.url}/images/${second.image_ids[0]}`), 404, 'a vanished blob answers 404');
  t.equal((await cleanup(store)).consistency.dangling_db_records_removed, 1);

  // A segment cut short in the middle of its second image: that image is dropped, the first kept.
  const kept = (await postJson(`${store.url}/v2/events`, imageEvent())).body;
  const cut = (await postJson(`${store.url}/v2/events`, imageEvent())).body;
  const [current] = fs.readdirSync(blobsDir).filter((name) => name.startsWith('seg-'));
  const frames = await scan(path.join(blobsDir, current));
  const images = frames.filter((frame) => frame.kind === 'image');
  t.equal(images.length, 2);
  fs.truncateSync(path.join(blobsDir, current), images[1].offset + 100);
  t.equal((await cleanup(store)).consistency.dangling_db_records_removed, 1, 'only the image the cut reached is dropped');
  t.equal(await status(`${store.url}/images/${kept.image_ids[0]}`), 200, 'the image before the cut is still served');
  t.equal(await status(`${store.url}/images/${cut.image_ids[0]}`), 404);
});

t.test('/stats reports every field from maintained counters', async (t) => {
  const store = await startStore({ MAX_RECORDS: '100' });
  t.teardown(store.stop);
  await postJson(`${store.url}/v2/events`, imageEvent());
  await postJson(`${store.url}/v2/events`, smallEvent({ draft: true }));
  const stats = (await getJson(`${store.url}/stats`)).body;
  t.same(responseProblems('stats', stats), []);
  t.equal(stats.current.total_events, 2);
  t.equal(stats.current.total_images, 1);
  t.equal(stats.current.draft_events, 1);
  t.type(stats.current.oldest_draft_age_seconds, 'number');
  t.equal(stats.capacity.records.used, 2);
  t.equal(stats.capacity.records.percent_used, 2);
  t.equal(stats.capacity.averages.images_per_event, 0.5);
  t.ok(stats.current.total_storage_bytes > fixture('cat.jpg').length, 'storage counts blob bytes and LMDB pages');
  t.equal(stats.configuration.max_records, 100);
  t.equal(stats.configuration.data_dir, store.dataDir);
});

t.test('a crashed worker is noticed and restarted', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const { lifecycle } = store.service;
  const first = lifecycle.worker!;
  await first.terminate();
  await until('a new worker', async () => lifecycle.worker !== undefined && lifecycle.worker !== first);
  t.not(lifecycle.worker, first, 'a new worker runs');
  let answer = 0;
  await until('the new worker to answer', async () => (answer = (await postJson(`${store.url}/admin/cleanup`, '')).status) === 200);
  t.equal(answer, 200, 'cleanup answers from the restarted worker');
});

// Found by the disk-full harness (npm run disk-full; docs/RELIABILITY.md), commit 1320af0.
t.test('cleanup gives the bytes of deleted files back to the disk, the active segment too (found by disk-full)', async (t) => {
  // On a 64 MiB disk every blob sits in the active segment (segments roll at 64 MiB), which
  // reclaimSegments never deletes: a cleanup that deleted every event with a file freed no space
  // at all. Here the lifecycle worker deletes them as over MAX_RECORDS, so it asks the HTTP
  // thread to retire the active segment by message, as in production.
  const store = await startStore({ MAX_RECORDS: '1' });
  t.teardown(store.stop);
  for (let i = 0; i < 3; i++) t.equal((await postJson(`${store.url}/v2/events`, imageEvent({}, 'retina.jpg'))).status, 201);
  t.equal((await postJson(`${store.url}/v2/events`, smallEvent())).status, 201, 'the newest event has no file');
  // A crossed limit may start a cleanup on its own; the worker runs its jobs one at a time, so
  // once this one answers, every cleanup the creates caused has run.
  const cleanup = (await postJson(`${store.url}/admin/cleanup`, '')).body;
  t.same([cleanup.after.records, cleanup.after.files], [1, 0], 'every event with a file deleted');
  const blobsDir = path.join(store.dataDir, 'blobs');
  const onDisk = fs.readdirSync(blobsDir).reduce((sum, name) => sum + fs.statSync(path.join(blobsDir, name)).size, 0);
  t.ok(onDisk < fixture('retina.jpg').length, `blobs/ holds ${onDisk} bytes after deleting 3 x ${fixture('retina.jpg').length}`);
});

t.test('a cleanup that deleted no file leaves the active segment of events without files alone', async (t) => {
  // Events without images leave their segment with no live blob, as if every blob in it had been
  // deleted. Retiring it for that checkpointed the head early, sealed the segment and started a
  // new file at every cleanup (native-bench/PROFILE.md, "A cleanup checkpointed the head every
  // five minutes").
  const store = await startStore();
  t.teardown(store.stop);
  for (let i = 0; i < 3; i++) t.equal((await postJson(`${store.url}/v2/events`, smallEvent())).status, 201);
  const blobsDir = path.join(store.dataDir, 'blobs');
  const segments = () => fs.readdirSync(blobsDir).sort();
  const before = segments();
  t.equal(before.length, 1, 'one segment holds the three creates');
  const result = await cleanup(store);
  t.same([result.records_deleted.total, result.files_deleted.total], [0, 0], 'nothing to delete');
  t.equal((await postJson(`${store.url}/v2/events`, smallEvent())).status, 201);
  t.same(segments(), before, 'the next create is appended to the same segment');
  t.equal(result.after.records, 3, 'the three events stay');
});
