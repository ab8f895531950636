/**
 * The live stream's switch from catch-up to live (docs/ARCHITECTURE.md, "The live stream"), on
 * a real store in this process: a subscriber whose client is slow catches up over many pages
 * while new events are created and announced, so changes are kept during the catch-up and the
 * switch must send each event once, in created_at order, none missed and none repeated.
 */
import t from 'tap';
import type { EventQuery } from '../src/store/read/event-query.js';
import { StreamFanout, type HeartbeatTransport } from '../src/stream/stream-fanout.js';
import type { StreamMessage } from '../src/stream/stream-message.js';
import { smallEvent } from './support/events.js';
import { openLocalStore } from './support/local-store.js';
import { until } from './support/waiting.js';

const EVERY_EVENT: EventQuery = { fields: {}, metadata: [], startTime: undefined, endTime: undefined, includeDrafts: true, direction: 'asc', limit: 0 };

/** A client that is always behind: each message is taken, then it needs `lagMs` to catch up. */
class SlowClient implements HeartbeatTransport {
  readonly received: StreamMessage[] = [];
  closed = false;

  constructor(private readonly lagMs: number) {}

  send(message: StreamMessage): boolean {
    this.received.push(message);
    return false;
  }

  drained(): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, this.lagMs));
  }

  heartbeat(): void {}

  end(): void {
    this.closed = true;
  }
}

t.test('a slow subscriber catching up while events keep coming gets each once, in order', async (t) => {
  const local = await openLocalStore();
  t.teardown(() => local.close());
  const before = [];
  for (let i = 0; i < 60; i++) before.push(await local.create(smallEvent({ event_data: { value: `before-${i}` } })));
  const fanout = new StreamFanout(local.store, { maxQueuedBytes: 64 * 1024 * 1024, catchUpPage: 5, catchUpScanRecords: 10_000, maxConcurrentCatchUps: 4, heartbeatMs: 60_000 });
  t.teardown(() => fanout.close());
  const client = new SlowClient(2);
  const since = local.createdAt(before[0].id);
  fanout.subscribe(EVERY_EVENT, since, client);

  // While it catches up (60 events, 5 a page, 2 ms a message), 40 more are created and announced.
  const during = [];
  for (let i = 0; i < 40; i++) during.push(await local.create(smallEvent({ event_data: { value: `during-${i}` } })));
  await until('the catch-up and the events created during it', () => client.received.length >= before.length - 1 + during.length);
  // Messages arrive in order: a repeat of anything sent so far would come before this last one.
  const last = await local.create(smallEvent({ event_data: { value: 'last' } }));
  const expected = [...before.slice(1), ...during, last].map((e) => e.id);
  await until('the last event', () => client.received.some((m) => m.type === 'created' && JSON.parse(Buffer.from(m.data).toString()).id === last.id));

  const ids = client.received.filter((m) => m.type === 'created').map((m) => JSON.parse(Buffer.from(m.data).toString()).id);
  t.ok(during.length > 0 && local.createdAt(during[0].id) > since, 'events were created during the catch-up');
  t.same(ids, expected, 'every event after the resume point once, in created_at order');
  t.same(client.received.map((m) => m.createdAt), [...client.received.map((m) => m.createdAt)].sort((a, b) => a! - b!), 'ids increase');
});
