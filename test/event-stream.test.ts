/**
 * The live event stream (docs/API.md, "Live stream") over real HTTP on the real store: matching
 * creates arrive exactly as `GET /v2/events/{id}` answers them; finalize and reset are
 * announced; a client resuming with `since` or `Last-Event-ID` at random points while events
 * pour in misses none and gets none twice; a client that stops reading is closed with its
 * resume point while ingest goes on; a graceful stop ends every stream with its resume point.
 */
import net from 'node:net';
import t from 'tap';
import { fixture, getJson, postJson, smallEvent } from './support/events.js';
import { SseClient, type SseMessage } from './support/sse-client.js';
import { startStore, type TestStore } from './support/store-server.js';
import { until } from './support/waiting.js';

const QUIET = { CLEANUP_INTERVAL_SECONDS: '3600' };

/** A seeded generator in [0, 1) (mulberry32), so a failing run can be replayed. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/** Every event of `query` in created_at order, paged through the list. */
async function listAscending(store: TestStore, query: string): Promise<{ id: string; created_at: string }[]> {
  const events: { id: string; created_at: string }[] = [];
  let start = '';
  for (;;) {
    const page = await getJson(`${store.url}/v2/events?${query}&sort_direction=asc&limit=1000${start}`);
    events.push(...page.body.events);
    if (page.body.next_timestamp === null) return events;
    start = `&start_time=${encodeURIComponent(page.body.next_timestamp)}`;
  }
}

/** The next message that is not of a kind in `skip`. */
async function nextOf(client: SseClient, event: string): Promise<SseMessage> {
  for (;;) {
    const message = await client.next();
    if (message.event === event) return message;
  }
}

t.test('a subscriber gets each matching create as GET answers it, with its created_at as id, and nothing else', async (t) => {
  const store = await startStore(QUIET);
  t.teardown(() => store.stop());
  const client = await SseClient.connect(`${store.url}/v2/events/stream?device_id=cam-1&metadata_filter=line:B`);
  t.teardown(() => client.close());
  t.equal(client.status, 200);
  t.equal(client.contentType, 'text/event-stream');
  const wanted = await postJson(`${store.url}/v2/events`, smallEvent({ device_id: 'cam-1', custom_metadata: { line: 'B' } }));
  await postJson(`${store.url}/v2/events`, smallEvent({ device_id: 'cam-2', custom_metadata: { line: 'B' } }));
  await postJson(`${store.url}/v2/events`, smallEvent({ device_id: 'cam-1', custom_metadata: { line: 'A' } }));
  const last = await postJson(`${store.url}/v2/events`, smallEvent({ device_id: 'cam-1', custom_metadata: { line: 'B' } }));

  const first = await client.next();
  t.same([first.event, first.id], ['created', wanted.body.created_at]);
  const stored = await fetch(`${store.url}/v2/events/${wanted.body.id}`).then((res) => res.text());
  t.equal(first.data, stored, 'the data is the stored JSON, byte for byte');
  const second = await client.next();
  t.equal(JSON.parse(second.data).id, last.body.id, 'events of other devices or lines are not sent');
});

t.test('finalize and reset reach subscribers; a reset is one deleted message', async (t) => {
  const store = await startStore(QUIET);
  t.teardown(() => store.stop());
  const client = await SseClient.connect(`${store.url}/v2/events/stream?include_drafts=false`);
  t.teardown(() => client.close());
  const draft = await postJson(`${store.url}/v2/events`, smallEvent({ draft: true }));
  await postJson(`${store.url}/v2/events/${draft.body.id}/finalize`, '');
  const finalized = await client.next();
  t.equal(finalized.event, 'finalized', 'the draft was not sent (include_drafts=false); its finalize is');
  t.equal(finalized.id, undefined, 'only created messages carry an id: Last-Event-ID stays a resume point');
  t.same([JSON.parse(finalized.data).id, JSON.parse(finalized.data).draft], [draft.body.id, false]);

  const token = await postJson(`${store.url}/reset/request`, '');
  await postJson(`${store.url}/reset/confirm`, { reset_token: token.body.reset_token });
  const deleted = await client.next();
  t.same([deleted.event, JSON.parse(deleted.data)], ['deleted', { id: null, reason: 'reset' }]);
});

t.test('cleanup deletions reach the subscribers whose filter the deleted event matched, with the reason', async (t) => {
  const store = await startStore({ ...QUIET, MAX_RECORDS: '2' });
  t.teardown(() => store.stop());
  const client = await SseClient.connect(`${store.url}/v2/events/stream?device_id=cam-1`);
  t.teardown(() => client.close());
  const created = [];
  for (const device of ['cam-1', 'cam-2', 'cam-1', 'cam-2', 'cam-1']) {
    created.push((await postJson(`${store.url}/v2/events`, smallEvent({ device_id: device }))).body);
  }
  // A crossed limit also starts a cleanup by itself within a second (docs/OPERATIONS.md, "Keeping
  // the disk bounded"): this one or that one deletes the three over MAX_RECORDS.
  t.equal((await postJson(`${store.url}/admin/cleanup`, '')).status, 200);
  const left = (await getJson(`${store.url}/v2/events`)).body.events.map((e: { id: string }) => e.id);
  t.same(left, [created[4].id, created[3].id], 'the two newest events are left: three were over MAX_RECORDS');
  const deleted = [];
  while (deleted.length < 2) {
    const message = await client.next();
    if (message.event === 'deleted') deleted.push(JSON.parse(message.data));
  }
  t.same(deleted, [{ id: created[0].id, reason: 'max_records' }, { id: created[2].id, reason: 'max_records' }],
    'the two oldest cam-1 events, not cam-2\'s');
});

t.test('since and Last-Event-ID resume from the store, then go live; a malformed one is 400', async (t) => {
  const store = await startStore(QUIET);
  t.teardown(() => store.stop());
  const created = [];
  for (let i = 0; i < 5; i++) created.push((await postJson(`${store.url}/v2/events`, smallEvent())).body);

  const bySince = await SseClient.connect(`${store.url}/v2/events/stream?since=${encodeURIComponent(created[1].created_at)}`);
  t.teardown(() => bySince.close());
  const byHeader = await SseClient.connect(`${store.url}/v2/events/stream`, { 'last-event-id': created[3].created_at });
  t.teardown(() => byHeader.close());
  const live = (await postJson(`${store.url}/v2/events`, smallEvent())).body;
  const ids = async (client: SseClient, n: number): Promise<string[]> => {
    const got = [];
    for (let i = 0; i < n; i++) got.push(JSON.parse((await nextOf(client, 'created')).data).id);
    return got;
  };
  t.same(await ids(bySince, 4), [created[2].id, created[3].id, created[4].id, live.id]);
  t.same(await ids(byHeader, 2), [created[4].id, live.id]);

  const bad = await fetch(`${store.url}/v2/events/stream?since=yesterday`);
  t.equal(bad.status, 400);
  const badHeader = await fetch(`${store.url}/v2/events/stream`, { headers: { 'last-event-id': 'x' } });
  t.equal(badHeader.status, 400);
});

t.test('reconnecting at random points while events pour in misses none and repeats none', async (t) => {
  const store = await startStore(QUIET);
  t.teardown(() => store.stop());
  const random = seeded(20261123);
  const total = 600;
  let posted = 0;
  let writing = true;
  const writer = Promise.all(Array.from({ length: 8 }, async () => {
    while (posted < total) {
      const device = posted++ % 3 === 0 ? 'cam-2' : 'cam-1';
      const answer = await postJson(`${store.url}/v2/events`, smallEvent({ device_id: device }));
      if (answer.status !== 201) throw new Error(`create answered ${answer.status}`);
    }
  })).finally(() => { writing = false; });

  const seen: string[] = [];
  let resumeFrom: string | undefined;
  let connections = 0;
  let expected: number | undefined;
  /** Once the writer is done: how many cam-1 events the stream must have given in all. */
  const settled = async (): Promise<boolean> => {
    if (!writing && expected === undefined) expected = (await listAscending(store, 'device_id=cam-1')).length;
    return expected !== undefined && seen.length >= expected;
  };
  let idleAfterWriting = 0;
  while (!(await settled())) {
    const client = await SseClient.connect(`${store.url}/v2/events/stream?device_id=cam-1`, resumeFrom ? { 'last-event-id': resumeFrom } : {});
    connections++;
    const take = 1 + Math.floor(random() * 60);
    try {
      for (let taken = 0; taken < take && !(await settled());) {
        const message = await client.next(1_000).catch(() => undefined);
        if (message === undefined) {
          // Nothing for a second: fine while the writer writes; after, the stream owes events.
          if (!writing && ++idleAfterWriting > 10) throw new Error(`the stream gave ${seen.length} of ${expected} events, then nothing`);
          continue;
        }
        if (message.event !== 'created') continue;
        seen.push(JSON.parse(message.data).id);
        resumeFrom = message.id;
        taken++;
      }
    } finally {
      client.close();
    }
    // Away while up to 40 events pile up (not for a time: the writer's pace varies), and the next
    // catch-up reads them while more arrive.
    const pileUp = Math.min(total, posted + Math.floor(random() * 40));
    await until('events to pile up while the reader is away', () => posted >= pileUp || !writing);
  }
  await writer;
  const stored = (await listAscending(store, 'device_id=cam-1')).map((e) => e.id);
  t.ok(connections > 5, `the reader reconnected ${connections} times`);
  t.equal(stored.length, 400, 'two thirds of the events are cam-1\'s');
  t.same(seen, stored, 'the stream gave every cam-1 event once, in created_at order');
});

t.test('a client that stops reading is closed with its resume point; ingest goes on', async (t) => {
  const store = await startStore({ ...QUIET, STREAM_SUBSCRIBER_BUFFER_BYTES: '65536' });
  t.teardown(() => store.stop());
  const { port } = new URL(store.url);
  const socket = net.connect(Number(port), '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write('GET /v2/events/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
  socket.pause(); // reads nothing: the kernel's buffers fill, then the store's bound
  t.teardown(() => socket.destroy());

  // An event whose stored JSON is about 200 KB: one image with 2,000 detections. Created until
  // the store drops the subscriber (the kernel's buffers hold a few MB first), at most 100.
  const detections = Array.from({ length: 2000 }, (_, i) => ({ class: `part-${i}`, x: i, y: i, width: 10, height: 10, confidence: 0.5 }));
  const heavy = smallEvent({ images: [{ label: 'front', base64_image: fixture('cat.jpg').toString('base64'), object_detections: detections }] });
  const dropped = async () => /^edge_events_stream_subscribers_dropped_total 1$/m.test(await (await fetch(`${store.url}/metrics`)).text());
  let sent = 0;
  let created = 0;
  while (sent < 100 && !(await dropped())) {
    sent++;
    if ((await postJson(`${store.url}/v2/events`, heavy)).status === 201) created++;
  }
  t.equal(created, sent, `every create was answered 201 while the subscriber read nothing (${sent} until it was dropped)`);
  await until('the store dropped the subscriber', dropped);

  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.resume();
  await new Promise((resolve) => socket.once('end', resolve));
  const text = Buffer.concat(chunks).toString();
  const closed = /event: closed\ndata: (.*)\n\n/.exec(text);
  t.ok(closed, 'the stream ends with a closed message');
  const body = JSON.parse(closed![1]);
  t.equal(body.reason, 'slow_consumer');
  const lastId = [...text.matchAll(/^id: (.*)$/gm)].at(-1)?.[1];
  t.equal(body.since, lastId, 'its resume point is the id of the last event it was sent');
});

t.test('the key may come as api_key for EventSource; a graceful stop ends the stream with its resume point', async (t) => {
  const store = await startStore({ ...QUIET, API_KEY: 'stream-key' });
  t.equal((await fetch(`${store.url}/v2/events/stream`)).status, 401);
  const client = await SseClient.connect(`${store.url}/v2/events/stream?api_key=stream-key`);
  t.equal(client.status, 200);
  const created = await postJson(`${store.url}/v2/events`, smallEvent(), { 'x-api-key': 'stream-key' });
  await nextOf(client, 'created');
  await store.stop();
  const closed = await nextOf(client, 'closed');
  t.same(JSON.parse(closed.data), { reason: 'shutdown', since: created.body.created_at });
});
