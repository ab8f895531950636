/**
 * A hub takes whatever the fleet stream carries without dying (docs/OPERATIONS.md, "Hub mode"),
 * against a real nats-server: `null`, other JSON that is no object, and text that is no JSON,
 * published on the fleet's subjects, are terminated (never redelivered), logged and counted in
 * /stats and /metrics, and the events around them are imported. Found by a hostile-input probe:
 * one `null` crash-looped a hub, as it was never acknowledged.
 */
import { randomUUID } from 'node:crypto';
import { Objm } from '@nats-io/obj';
import { connect } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import t from 'tap';
import type { Test } from 'tap';
import { fixture, getJson, imageEvent, postJson, smallEvent } from './support/events.js';
import { startNatsServer } from './support/nats-server.js';
import { startStore, type TestStore } from './support/store-server.js';
import { until } from './support/waiting.js';

const HOSTILE = ['null', '[]', '"x"', '5', 'true', 'not json', '{"id":5}'];

async function create(store: TestStore): Promise<string> {
  const res = await postJson(`${store.url}/v2/events`, smallEvent({ device_id: 'cam-1' }));
  if (res.status !== 201) throw new Error(`create answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.id as string;
}

/**
 * A nats-server and a device store on it that has shipped one image event: the server, and the
 * event as the device presents it.
 */
async function deviceWithShippedImageEvent(t: Test): Promise<{ server: Awaited<ReturnType<typeof startNatsServer>>; real: Record<string, any> }> {
  const server = await startNatsServer();
  t.teardown(() => server.stop());
  const device = await startStore({ NATS_URL: server.url });
  t.teardown(device.stop);
  const created = await postJson(`${device.url}/v2/events`, imageEvent());
  await until('the device shipped its event', async () => (await getJson(`${device.url}/stats`)).body.sinks.nats.backlog_events === 0);
  return { server, real: (await getJson(`${device.url}/v2/events/${created.body.id}`)).body };
}

t.test('messages that are no event are terminated and counted; the hub keeps importing', async (t) => {
  const server = await startNatsServer();
  t.teardown(() => server.stop());
  const device = await startStore({ NATS_URL: server.url });
  t.teardown(device.stop);
  const before = await create(device); // the device's sink makes the stream and the bucket
  await until('the device shipped its event', async () => (await getJson(`${device.url}/stats`)).body.sinks.nats.backlog_events === 0);

  const nc = await connect({ servers: server.urls });
  t.teardown(() => nc.close());
  const js = jetstream(nc);
  for (const payload of HOSTILE) await js.publish('edge.events.x.custom', payload);

  const hub = await startStore({ NATS_SOURCE_URL: server.url });
  t.teardown(hub.stop);
  const after = await create(device);
  await until('the hub imported both events and terminated the rest', async () => {
    const { hub: status } = (await getJson(`${hub.url}/stats`)).body;
    return status.imported === 2 && status.terminated === HOSTILE.length;
  });
  t.equal((await getJson(`${hub.url}/health`)).status, 200, 'the hub is up');
  for (const id of [before, after]) t.equal((await getJson(`${hub.url}/v2/events/${id}`)).status, 200, `event ${id} imported`);
  t.equal((await getJson(`${hub.url}/stats`)).body.current.total_events, 2, 'nothing else stored');

  const consumer = await (await jetstreamManager(nc)).consumers.info('EDGE_EVENTS', 'edge-events-hub');
  t.equal(consumer.num_ack_pending, 0, 'nothing waits to be delivered again');
  t.equal(consumer.num_redelivered, 0, 'and nothing was');
  const metrics = await (await fetch(`${hub.url}/metrics`)).text();
  t.match(metrics, `edge_events_hub_terminated_messages_total ${HOSTILE.length}\n`, '/metrics counts them');
  t.match(metrics, 'edge_events_hub_imported_events_total 2\n');
});

t.test('a forged fleet event cannot swap a stored image, inject a header through a description, or pass a size limit (#31 items 3, 6, 10)', async (t) => {
  const { server, real } = await deviceWithShippedImageEvent(t);
  const realImage = real.images[0].file_id as string;

  const nc = await connect({ servers: server.urls });
  t.teardown(() => nc.close());
  const js = jetstream(nc);
  const bucket = await new Objm(nc).open('edge-events-files');
  const forge = async (fileId: string, description: string, bytes: Buffer | null, deviceId = 'cam-1') => {
    if (bytes) await bucket.put({ name: fileId, description }, readableStreamFrom(bytes));
    const event = { ...real, id: randomUUID(), device_id: deviceId, images: [{ ...real.images[0], file_id: fileId, input_file_id: null }] };
    await js.publish(`edge.events.${deviceId}.quality_check`, JSON.stringify(event));
    return event.id as string;
  };
  const injected = await forge(randomUUID(), 'image/jpeg\r\nSet-Cookie: session=forged', fixture('cat.jpg'));
  const oversize = await forge(randomUUID(), 'image/jpeg', Buffer.alloc(300 * 1024, 0xff)); // over the hub's MAX_RECORD_SIZE_BYTES
  const swapped = await forge(realImage, 'image/jpeg', null, 'intruder'); // names the real event's image

  const hub = await startStore({ NATS_SOURCE_URL: server.url, MAX_RECORD_SIZE_BYTES: String(200 * 1024) });
  t.teardown(hub.stop);
  await until('the hub imported the real event and refused the three forged ones', async () => {
    const { hub: status } = (await getJson(`${hub.url}/stats`)).body;
    return status.imported === 1 && status.terminated === 3;
  });
  t.equal((await getJson(`${hub.url}/stats`)).body.hub.collisions, 1, 'the swap is counted as an id collision');
  for (const id of [injected, oversize, swapped]) t.equal((await getJson(`${hub.url}/v2/events/${id}`)).status, 404, `forged event ${id} not stored`);
  const image = await fetch(`${hub.url}/images/${realImage}`);
  t.equal(image.status, 200);
  t.same(Buffer.from(await image.arrayBuffer()), fixture('cat.jpg'), 'the real event\'s image keeps its bytes');
  t.equal((await getJson(`${hub.url}/stats`)).body.current.total_events, 1, 'nothing else stored');
  t.match(await (await fetch(`${hub.url}/metrics`)).text(), 'edge_events_hub_id_collisions_total 1\n');
});

t.test('an image whose chunk in the bucket is not the object its info names is not stored: its event is delivered again', async (t) => {
  // The hub reads an object of one chunk by a message get of its chunk's subject (src/hub/bucket-files.ts)
  // and checks it against the object's digest, as the object store's own get does.
  const { server, real } = await deviceWithShippedImageEvent(t);

  const nc = await connect({ servers: server.urls });
  t.teardown(() => nc.close());
  const js = jetstream(nc);
  const bucket = await new Objm(nc).open('edge-events-files');
  const fileId = randomUUID();
  await bucket.put({ name: fileId, description: 'image/jpeg' }, readableStreamFrom(fixture('cat.jpg')));
  const info = await bucket.info(fileId);
  t.equal(info?.chunks, 1, 'an object of one chunk');
  await js.publish(`$O.edge-events-files.C.${info!.nuid}`, fixture('rocket.jpg')); // its chunk's subject now ends in other bytes
  const event = { ...real, id: randomUUID(), images: [{ ...real.images[0], file_id: fileId, input_file_id: null }] };
  await js.publish('edge.events.cam-1.quality_check', JSON.stringify(event));

  const hub = await startStore({ NATS_SOURCE_URL: server.url });
  t.teardown(hub.stop);
  const jsm = await jetstreamManager(nc);
  await until('the hub imported the real event and asked for the other again', async () => {
    const consumer = await jsm.consumers.info('EDGE_EVENTS', 'edge-events-hub').catch(() => undefined);
    return (await getJson(`${hub.url}/stats`)).body.hub.imported === 1 && (consumer?.num_redelivered ?? 0) >= 1;
  });
  t.equal((await getJson(`${hub.url}/v2/events/${event.id}`)).status, 404, 'the event whose image does not check is not stored');
  t.equal((await fetch(`${hub.url}/images/${fileId}`)).status, 404, 'nor its image');
  t.equal((await getJson(`${hub.url}/v2/events/${real.id}`)).status, 200, 'the real event is');
});

t.test('a bucket whose stream does not allow direct gets is read through the stream\'s message get', async (t) => {
  const { server, real } = await deviceWithShippedImageEvent(t);
  const nc = await connect({ servers: server.urls });
  t.teardown(() => nc.close());
  const jsm = await jetstreamManager(nc);
  await jsm.streams.update('OBJ_edge-events-files', { allow_direct: false });

  const hub = await startStore({ NATS_SOURCE_URL: server.url });
  t.teardown(hub.stop);
  await until('the hub imported the event', async () => (await getJson(`${hub.url}/stats`)).body.hub.imported === 1);
  const image = await fetch(`${hub.url}/images/${real.images[0].file_id}`);
  t.same(Buffer.from(await image.arrayBuffer()), fixture('cat.jpg'), 'its image, byte for byte');
});

/** `bytes` as the ReadableStream ObjectStore.put takes. */
function readableStreamFrom(bytes: Buffer): ReadableStream<Uint8Array> {
  return new ReadableStream({ start(controller) { controller.enqueue(new Uint8Array(bytes)); controller.close(); } });
}
