/**
 * The NATS JetStream sink (docs/OPERATIONS.md, "NATS JetStream") against real nats-server
 * processes started by the test: events and their files arrive (subjects, `Nats-Msg-Id`, the
 * event's JSON, byte-identical objects); a batch shipped again after a crash between its
 * publishes and its ledger commit is stored once; with the server away, creates keep answering
 * 201, the backlog grows, cleanup keeps what is unshipped, and it drains when the server is back.
 * A 3-node R3 stream whose leader is killed mid-run: end-to-end/nats-sink-cluster.test.ts.
 */
import { StorageType } from '@nats-io/jetstream';
import { Objm } from '@nats-io/obj';
import t from 'tap';
import { shipNextBatch } from '../src/lifecycle/sink-runner.js';
import { createLogger } from '../src/logger.js';
import { NatsSink } from '../src/sinks/nats-sink.js';
import { unshipped } from '../src/store/ledger/sink-ledger.js';
import { fixture, getJson, imageEvent, postJson, smallEvent } from './support/events.js';
import { openLocalStore } from './support/local-store.js';
import { postFile } from './support/multipart.js';
import { startNatsServer } from './support/nats-server.js';
import { startStore } from './support/store-server.js';
import { until } from './support/waiting.js';
import { BUCKET, client, create, natsStatus, SHIPPING, STREAM, streamMessages } from './support/nats-stream.js';

t.test('finalized events go to <prefix>.<device_id>.<event_schema> with Nats-Msg-Id, after their images and videos', async (t) => {
  const server = await startNatsServer();
  t.teardown(() => server.stop());
  const store = await startStore({ ...SHIPPING, NATS_URL: server.url, NATS_MAX_AGE_SECONDS: '86400', NATS_MAX_BYTES: String(2 ** 30) });
  t.teardown(store.stop);
  const cat = await create(store, imageEvent({ deviceId: 'dock.2 west' }, 'cat.jpg'));
  const draft = await create(store, smallEvent({ draft: true }));
  const video = await postFile(`${store.url}/v2/events/${draft}/videos`, fixture('cat-zoom.mp4'), { label: 'clip' }, 'video/mp4');
  t.equal(video.status, 201);
  await until('the draft waits, the other is shipped', async () => (await natsStatus(store)).shipped_total === 1);
  t.equal((await postJson(`${store.url}/v2/events/${draft}/finalize`, {})).status, 200);
  await until('both shipped', async () => (await natsStatus(store)).backlog_events === 0 && (await natsStatus(store)).shipped_total === 2);

  const { nc, jsm } = await client(server.urls);
  t.teardown(() => nc.close());
  const info = await jsm.streams.info(STREAM);
  t.same(info.config.subjects, ['edge.events.>'], 'the stream the store created when absent');
  t.equal(info.config.storage, StorageType.File);
  t.match(info.config, { max_age: 86_400 * 1e9, max_bytes: 2 ** 30, duplicate_window: 600 * 1e9 }, 'with the limits of the settings');
  const messages = await streamMessages(jsm);
  t.same(messages.map((m) => [m.subject, m.msgId]), [['edge.events.dock%2E2%20west.quality_check', cat], ['edge.events.cam-1.custom', draft]], 'finalize order; one token per value');
  t.same(messages[0]!.event, (await getJson(`${store.url}/v2/events/${cat}`)).body, 'the event as GET /v2/events/{id} returns it');
  t.equal(messages[1]!.event.draft, false);

  const bucket = await new Objm(nc).open(BUCKET);
  const imageId = messages[0]!.event.images[0].file_id as string;
  t.same(Buffer.from((await bucket.getBlob(imageId))!), fixture('cat.jpg'), 'the image, byte-identical, under its file id');
  t.equal((await bucket.info(imageId))?.description, 'image/jpeg');
  t.match((await bucket.status()).streamInfo.config, { max_age: 86_400 * 1e9, max_bytes: 2 ** 30 }, 'the bucket too');
  t.same(Buffer.from((await bucket.getBlob(video.body.file_id))!), fixture('cat-zoom.mp4'), 'the video too');
});

t.test('a batch published but not recorded as shipped (a crash between the two) is stored once when shipped again', async (t) => {
  const server = await startNatsServer();
  t.teardown(() => server.stop());
  const local = await openLocalStore({ NATS_URL: server.url });
  t.teardown(local.close);
  for (let i = 0; i < 5; i++) await local.create(imageEvent({}, 'rocket.jpg'));
  const sink = new NatsSink(local.store, local.config, createLogger('silent'));
  t.teardown(() => sink.close());

  const entries = unshipped(local.store, 'nats', 10);
  const outgoing = entries.map(({ seq, createdAt }) => ({ seq, createdAt, record: local.store.getRecord(createdAt)! }));
  t.same(await sink.ship(outgoing, new AbortController().signal), [], 'published and acknowledged; the ledger not told');
  t.equal(unshipped(local.store, 'nats', 10).length, 5, 'as after a crash: all still to ship');
  t.same(await shipNextBatch(local.lifecycle, sink, ['nats'], new AbortController().signal), { shipped: 5, deadLettered: 0 });

  const { nc, jsm } = await client(server.urls);
  t.teardown(() => nc.close());
  const messages = await streamMessages(jsm);
  t.equal(messages.length, 5, 'each event once: the stream dropped the re-sent ones by Nats-Msg-Id');
  t.same(messages.map((m) => m.msgId), outgoing.map((o) => o.record.id));
  const bucket = await new Objm(nc).open(BUCKET);
  for (const { record } of outgoing) t.equal((await bucket.info(record.images[0]!.file_id!))?.size, fixture('rocket.jpg').length, 'each image stored once, whole');
});

t.test('the server away: creates answer 201, the backlog grows, cleanup keeps it; it drains when the server is back', async (t) => {
  const server = await startNatsServer();
  t.teardown(() => server.stop());
  // Retention of about a second: what the sink has not shipped must outlive it.
  const store = await startStore({ ...SHIPPING, NATS_URL: server.url, RETENTION_DAYS: String(1 / 86_400), CLEANUP_INTERVAL_SECONDS: '3600' });
  t.teardown(store.stop);
  await create(store, smallEvent());
  await until('connected and shipping', async () => (await natsStatus(store)).shipped_total === 1);

  await server.stop();
  const ids: string[] = [];
  for (let i = 0; i < 20; i++) ids.push(await create(store, imageEvent({}, 'camera.jpg')));
  const away = await natsStatus(store);
  t.equal(away.backlog_events, 20, 'the backlog grows');
  // The store's own retention cutoff passes the newest of them (both are formatMicros strings).
  const newest = (await getJson(`${store.url}/v2/events/${ids[ids.length - 1]}`)).body.created_at as string;
  await until('all of them past retention', async () => (await getJson(`${store.url}/stats`)).body.next_cleanup_will_delete.retention_cutoff_timestamp > newest);
  const kept = (await postJson(`${store.url}/admin/cleanup`, {})).body;
  t.equal(kept.records_deleted.total, 1, 'only the shipped event goes; the 20 unshipped are kept');
  t.equal((await getJson(`${store.url}/stats`)).body.current.total_events, 20);

  await server.start();
  await until('the backlog drained', async () => (await natsStatus(store)).backlog_events === 0);
  const { nc, jsm } = await client(server.urls);
  t.teardown(() => nc.close());
  const messages = await streamMessages(jsm);
  t.same(messages.slice(1).map((m) => m.msgId), ids, 'every one, in order, once');
  const drained = (await postJson(`${store.url}/admin/cleanup`, {})).body;
  t.equal(drained.records_deleted.total, 20, 'shipped: retention applies again');
});
