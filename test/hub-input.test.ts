/**
 * A hub takes whatever the fleet stream carries without dying (docs/OPERATIONS.md, "Hub mode"),
 * against a real nats-server: `null`, other JSON that is no object, and text that is no JSON,
 * published on the fleet's subjects, are terminated (never redelivered), logged and counted in
 * /stats and /metrics, and the events around them are imported. Found by a hostile-input probe:
 * one `null` crash-looped a hub, as it was never acknowledged.
 */
import { connect } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import t from 'tap';
import { getJson, postJson, smallEvent } from './support/events.js';
import { startNatsServer } from './support/nats-server.js';
import { startStore, type TestStore } from './support/store-server.js';
import { until } from './support/waiting.js';

const HOSTILE = ['null', '[]', '"x"', '5', 'true', 'not json', '{"id":5}'];

async function create(store: TestStore): Promise<string> {
  const res = await postJson(`${store.url}/v2/events`, smallEvent({ device_id: 'cam-1' }));
  if (res.status !== 201) throw new Error(`create answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.id as string;
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
