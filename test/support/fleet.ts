/**
 * A fleet for hub tests (docs/OPERATIONS.md, "Hub mode"): a device store shipping to a real
 * nats-server, and fleet messages a hub cannot import yet.
 */
import { randomUUID } from 'node:crypto';
import { Objm } from '@nats-io/obj';
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import type { Test } from 'tap';
import { fixture, getJson, imageEvent, postJson } from './events.js';
import type { NatsServer } from './nats-server.js';
import { startStore, type TestStore } from './store-server.js';
import { until } from './waiting.js';

/** A device store shipping to `server`, with one image event shipped (its sink makes the stream and the bucket). */
export async function deviceWithOneEvent(t: Test, server: NatsServer): Promise<{ device: TestStore; event: Record<string, unknown> }> {
  const device = await startStore({ NATS_URL: server.url });
  t.teardown(device.stop);
  const created = await postJson(`${device.url}/v2/events`, imageEvent({ deviceId: 'cam-1' }));
  t.equal(created.status, 201);
  await until('the device shipped its event', async () => (await getJson(`${device.url}/stats`)).body.sinks.nats.backlog_events === 0);
  return { device, event: (await getJson(`${device.url}/v2/events/${created.body.id}`)).body };
}

/**
 * Publishes a copy of `event` under a new id whose image is not in the bucket: the hub cannot
 * import it until `putImage` puts the image (through `nc`, or another connection). Meanwhile it
 * is delivered again every 5 s and stays pending (src/hub/nats-source.ts); at its fifth delivery,
 * about 20 s after this, the hub stores it without the image.
 */
export async function publishAwaitingImage(nc: NatsConnection, event: Record<string, unknown>): Promise<{ id: string; putImage: (through?: NatsConnection) => Promise<void> }> {
  const fileId = randomUUID();
  const images = event.images as Record<string, unknown>[];
  const copy = { ...event, id: randomUUID(), images: [{ ...images[0], file_id: fileId, input_file_id: null }] };
  await jetstream(nc).publish('edge.events.cam-1.quality_check', JSON.stringify(copy));
  const putImage = async (through = nc) => {
    const bucket = await new Objm(through).open('edge-events-files');
    const bytes = new Uint8Array(fixture('cat.jpg'));
    await bucket.put({ name: fileId, description: 'image/jpeg' }, new ReadableStream({ start(controller) { controller.enqueue(bytes); controller.close(); } }));
  };
  return { id: copy.id, putImage };
}
