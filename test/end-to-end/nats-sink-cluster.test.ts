/**
 * The NATS JetStream sink (docs/OPERATIONS.md, "NATS JetStream") against a real 3-node nats-server
 * cluster started by the test: an R3 stream whose leader is killed mid-run, while the store ships,
 * holds every event exactly once. The sink against one server: nats-sink.test.ts.
 */
import { StorageType } from '@nats-io/jetstream';
import { Objm } from '@nats-io/obj';
import t from 'tap';
import { imageEvent } from '../support/events.js';
import { startNatsCluster } from '../support/nats-server.js';
import { startStore } from '../support/store-server.js';
import { until } from '../support/waiting.js';
import { BUCKET, client, create, natsStatus, SHIPPING, STREAM, streamMessages } from '../support/nats-stream.js';

t.test('a 3-node cluster: the R3 stream\'s leader is killed mid-run; every event is in the stream exactly once', async (t) => {
  const cluster = await startNatsCluster(3);
  t.teardown(() => cluster.stop());
  const { nc, jsm } = await client(cluster.urls);
  t.teardown(() => nc.close());
  // Made by the fleet's operator, R3: the store uses it as found.
  await jsm.streams.add({ name: STREAM, subjects: ['edge.events.>'], storage: StorageType.File, num_replicas: 3 });
  await new Objm(nc).create(BUCKET, { storage: StorageType.File, replicas: 3 });
  const store = await startStore({ ...SHIPPING, NATS_URL: cluster.urls.join(',') });
  t.teardown(store.stop);

  // 50 events before the kill, 100 while the leader is down: the writer waits for the kill, not for time.
  const ids: string[] = [];
  let leaderKilled!: () => void;
  const killed = new Promise<void>((resolve) => (leaderKilled = resolve));
  const writer = (async () => {
    for (let i = 0; i < 150; i++) {
      if (i === 50) await killed;
      ids.push(await create(store, imageEvent({ deviceId: `cam-${i % 3}` }, 'cat.jpg')));
    }
  })();
  await until('some shipped', async () => (await natsStatus(store)).shipped_total >= 30);
  const leader = (await jsm.streams.info(STREAM)).cluster!.leader!;
  await cluster.node(leader).kill();
  leaderKilled();
  await writer;
  await cluster.node(leader).start();
  await until('all shipped', async () => (await natsStatus(store)).backlog_events === 0, 90_000);

  const info = await jsm.streams.info(STREAM);
  t.equal(info.config.num_replicas, 3, 'the stream as the operator made it');
  t.not(info.cluster!.leader, undefined);
  const messages = await streamMessages(jsm);
  t.equal(messages.length, ids.length, 'one message per event');
  t.same(messages.map((m) => m.msgId).sort(), [...ids].sort(), 'every event, none twice');
});
