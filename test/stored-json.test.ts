/**
 * Lists and single reads answer each event's stored JSON (record-codec.ts, layout 3), so every
 * change of a record must rewrite it: finalize (by the producer and by the worker's
 * auto-finalize sweep), an attachment, a file deletion lowering `current_file_count`. Seen over
 * real HTTP, in the list and in `GET /v2/events/{id}` alike (docs/API.md, "Routes").
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { presentEvent, presentEventJson } from '../src/events/present.js';
import { openDatabases } from '../src/store/index/lmdb-env.js';
import { blocksDirOf, StoredEvents } from '../src/store/read/stored-events.js';
import { decodeRecord, storedJson } from '../src/store/index/record-codec.js';
import { fixture, getJson, imageEvent, postJson, smallEvent } from './support/events.js';
import { postFile } from './support/multipart.js';
import { startStore, type TestStore } from './support/store-server.js';
import { until } from './support/waiting.js';

/** The event `id` as the list by its device answers it, and as GET answers it. */
async function listedAndGot(store: TestStore, id: string, device: string): Promise<{ listed: any; got: any }> {
  const list = await getJson(`${store.url}/v2/events?device_id=${device}&limit=1000`);
  const got = await getJson(`${store.url}/v2/events/${id}`);
  return { listed: list.body.events.find((e: { id: string }) => e.id === id), got: got.body };
}

t.test('finalize, attach and a file deletion rewrite the JSON that lists and GET answer', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const created = (await postJson(`${store.url}/v2/events`, imageEvent({ deviceId: 'cam-rw', draft: true }))).body;
  let { listed, got } = await listedAndGot(store, created.id, 'cam-rw');
  t.same([listed.draft, listed.finalized_at, listed.current_file_count, listed.videos], [true, null, 1, []], 'a draft with its image');
  t.same(listed, got);

  const video = await postFile(`${store.url}/v2/events/${created.id}/videos`, fixture('cat-zoom.mp4'), { label: 'clip' }, 'application/octet-stream');
  t.equal(video.status, 201);
  ({ listed, got } = await listedAndGot(store, created.id, 'cam-rw'));
  t.same(listed.videos.map((v: { file_id: string }) => v.file_id), [video.body.file_id], 'attach: the video listed');
  t.same([listed.original_file_count, listed.current_file_count], [2, 2]);
  t.same(listed, got);

  const finalized = await postJson(`${store.url}/v2/events/${created.id}/finalize`, '');
  t.equal(finalized.status, 200);
  ({ listed, got } = await listedAndGot(store, created.id, 'cam-rw'));
  t.same([listed.draft, listed.finalized_at], [false, finalized.body.finalized_at], 'finalize: no longer a draft');
  t.same(listed, got);
  const withoutDrafts = await getJson(`${store.url}/v2/events?device_id=cam-rw&include_drafts=false`);
  t.same(withoutDrafts.body.events.map((e: { id: string }) => e.id), [created.id]);

  // The worker's consistency pass drops the image whose bytes fail their CRC (a file deletion).
  const blobsDir = path.join(store.dataDir, 'blobs');
  const image = fixture('cat.jpg');
  const imageSegment = fs.readdirSync(blobsDir).map((name) => path.join(blobsDir, name)).find((file) => fs.readFileSync(file).includes(image))!;
  const bytes = fs.readFileSync(imageSegment);
  bytes[bytes.indexOf(image) + 100] ^= 0xff;
  fs.writeFileSync(imageSegment, bytes);
  t.equal((await postJson(`${store.url}/admin/cleanup`, '')).status, 200);
  ({ listed, got } = await listedAndGot(store, created.id, 'cam-rw'));
  t.same([listed.original_file_count, listed.current_file_count], [2, 1], 'file deletion: current_file_count lowered');
  t.same(listed, got);
});

t.test("the worker's auto-finalize sweep rewrites the JSON too", async (t) => {
  const store = await startStore({ DRAFT_AUTO_FINALIZE_SECONDS: '1' });
  t.teardown(store.stop);
  const created = (await postJson(`${store.url}/v2/events`, smallEvent({ device_id: 'cam-sweep', draft: true }))).body;
  await until('the sweep', async () => (await listedAndGot(store, created.id, 'cam-sweep')).listed.draft === false);
  const { listed, got } = await listedAndGot(store, created.id, 'cam-sweep');
  t.ok(listed.auto_finalized_at !== null && listed.auto_finalized_at === listed.finalized_at, 'auto_finalized_at set');
  t.same(listed, got);
});

t.test('every stored value holds the JSON its record presents to, and GET answers those bytes', async (t) => {
  const store = await startStore();
  const ids: string[] = [];
  for (const event of [imageEvent(), smallEvent({ custom_metadata: { a: 1, b: 'x', c: true } }), smallEvent({ draft: true, event_data: { value: 'é\u{1F600}\u2028' } })]) {
    const created = await postJson(`${store.url}/v2/events`, event);
    t.equal(created.status, 201);
    ids.push(created.body.id);
  }
  // Checkpointed first: the finalize moves the draft from its block to LMDB (docs/STORAGE.md, "Blocks in the running store").
  await postJson(`${store.url}/admin/cleanup`, '');
  await postJson(`${store.url}/v2/events/${ids[2]}/finalize`, '');
  const bodies = await Promise.all(ids.map(async (id) => Buffer.from(await (await fetch(`${store.url}/v2/events/${id}`)).arrayBuffer())));
  await store.stop();
  const dbs = openDatabases(store.dataDir);
  const stored = new StoredEvents(dbs, blocksDirOf(store.dataDir));
  t.teardown(() => {
    stored.close();
    return dbs.root.close();
  });
  // A block keeps the record alone and presents it at the read; LMDB (the finalized draft, moved
  // there) keeps its JSON too (docs/STORAGE.md, "Blocks in the running store").
  const values = [...stored.createdAts()].map((createdAt) => Buffer.from(stored.value(createdAt)!));
  t.equal(values.length, 3);
  t.same(values.map((value) => value[0] === 3), [false, false, true], 'the finalized draft in layout 3, the others in a block');
  for (const [i, value] of values.entries()) {
    t.equal(storedJson(value, presentEventJson).toString(), JSON.stringify(presentEvent(decodeRecord(value))), `record ${i}: stored JSON = presented record`);
    t.same(storedJson(value, presentEventJson), bodies[i], `record ${i}: GET answered the stored bytes`);
  }
});

t.test('a filter value written as a digest does not find the long value it hashes to', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const long = '€'.repeat(700);
  const { createHash } = await import('node:crypto');
  const digestForm = `\u0000sha256:${createHash('sha256').update(long).digest('hex')}`;
  const longDevice = '€'.repeat(200); // 600 bytes: indexed as a digest too
  const deviceDigest = `\u0000sha256:${createHash('sha256').update(longDevice).digest('hex')}`;
  const event = (await postJson(`${store.url}/v2/events`, smallEvent({ device_id: 'cam-digest', event_data: { external_id: long }, custom_metadata: { note: long } }))).body;
  await postJson(`${store.url}/v2/events`, smallEvent({ device_id: 'cam-digest' }));
  await postJson(`${store.url}/v2/events`, smallEvent({ device_id: longDevice }));
  const ids = async (query: string) => (await getJson(`${store.url}/v2/events?${query}`)).body.events.map((e: { id: string }) => e.id);
  const count = async (query: string) => (await getJson(`${store.url}/events/count/stats?${query}`)).body.filtered_count;
  t.same(await ids(`external_id=${encodeURIComponent(long)}`), [event.id], 'the long value is found');
  t.same(await ids(`metadata_filter=${encodeURIComponent(`note:${long}`)}`), [event.id]);
  t.same(await ids(`external_id=${encodeURIComponent(digestForm)}`), [], 'its digest, sent as a value, is not');
  t.same(await ids(`metadata_filter=${encodeURIComponent(`note:${digestForm}`)}&device_id=cam-digest`), []);
  t.same(await ids(`external_id=${encodeURIComponent(digestForm)}&limit=1`), [], 'nor with a page full at once');
  t.equal(await count(`device_id=cam-digest`), 2);
  t.equal(await count(`device_id=${encodeURIComponent(longDevice)}`), 1, 'a long device_id is counted');
  t.equal(await count(`device_id=${encodeURIComponent(deviceDigest)}`), 0, 'its digest is not');
  t.same(await ids(`device_id=${encodeURIComponent(deviceDigest)}`), []);
});
