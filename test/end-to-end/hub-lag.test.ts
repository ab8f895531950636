/**
 * A hub's lag in sight (docs/OPERATIONS.md, "Hub mode"), against a real
 * nats-server: `/stats` `hub` and `/metrics` give the consumer's pending messages (num_pending
 * plus num_ack_pending), the lag and the JetStream timestamp of the newest imported message;
 * a scrape with NATS away answers the last values; a lag that grows for
 * NATS_SOURCE_LAG_WARN_SECONDS is logged once at warn, and its recovery once.
 *
 * A hub falls behind here on a fleet message whose image is not in the bucket yet
 * (support/fleet.ts `publishAwaitingImage`).
 */
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import t from 'tap';
import { spawnStore } from '../../scripts/lib/spawned-store.js';
import { getJson } from '../support/events.js';
import { deviceWithOneEvent, publishAwaitingImage } from '../support/fleet.js';
import { startNatsServer } from '../support/nats-server.js';
import { responseProblems } from '../support/response-shapes.js';
import { startStore, tempDataDir } from '../support/store-server.js';
import { until } from '../support/waiting.js';

/** The value of the unlabelled sample `name` in a /metrics text; undefined when absent. */
function sample(metrics: string, name: string): number | undefined {
  const line = metrics.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

t.test('/stats hub and /metrics give the pending messages, the lag and the newest imported message\'s stream time; NATS away, the last values', async (t) => {
  const server = await startNatsServer();
  t.teardown(() => server.stop());
  const { event } = await deviceWithOneEvent(t, server);
  const nc = await connect({ servers: server.urls });
  t.teardown(() => nc.close());

  const hub = await startStore({ NATS_SOURCE_URL: server.url });
  t.teardown(hub.stop);
  const caughtUp = await until('the hub imported the event and read that nothing is pending', async () => {
    const { body } = await getJson(`${hub.url}/stats`);
    return body.hub.imported === 1 && body.hub.pending_messages === 0 && body;
  });
  t.same(responseProblems('stats', caughtUp), [], '/stats keeps its shape');
  t.equal(caughtUp.hub.lag_seconds, 0, 'caught up: no lag');
  const stored = await (await jetstreamManager(nc)).streams.getMessage('EDGE_EVENTS', { seq: 1 });
  t.equal(new Date(caughtUp.hub.newest_imported_at).getTime(), stored!.time.getTime(), 'newest_imported_at is the message\'s JetStream timestamp');
  t.ok(caughtUp.hub.newest_imported_at > String(event.created_at), 'not the device\'s created_at, which came before it was shipped');
  const metrics = await (await fetch(`${hub.url}/metrics`)).text();
  t.equal(sample(metrics, 'edge_events_hub_pending_messages'), 0);
  t.equal(sample(metrics, 'edge_events_hub_lag_seconds'), 0);

  const awaiting = await publishAwaitingImage(nc, event);
  const behind = await until('the hub reads one message pending, and a lag', async () => {
    const { hub: status } = (await getJson(`${hub.url}/stats`)).body;
    return status.pending_messages === 1 && status.lag_seconds > 0 && status;
  });
  t.equal(behind.newest_imported_at, caughtUp.hub.newest_imported_at, 'nothing newer imported');
  await until('the lag grows while the message waits', async () => (await getJson(`${hub.url}/stats`)).body.hub.lag_seconds > behind.lag_seconds);
  const waiting = await (await fetch(`${hub.url}/metrics`)).text();
  t.equal(sample(waiting, 'edge_events_hub_pending_messages'), 1, '/metrics: one pending');
  t.ok(sample(waiting, 'edge_events_hub_lag_seconds')! > 0, '/metrics: a lag');

  await server.stop();
  const away = await fetch(`${hub.url}/metrics`);
  t.equal(away.status, 200, 'a scrape with NATS away is answered');
  t.equal(sample(await away.text(), 'edge_events_hub_pending_messages'), 1, 'with the last value read');
  const { hub: awayStatus } = (await getJson(`${hub.url}/stats`)).body;
  t.equal(awayStatus.pending_messages, 1, '/stats too');
  t.ok(awayStatus.lag_seconds > behind.lag_seconds, 'and the lag goes on growing: nothing is imported meanwhile');

  await server.start();
  const again = await connect({ servers: server.urls }); // the first one may still be waiting to reconnect
  t.teardown(() => again.close());
  await awaiting.putImage(again);
  await until('the hub imports the message once its image is there, and catches up', async () => {
    const { hub: status } = (await getJson(`${hub.url}/stats`)).body;
    return status.imported === 2 && status.pending_messages === 0 && status.lag_seconds === 0;
  });
  t.equal((await getJson(`${hub.url}/v2/events/${awaiting.id}`)).status, 200, 'the waiting event is stored');
});

t.test('a lag growing for NATS_SOURCE_LAG_WARN_SECONDS is logged once at warn, and its recovery once', async (t) => {
  const server = await startNatsServer();
  t.teardown(() => server.stop());
  const { event } = await deviceWithOneEvent(t, server);
  const nc = await connect({ servers: server.urls });
  t.teardown(() => nc.close());

  const hub = await spawnStore({ PORT: '0', DATA_DIR: tempDataDir(), NATS_SOURCE_URL: server.url, NATS_SOURCE_LAG_WARN_SECONDS: '4' });
  t.teardown(() => hub.child.kill('SIGTERM'));
  await until('the hub caught up', async () => {
    const { hub: status } = (await getJson(`${hub.url}/stats`)).body;
    return status.imported === 1 && status.pending_messages === 0;
  });
  const lines = () => hub.output().split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as { level: number; msg: string; lag_seconds?: number; grown_seconds?: number; pending_messages?: number });
  const growing = () => lines().filter((line) => line.msg.startsWith('the hub is falling behind'));
  const recovered = () => lines().filter((line) => line.msg.startsWith('the hub\'s lag recovered'));
  t.same(growing(), [], 'no warning while it keeps up');

  const awaiting = await publishAwaitingImage(nc, event);
  const [warning] = await until('the growing lag logged', () => growing().length > 0 && growing());
  t.equal(warning!.level, 40, 'at warn');
  t.equal(warning!.pending_messages, 1, 'with what is pending');
  t.ok(warning!.grown_seconds! > 1, `with how much it grew (${warning!.grown_seconds} s)`);
  // Still behind: the lag goes on growing over more reads, and is not logged again.
  const stillBehind = await until('the lag grown further', async () => {
    const { hub: status } = (await getJson(`${hub.url}/stats`)).body;
    return status.lag_seconds > warning!.lag_seconds! + 2 && status;
  });
  t.equal(stillBehind.pending_messages, 1);
  t.same(recovered(), [], 'no recovery while it waits');

  await awaiting.putImage();
  await until('the recovery logged', () => recovered().length > 0);
  await until('the hub caught up again', async () => (await getJson(`${hub.url}/stats`)).body.hub.imported === 2);
  t.equal(growing().length, 1, 'one warning line');
  t.equal(recovered().length, 1, 'one recovery line');
  t.equal(recovered()[0]!.level, 30, 'the recovery at info');
});
