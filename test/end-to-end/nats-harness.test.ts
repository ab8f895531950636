/**
 * The NATS test harness (test/support/nats-server.ts) against real `nats-server` processes, and
 * the behaviour of server 2.9.10 with the nats.js v3 clients (@nats-io/transport-node,
 * @nats-io/jetstream, @nats-io/obj) that the JetStream sink and hub mode rely on: a re-sent
 * `Nats-Msg-Id` is stored once (also after a server restart); an object's bytes come back
 * identical; a durable pull consumer redelivers what was not acked and keeps consuming across a
 * server restart; an R3 stream whose leader is killed mid-run keeps every acked message exactly
 * once. Skipped, with the reason, where `nats-server` is absent.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import t, { type Test } from 'tap';
import { connect, nanos, type NatsConnection } from '@nats-io/transport-node';
import { AckPolicy, DeliverPolicy, JetStreamApiCodes, JetStreamApiError, StorageType, jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager, type StreamInfo } from '@nats-io/jetstream';
import { Objm } from '@nats-io/obj';
import { startNatsCluster, startNatsServer } from '../support/nats-server.js';
import { until } from '../support/waiting.js';

/**
 * A connection to `servers` that keeps reconnecting (the sink's and the hub's settings), closed
 * when the test ends, with its JetStream manager and client.
 */
async function session(t: Test, servers: string[]): Promise<{ nc: NatsConnection; jsm: JetStreamManager; js: JetStreamClient }> {
  const nc = await connect({ servers, maxReconnectAttempts: -1, waitOnFirstConnect: true, reconnectTimeWait: 250 });
  t.teardown(() => nc.close());
  return { nc, jsm: await jetstreamManager(nc), js: jetstream(nc, { timeout: 2000 }) };
}

/** The stream `name` as it is, or created (file storage, `edge.events.>`, 2 min dedup window) when absent. */
async function ensureStream(jsm: JetStreamManager, name: string, replicas = 1): Promise<{ created: boolean; info: StreamInfo }> {
  try {
    return { created: false, info: await jsm.streams.info(name) };
  } catch (err) {
    if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound)) throw err;
  }
  const info = await jsm.streams.add({ name, subjects: ['edge.events.>'], storage: StorageType.File, num_replicas: replicas, duplicate_window: nanos(120_000) });
  return { created: true, info };
}

t.test('one node: a stream is created only when absent, and a re-sent msgID is stored once, also after a restart', async (t) => {
  const server = await startNatsServer();
  t.teardown(() => server.stop());
  const { jsm, js } = await session(t, server.urls);

  const first = await ensureStream(jsm, 'EDGE');
  t.equal(first.created, true, 'absent: StreamNotFound (10059), then created');
  t.equal(first.info.config.storage, StorageType.File);
  t.equal(first.info.config.duplicate_window, nanos(120_000));
  const again = await ensureStream(jsm, 'EDGE');
  t.equal(again.created, false, 'present: its config is read, not changed');

  const event = JSON.stringify({ id: randomUUID(), device_id: 'cam-1', event_schema: 'person' });
  const ack = await js.publish('edge.events.cam-1.person', event, { msgID: 'ev-1' });
  t.match(ack, { stream: 'EDGE', seq: 1, duplicate: false });
  const resent = await js.publish('edge.events.cam-1.person', event, { msgID: 'ev-1' });
  t.match(resent, { stream: 'EDGE', seq: 1, duplicate: true }, 'same msgID within the window: acked as a duplicate of seq 1');
  t.equal((await jsm.streams.info('EDGE')).state.messages, 1, 'one message stored');
  const stored = await jsm.streams.getMessage('EDGE', { seq: 1 });
  t.equal(stored?.header?.get('Nats-Msg-Id'), 'ev-1');
  t.equal(stored?.string(), event);

  // A crash of the server (SIGKILL) loses neither the message nor the dedup state.
  await server.kill();
  await server.start();
  // A publish made while the client is still reconnecting is dropped (nats.js v3 clears its
  // outbound buffer on each reconnect attempt) and times out: the sink re-sends with the same msgID.
  let afterRestart;
  for (let attempt = 0; !afterRestart; attempt++) {
    try {
      afterRestart = await js.publish('edge.events.cam-1.person', event, { msgID: 'ev-1', timeout: 1000 });
    } catch (err) {
      if (attempt > 20) throw err;
    }
  }
  t.match(afterRestart, { seq: 1, duplicate: true }, 'dedup state rebuilt from the stored messages');
  t.equal((await jsm.streams.info('EDGE')).state.messages, 1);
});

t.test('one node: a 50 KB object put under a UUID comes back byte-identical; the bucket is created only when absent', async (t) => {
  const server = await startNatsServer();
  t.teardown(() => server.stop());
  const { nc } = await session(t, server.urls);
  const objm = new Objm(nc);
  const bucket = await objm.create('edge-files', { storage: StorageType.File });
  await objm.create('edge-files', { storage: StorageType.File }); // present: opened as it is
  const status = await bucket.status();
  t.equal(status.storage, StorageType.File);
  t.equal(status.streamInfo.config.allow_direct, true, 'the client sets allow_direct, which 2.9 accepts');
  await t.rejects(objm.create('compressed', { storage: StorageType.File, compression: true }), /requires server 2\.10/, 'compression is refused by the client before 2.10');

  const data = randomBytes(50 * 1024);
  const name = randomUUID();
  const info = await bucket.putBlob({ name }, data);
  t.equal(info.size, data.length);
  t.equal(info.digest, `SHA-256=${createHash('sha256').update(data).digest('base64url')}=`, 'digest: SHA-256= and base64url with padding, computable before a put');
  const back = await bucket.getBlob(name);
  t.ok(back && Buffer.from(back).equals(data), 'byte-identical');
  t.equal((await bucket.info(name))?.size, data.length);

  await bucket.delete(name);
  t.equal(await bucket.get(name), null, 'deleted: get answers null');
  t.equal((await bucket.info(name))?.deleted, true, 'info keeps a tombstone');
  t.equal(await bucket.info(randomUUID()), null, 'never put: info answers null');
});

t.test('one node: a durable pull consumer redelivers what is not acked and keeps consuming across a server restart', async (t) => {
  const server = await startNatsServer();
  t.teardown(() => server.stop());
  const { jsm, js } = await session(t, server.urls);
  await ensureStream(jsm, 'EDGE');
  await js.publish('edge.events.cam-0.person', 'm0', { msgID: 'm0' });
  await jsm.consumers.add('EDGE', { durable_name: 'hub', ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All, filter_subject: 'edge.events.>', ack_wait: nanos(1000), max_ack_pending: 100 });
  const consumer = await js.consumers.get('EDGE', 'hub');

  const first = await consumer.next({ expires: 2000 });
  t.equal(first?.seq, 1);
  // Not acked: handed out again once ack_wait (1 s) has passed (with no other message pending,
  // the next pull waits for it; otherwise the pull would get the next message first).
  const again = await consumer.next({ expires: 3000 });
  t.equal(again?.seq, 1, 'redelivered after ack_wait');
  t.equal(again?.info.deliveryCount, 2);
  t.equal(again?.redelivered, true);
  t.equal(await again!.ackAck(), true, 'ackAck: the server confirmed the ack');
  for (let i = 1; i < 5; i++) await js.publish(`edge.events.cam-${i % 2}.person`, `m${i}`, { msgID: `m${i}` });

  const seen: string[] = [];
  const messages = await consumer.consume({ max_messages: 10, expires: 2000 });
  const consuming = (async () => {
    for await (const m of messages) {
      await m.ackAck().catch(() => undefined); // an ack lost in a restart: the message comes back
      if (!seen.includes(m.string())) seen.push(m.string());
    }
  })();
  await until('m1..m4 consumed', () => seen.length >= 4);
  await server.stop();
  await server.start();
  for (let i = 5; i < 10; i++) {
    for (let attempt = 0; ; attempt++) {
      try {
        await js.publish(`edge.events.cam-${i % 2}.person`, `m${i}`, { msgID: `m${i}`, timeout: 1000 });
        break;
      } catch (err) {
        if (attempt > 20) throw err;
      }
    }
  }
  await until('m5..m9 consumed by the same consume()', () => seen.length >= 9);
  messages.stop();
  await consuming;
  // At least once: across the restart the server may hand out again a message whose ack it had
  // confirmed (CI saw m0 come back once); the hub stores an event once, by its id. Every message
  // published after m0 arrives, and nothing else does.
  t.same(seen.filter((m) => m !== 'm0').sort(), ['m1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm7', 'm8', 'm9']);
});

t.test('3 nodes: an R3 stream whose leader is killed mid-run keeps every acked message exactly once', async (t) => {
  const cluster = await startNatsCluster(3);
  t.teardown(() => cluster.stop());
  const { nc, jsm, js } = await session(t, cluster.urls);
  const { info } = await ensureStream(jsm, 'EDGE', 3);
  t.equal(info.config.num_replicas, 3);
  const leaderName = info.cluster?.leader;
  t.ok(leaderName, 'the stream has a leader');
  const leader = cluster.node(leaderName!);

  // The hub's side: one consume() on a durable R3 pull consumer, started before the kill and
  // never re-created; a message whose ack is lost in the election comes again (counted).
  await jsm.consumers.add('EDGE', { durable_name: 'hub', ack_policy: AckPolicy.Explicit, filter_subject: 'edge.events.>', ack_wait: nanos(5000), max_ack_pending: 1000 });
  const consumed = new Map<string, number>();
  const messages = await (await js.consumers.get('EDGE', 'hub')).consume({ max_messages: 100, expires: 2000 });
  const consuming = (async () => {
    for await (const m of messages) {
      consumed.set(m.string(), (consumed.get(m.string()) ?? 0) + 1);
      await m.ackAck().catch(() => undefined);
    }
  })();

  // A publisher that awaits each ack and re-sends with the same msgID on any error (a timeout
  // when the leader dies mid-request, then "no responders" until a new leader is elected).
  const acked = new Set<string>();
  const errors: string[] = [];
  let stopping = false;
  let longestGapMs = 0;
  const publishing = (async () => {
    let lastAck = Date.now();
    for (let i = 0; !stopping; i++) {
      const id = `ev-${i}`;
      for (;;) {
        try {
          await js.publish('edge.events.cam-1.person', id, { msgID: id, timeout: 2000 });
          acked.add(id);
          longestGapMs = Math.max(longestGapMs, Date.now() - lastAck);
          lastAck = Date.now();
          break;
        } catch (err) {
          if (nc.isClosed()) return; // the test failed and is tearing down
          errors.push((err as Error).name);
          // Publish again once the stream answers with a leader: until then every publish fails.
          await until('the stream has a leader', () => jsm.streams.info('EDGE').then((s) => s.cluster?.leader, () => undefined), 30_000);
        }
      }
    }
  })();

  await until('some messages acked', () => acked.size >= 200);
  await leader.kill();
  const killedAt = acked.size;
  await until('acks again after the election', () => acked.size >= killedAt + 200, 30_000);
  await leader.start();
  await leader.waitCurrent();
  await until('acks after the old leader is back', () => acked.size >= killedAt + 400);
  stopping = true;
  await publishing;
  t.comment(`killed ${leaderName} after ${killedAt} acks; longest gap between acks ${longestGapMs} ms; errors: ${JSON.stringify(errors.reduce<Record<string, number>>((n, e) => ((n[e] = (n[e] ?? 0) + 1), n), {}))}`);

  const after = await jsm.streams.info('EDGE');
  t.not(after.cluster?.leader, undefined, 'a leader again');
  t.equal(after.state.messages, acked.size, 'as many messages as distinct acked ids');
  const counts = new Map<string, number>();
  const reader = await js.consumers.get('EDGE'); // an ordered consumer
  const batch = await reader.fetch({ max_messages: after.state.messages, expires: 10_000 });
  for await (const m of batch) {
    counts.set(m.string(), (counts.get(m.string()) ?? 0) + 1);
    if (m.info.pending === 0) break;
  }
  t.same([...acked].filter((id) => counts.get(id) !== 1), [], 'every acked id stored exactly once');
  t.equal(counts.size, acked.size, 'and nothing else');

  await until('the durable consumer had every acked message', () => [...acked].every((id) => consumed.has(id)), 30_000);
  messages.stop();
  await consuming;
  t.pass(`the same consume() got every message across the leader change (${[...consumed.values()].filter((n) => n > 1).length} redelivered)`);
});
