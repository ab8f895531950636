/**
 * Every route family that sends stored events' JSON sends exactly that JSON, byte for byte, on
 * whatever Node runs the test (CI runs this file on Node 20, 24 and 26): the list, the event
 * search, the live stream's catch-up, the dataset export, the MQTT and NATS sinks' payloads, and
 * a hub's answers about the events it imported. On Node 24 and 26 lists and searches answered the
 * JSON padded to 16 MiB with NUL bytes (docs/STORAGE.md, "Reading values without a copy").
 */
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import mqtt from 'mqtt';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { exactJson, exactJsonBody } from './support/exact-json.js';
import { fixture, getJson, imageEvent, postJson } from './support/events.js';
import { readZip } from './support/export-data.js';
import { startBroker } from './support/mosquitto.js';
import { startNatsServer } from './support/nats-server.js';
import { SseClient } from './support/sse-client.js';
import { startStore, type TestStore } from './support/store-server.js';
import { until } from './support/waiting.js';

const EVENTS = 3;

/** Creates EVENTS image events on cam-1 (a cat detected in each); their ids, oldest first. */
async function seed(store: TestStore): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < EVENTS; i++) {
    const body = imageEvent({ deviceId: 'cam-1', images: [{ base64Image: fixture('cat.jpg').toString('base64'), objectDetections: [{ class: 'cat', x: 225, y: 150, width: 200, height: 180, confidence: 0.9 }] }] });
    const res = await postJson(`${store.url}/v2/events`, body);
    if (res.status !== 201) throw new Error(`create answered ${res.status}: ${JSON.stringify(res.body)}`);
    ids.push(res.body.id as string);
  }
  return ids;
}

/** The stored events as GET /v2/events/{id} answers them, by id (the reference each route is held to). */
async function pointReads(store: TestStore, ids: string[]): Promise<Map<string, unknown>> {
  return new Map(await Promise.all(ids.map(async (id) => [id, (await getJson(`${store.url}/v2/events/${id}`)).body] as const)));
}

async function seededStore(t: Test, env: Record<string, string> = {}) {
  const store = await startStore(env);
  t.teardown(store.stop);
  const ids = await seed(store);
  return { store, ids, events: await pointReads(store, ids) };
}

t.test('list and event search: the body is exactly the page\'s JSON, every event as its point read', async (t) => {
  const { store, ids, events } = await seededStore(t);
  for (const route of ['/v2/events?device_id=cam-1', `/v2/events/search?${new URLSearchParams({ q: 'device:cam-1 class:cat' })}`]) {
    const res = await fetch(`${store.url}${route}`);
    t.equal(res.status, 200, route);
    const page = await exactJsonBody(res, route);
    t.equal(page.count, EVENTS, `${route}: every event`);
    t.same(page.events, [...ids].reverse().map((id) => events.get(id)), `${route}: each event as GET /v2/events/{id} answers it`);
  }
});

t.test('live stream catch-up: each message\'s data is exactly the event\'s JSON', async (t) => {
  const { store, ids, events } = await seededStore(t);
  const stream = await SseClient.connect(`${store.url}/v2/events/stream?since=1970-01-01T00:00:00.000000Z`);
  t.teardown(() => stream.close());
  t.equal(stream.status, 200);
  for (const id of ids) {
    const message = await stream.next();
    t.equal(message.event, 'created');
    t.same(exactJson(Buffer.from(message.data), `catch-up message of ${id}`), events.get(id), `${id}: exactly its JSON`);
  }
});

t.test('dataset export: the zip reads whole and its COCO JSON holds every event\'s image', async (t) => {
  const { store, ids } = await seededStore(t);
  const res = await fetch(`${store.url}/v2/export?${new URLSearchParams({ q: 'device:cam-1', format: 'coco' })}`);
  t.equal(res.status, 200);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'exact-bodies-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const zipPath = path.join(dir, 'd.zip');
  writeFileSync(zipPath, Buffer.from(await res.arrayBuffer()));
  const entries = await readZip(zipPath);
  const coco = JSON.parse(entries.find((entry) => entry.name === 'annotations.coco.json')!.bytes.toString('utf8'));
  t.equal(coco.images.length, ids.length, 'one image per event');
  t.equal(coco.annotations.length, ids.length, 'one box per event');
  t.equal(entries.filter((entry) => entry.name.startsWith('images/')).length, ids.length, 'every image in the zip');
});

t.test('MQTT sink: each payload is exactly the event\'s JSON', async (t) => {
  const broker = await startBroker();
  t.teardown(() => broker.stop());
  const payloads: Buffer[] = [];
  const subscriber = await mqtt.connectAsync(broker.url, { protocolVersion: 5 });
  t.teardown(() => subscriber.endAsync());
  subscriber.on('message', (_topic, payload) => payloads.push(payload));
  await subscriber.subscribeAsync('edge-events/#', { qos: 1 });
  const store = await startStore({ MQTT_URL: broker.url });
  t.teardown(store.stop);
  const ids = await seed(store);
  const events = await pointReads(store, ids);
  await until('every event published', () => payloads.length >= EVENTS);
  t.same(payloads.map((payload, i) => exactJson(payload, `MQTT payload ${i}`)), ids.map((id) => events.get(id)), 'each payload exactly its event');
});

t.test('NATS sink and hub import: the stream\'s messages are exactly the events\' JSON, and a hub answers them exactly', async (t) => {
  const server = await startNatsServer();
  t.teardown(() => server.stop());
  const { store, ids, events } = await seededStore(t, { NATS_URL: server.url });
  await until('the device shipped everything', async () => (await getJson(`${store.url}/stats`)).body.sinks.nats.backlog_events === 0);

  const nc = await connect({ servers: server.urls });
  t.teardown(() => nc.close());
  const jsm = await jetstreamManager(nc);
  const { state } = await jsm.streams.info('EDGE_EVENTS');
  const shipped = [];
  for (let seq = state.first_seq; seq <= state.last_seq; seq++) {
    const message = await jsm.streams.getMessage('EDGE_EVENTS', { seq });
    if (message) shipped.push(exactJson(message.data, `stream message ${seq}`));
  }
  t.same(shipped, ids.map((id) => events.get(id)), 'each message exactly its event');

  const hub = await startStore({ NATS_SOURCE_URL: server.url });
  t.teardown(hub.stop);
  await until('the hub imported every event', async () => (await getJson(`${hub.url}/stats`)).body.current.total_events === EVENTS);
  const list = await fetch(`${hub.url}/v2/events?device_id=cam-1`);
  const page = await exactJsonBody(list, 'the hub\'s list');
  t.same(page.events.map((event: { id: string }) => event.id).sort(), [...ids].sort(), 'the hub lists every event (in the order it imported them)');
  const search = await fetch(`${hub.url}/v2/events/search?q=class:cat`);
  t.equal((await exactJsonBody(search, 'the hub\'s search')).count, EVENTS, 'and finds them by class');
});
