/**
 * MQTT publishing (docs/OPERATIONS.md, "MQTT") against a real mosquitto started by the test:
 * topics and payloads of created, finalized and deleted events; a broker restart in the middle
 * of a run (creates keep answering 201, and every created event is published afterwards); a
 * store restarted while the broker is away resumes from its stored cursor.
 */
import mqtt, { type MqttClient } from 'mqtt';
import t, { type Test } from 'tap';
import { startBroker, type Broker } from './support/mosquitto.js';
import { getJson, postJson, smallEvent } from './support/events.js';
import { startStore, type TestStore } from './support/store-server.js';
import { until } from './support/waiting.js';

interface Received {
  topic: string;
  type: string | undefined;
  body: any;
}

/**
 * A subscriber to `edge-events/#` with a persistent session (QoS 1), so messages the store
 * publishes while it reconnects after a broker restart are queued for it, not lost.
 */
async function subscribe(broker: Broker, clientId: string): Promise<{ client: MqttClient; received: Received[] }> {
  const received: Received[] = [];
  const client = await mqtt.connectAsync(broker.url, { protocolVersion: 5, clientId, clean: false, reconnectPeriod: 200, properties: { sessionExpiryInterval: 3600 } });
  client.on('message', (topic, payload, packet) => {
    const type = packet.properties?.userProperties?.type;
    received.push({ topic, type: Array.isArray(type) ? type[0] : type, body: JSON.parse(payload.toString('utf8')) });
  });
  await client.subscribeAsync('edge-events/#', { qos: 1 });
  return { client, received };
}

/** A broker for the test (`settings`: more mosquitto.conf lines) and a persistent subscriber to it (both ended with the test). */
async function brokerWithSubscriber(t: Test, clientId: string, settings: string[] = []): Promise<{ broker: Broker; received: Received[] }> {
  const broker = await startBroker(settings);
  t.teardown(() => broker.stop());
  const { client, received } = await subscribe(broker, clientId);
  t.teardown(() => client.endAsync());
  return { broker, received };
}

/** A store publishing to `broker`, once it is connected. */
async function publishingStore(broker: Broker, env: Record<string, string> = {}): Promise<TestStore> {
  const store = await startStore({ MQTT_URL: broker.url, ...env });
  await until('the store connected', async () => (await getJson(`${store.url}/stats`)).body.mqtt.connected);
  return store;
}

async function create(store: TestStore, overrides: Record<string, unknown> = {}): Promise<string> {
  const res = await postJson(`${store.url}/v2/events`, smallEvent(overrides));
  if (res.status !== 201) throw new Error(`create answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.id as string;
}

/** Ids of created messages, in arrival order. */
const createdIds = (received: Received[]) => received.filter((m) => m.type === 'created').map((m) => m.body.id as string);

t.test('created, finalized and deleted events are published to <prefix>/<device_id>/<event_schema> with the stream\'s data', async (t) => {
  const { broker, received } = await brokerWithSubscriber(t, 'mqtt-test-topics');
  const store = await publishingStore(broker, { MAX_RECORDS: '3' });
  t.teardown(store.stop);

  const plain = await create(store, { device_id: 'cam-1' });
  const slashed = await create(store, { device_id: 'line/3+#' });
  const anonymous = await create(store, { device_id: null });
  const draft = await create(store, { device_id: 'cam-1', draft: true });
  t.equal((await postJson(`${store.url}/v2/events/${draft}/finalize`, {})).status, 200);
  await until('4 created and 1 finalized', () => received.length >= 5);

  t.same(createdIds(received), [plain, slashed, anonymous, draft], 'every create, in order, drafts included');
  const byId = (id: string, type: string) => received.find((m) => m.body.id === id && m.type === type)!;
  t.equal(byId(plain, 'created').topic, 'edge-events/cam-1/custom');
  t.equal(byId(slashed, 'created').topic, 'edge-events/line%2F3%2B%23/custom', '/, + and # percent-encoded: one level, no wildcard');
  t.equal(decodeURIComponent(byId(slashed, 'created').topic.split('/')[1]!), 'line/3+#');
  t.equal(byId(anonymous, 'created').topic, 'edge-events/_/custom', 'no device id: _');
  t.same(byId(plain, 'created').body, (await getJson(`${store.url}/v2/events/${plain}`)).body, 'payload: the event as GET /v2/events/{id} returns it');
  t.equal(byId(draft, 'created').body.draft, true);
  const finalized = byId(draft, 'finalized');
  t.equal(finalized.topic, 'edge-events/cam-1/custom');
  t.equal(finalized.body.draft, false);
  t.type(finalized.body.finalized_at, 'string');

  // A crossed limit also starts a cleanup by itself within a second (docs/OPERATIONS.md, "Keeping
  // the disk bounded"): this one or that one deletes the oldest of 4 (MAX_RECORDS=3).
  t.equal((await postJson(`${store.url}/admin/cleanup`, {})).status, 200);
  await until('the deletion', () => received.some((m) => m.type === 'deleted'));
  const deleted = received.find((m) => m.type === 'deleted')!;
  t.same(deleted, { topic: 'edge-events/cam-1/custom', type: 'deleted', body: { id: plain, reason: 'max_records' } });

  const stats = (await getJson(`${store.url}/stats`)).body;
  t.equal(stats.mqtt.published_total, 6);
  t.equal(stats.mqtt.oldest_unpublished_age_seconds, null, 'nothing waits');
  t.equal(stats.current.total_events, 3);
  t.equal(stats.last_cleanup.trigger, 'MANUAL', 'at the limit after it: no automatic run follows');
  const metrics = await (await fetch(`${store.url}/metrics`)).text();
  t.match(metrics, /edge_events_mqtt_published_total\{type="created"\} 4/);
  t.match(metrics, /edge_events_mqtt_connected 1/);
  t.match(metrics, /edge_events_cleanup_runs_total\{trigger="MANUAL"\} 1/);
});

t.test('device ids with control characters, non-characters or lone surrogates are encoded: the broker keeps the store connected and every later event arrives', async (t) => {
  // Found by a hostile-input probe: "\u0001cam" made mosquitto drop the store (DISCONNECT 0x81,
  // malformed packet), and nothing was published after it.
  const { broker, received } = await brokerWithSubscriber(t, 'mqtt-test-hostile-ids');
  const store = await publishingStore(broker);
  t.teardown(store.stop);
  const hostile: [string, string][] = [
    ['\u0001cam', '%01cam'], ['cam\u0085x', 'cam%C2%85x'], ['del\u007f', 'del%7F'], ['nc\ufffe', 'nc%EF%BF%BE'],
    ['lone\ud800', 'lone%EF%BF%BD'], ['cr\r\nlf', 'cr%0D%0Alf'], ['ok-é-\u{1F600}', 'ok-é-\u{1F600}'],
  ];
  const ids: string[] = [];
  for (const [deviceId] of hostile) ids.push(await create(store, { device_id: deviceId }));
  for (let i = 0; i < 3; i++) ids.push(await create(store, { device_id: `cam-${i}` }));
  await until('every event published', () => createdIds(received).length === ids.length);
  t.same(createdIds(received), ids, 'every event, in order, the ordinary ones after the hostile ones included');
  for (const [i, [deviceId, level]] of hostile.entries()) {
    const message = received.find((m) => m.body.id === ids[i])!;
    t.equal(message.topic, `edge-events/${level}/custom`, `${JSON.stringify(deviceId)}: one level, encoded`);
    t.equal(decodeURIComponent(level), deviceId.replace('\ud800', '\ufffd'), 'decodeURIComponent gives it back (a lone surrogate as U+FFFD)');
  }
  const { mqtt: status } = (await getJson(`${store.url}/stats`)).body;
  t.same([status.connected, status.last_error], [true, null], 'still connected, no error');
});

t.test('an event over the broker\'s Maximum Packet Size is dead-lettered, counted and logged; every later event is published (#31 item 4)', async (t) => {
  // Before: mosquitto dropped the store for the oversize PUBLISH (DISCONNECT 0x95), mqtt.js sent
  // it again after every reconnect, and nothing behind it was ever published.
  const { broker, received } = await brokerWithSubscriber(t, 'mqtt-test-dead-letter', ['max_packet_size 4096']);
  const store = await publishingStore(broker);
  t.teardown(store.stop);
  const before = await create(store);
  const oversize = await create(store, { custom_metadata: { note: 'x'.repeat(900), a: 'y'.repeat(900), b: 'z'.repeat(900), c: 'w'.repeat(900), d: 'v'.repeat(900) } });
  const after = [await create(store), await create(store)];
  await until('the events around it are published', () => createdIds(received).length === 3);
  t.same(createdIds(received), [before, ...after], 'every event but the oversize one, in order');
  await until('the oversize event is dead-lettered', async () => (await getJson(`${store.url}/stats`)).body.mqtt.dead_lettered_total === 1);
  const { mqtt: status } = (await getJson(`${store.url}/stats`)).body;
  t.match(status.dead_letters, [{ event_id: oversize, type: 'created', reason: /Maximum Packet Size of 4096/ }], '/stats names it and why');
  t.same([status.connected, status.last_error], [true, null], 'the broker never dropped the store');
  t.equal((await getJson(`${store.url}/v2/events/${oversize}`)).status, 200, 'the event stays in the store');
  t.match(await (await fetch(`${store.url}/metrics`)).text(), 'edge_events_mqtt_dead_lettered_messages_total 1\n');
});

t.test('a broker restart in the middle of a run: creates keep answering 201, every created event is published afterwards', async (t) => {
  const { broker, received } = await brokerWithSubscriber(t, 'mqtt-test-restart');
  const store = await publishingStore(broker);
  t.teardown(store.stop);
  const ids: string[] = [];
  const writeSome = async (count: number, device: string) => {
    for (let i = 0; i < count; i++) ids.push(await create(store, { device_id: device }));
  };
  await writeSome(100, 'before');
  await broker.stop();
  await until('the store saw the broker go', async () => !(await getJson(`${store.url}/stats`)).body.mqtt.connected);
  await writeSome(200, 'during'); // each awaited: a create waiting on the broker would hang here
  const away = (await getJson(`${store.url}/stats`)).body.mqtt;
  t.ok(away.oldest_unpublished_age_seconds !== null, 'the backlog shows while the broker is away');
  await broker.start();
  await writeSome(100, 'after');
  await until('every created event published', () => new Set(createdIds(received)).size === ids.length, 30_000);

  const published = createdIds(received);
  t.same([...new Set(published)].sort(), [...ids].sort(), 'no created event skipped');
  // In flight both ways at the restart, at most: mosquitto grants a Receive Maximum of 20 and sends 20 at a time.
  t.ok(published.length - ids.length <= 40, `re-published at most what was in flight (${published.length - ids.length})`);
  const firstSeen = [...new Set(published)];
  t.same(firstSeen, ids, 'first publications in created_at order');
  await until('the backlog drained', async () => (await getJson(`${store.url}/stats`)).body.mqtt.oldest_unpublished_age_seconds === null);
});

t.test('the backlog counts events acknowledged a moment ago, still in the head', async (t) => {
  const { broker } = await brokerWithSubscriber(t, 'mqtt-test-head');
  // No checkpoint within the test: every event it creates stays in the head (docs/STORAGE.md, "The head").
  const store = await publishingStore(broker, { INDEX_CHECKPOINT_MS: '60000' });
  t.teardown(store.stop);
  await broker.stop();
  await until('the store saw the broker go', async () => !(await getJson(`${store.url}/stats`)).body.mqtt.connected);
  t.equal((await getJson(`${store.url}/stats`)).body.mqtt.oldest_unpublished_age_seconds, null, 'nothing waits yet');
  const before = performance.now();
  await create(store);
  const age = (await getJson(`${store.url}/stats`)).body.mqtt.oldest_unpublished_age_seconds;
  // Whole seconds: no older than the time since the create was sent, however slow the machine.
  const since = Math.ceil((performance.now() - before) / 1000);
  t.ok(Number.isInteger(age) && age >= 0 && age <= since, `the event just created waits, ${age} s old (created ${since} s ago at most)`);
});

t.test('a store restarted while the broker is away resumes from its stored cursor', async (t) => {
  const { broker, received } = await brokerWithSubscriber(t, 'mqtt-test-cursor');
  const first = await publishingStore(broker);
  const published = [await create(first), await create(first)];
  await until('the first two', () => createdIds(received).length === 2);

  await broker.stop();
  const unpublished = [await create(first), await create(first), await create(first)];
  await first.stop();
  const second = await startStore({ MQTT_URL: broker.url, DATA_DIR: first.dataDir });
  t.teardown(second.stop);
  unpublished.push(await create(second));
  await broker.start();
  await until('the rest', () => new Set(createdIds(received)).size === 6, 30_000);
  t.same([...new Set(createdIds(received))], [...published, ...unpublished], 'the three created before the restart were not skipped');
});

t.test('a finalize and a deletion of published events while the broker is away are published when it is back', async (t) => {
  const { broker, received } = await brokerWithSubscriber(t, 'mqtt-test-away');
  const store = await publishingStore(broker, { MAX_RECORDS: '2' });
  t.teardown(store.stop);
  const oldest = await create(store);
  const draft = await create(store, { draft: true });
  await until('both created', () => createdIds(received).length === 2);

  await broker.stop();
  await until('the store saw the broker go', async () => !(await getJson(`${store.url}/stats`)).body.mqtt.connected);
  t.equal((await postJson(`${store.url}/v2/events/${draft}/finalize`, {})).status, 200);
  const newest = await create(store);
  // This cleanup, or the one a crossed limit starts by itself, deletes the oldest (MAX_RECORDS=2).
  t.equal((await postJson(`${store.url}/admin/cleanup`, {})).status, 200);
  t.equal((await getJson(`${store.url}/stats`)).body.current.total_events, 2);
  const since = received.length;
  await broker.start();
  await until('three more messages', () => received.length >= since + 3, 30_000);

  t.same(received.slice(since).map((m) => [m.type, m.body.id]), [['finalized', draft], ['deleted', oldest], ['created', newest]], 'what the cursor cannot replay first, then the catch-up');
  t.equal(received[since]!.body.draft, false);
  t.same(received[since + 1]!.body, { id: oldest, reason: 'max_records' });
  t.equal((await getJson(`${store.url}/stats`)).body.mqtt.changes_skipped, 0);
});
