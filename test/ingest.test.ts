/** POST /v2/events over real HTTP: spellings, durability, rules E1-E4, E7, size limit, bad input. */
import net from 'node:net';
import t from 'tap';
import { responseProblems } from './support/response-shapes.js';
import { rawRequest } from '../scripts/lib/raw-http.js';
import { fixture, getJson, imageEvent, postJson, smallEvent } from './support/events.js';
import { startStore } from './support/store-server.js';

// A valid external_id (up to 1000 characters; docs/API.md, "Event schemas") of 700 '€' is 2100
// bytes in UTF-8: its index key [x, value, created_at] exceeds LMDB's 1978-byte key limit.
const LONG_EXTERNAL_ID = '€'.repeat(700);

const countOf = async (url: string): Promise<number> => (await getJson(`${url}/events/count/stats`)).body.total_count;

t.test('a camelCase event with a real JPEG is stored and answered 201', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const res = await postJson(`${store.url}/v2/events`, imageEvent());
  t.equal(res.status, 201);
  t.same(responseProblems('create-response', res.body), []);
  t.equal(res.body.image_ids.length, 1);
  t.equal(res.body.draft, false);

  const event = await getJson(`${store.url}/v2/events/${res.body.id}`);
  t.equal(event.status, 200);
  t.same(responseProblems('stored-event', event.body), []);
  t.equal(event.body.device_id, 'cam-1');
  t.same(event.body.event_data, { result: 'pass', external_id: 'lot-1' });
  t.equal(event.body.images[0].file_id, res.body.image_ids[0]);
  t.equal(event.body.images[0].object_detections[0].class, 'cat');
  t.equal(event.body.api_version, 'v2');
  t.equal(event.body.original_file_count, 1);
  t.equal(event.body.current_file_count, 1);
  t.equal(event.body.finalized_at, event.body.created_at);

  const image = await fetch(`${store.url}/images/${res.body.image_ids[0]}`);
  t.equal(image.headers.get('content-type'), 'image/jpeg');
  t.same(Buffer.from(await image.arrayBuffer()), fixture('cat.jpg'));
});

t.test('snake_case input and every event schema are accepted', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const bodies = [
    smallEvent({ event_schema: 'quality_check', event_data: { result: 'fail', external_id: 'a' } }),
    smallEvent({ event_schema: 'inventory_count', event_data: { location: 'bay 3', item_count: 12, item_type: 'box' } }),
    smallEvent({ event_schema: 'safety_alert', event_data: { alert_type: 'no_helmet', severity: 'high', description: 'x' } }),
    smallEvent({ event_schema: 'operator_feedback', event_data: { related_event_id: 'e-1', feedback: 'correct' } }),
    smallEvent({ event_schema: 'custom', event_data: { value: 'v', external_id: 'b' } }),
  ];
  for (const body of bodies) {
    const res = await postJson(`${store.url}/v2/events`, body);
    t.equal(res.status, 201, `${String(body.event_schema)} accepted`);
  }
  t.equal(await countOf(store.url), 5);
});

t.test('an acknowledged event survives a restart of the store', async (t) => {
  const first = await startStore();
  const created = await Promise.all(Array.from({ length: 20 }, () => postJson(`${first.url}/v2/events`, imageEvent())));
  await first.stop();
  const second = await startStore({ DATA_DIR: first.dataDir });
  t.teardown(second.stop);
  for (const { body } of created) {
    const event = await getJson(`${second.url}/v2/events/${body.id}`);
    t.equal(event.status, 200);
    const image = await fetch(`${second.url}/images/${body.image_ids[0]}`);
    t.same(Buffer.from(await image.arrayBuffer()), fixture('cat.jpg'));
  }
  t.equal(await countOf(second.url), 20);
});

t.test('bad input is refused with the status docs/API.md gives and stores nothing', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const cases: [string, unknown, number][] = [
    ['malformed JSON', '{"event_schema": ', 422],
    ['not an object', '[1,2]', 422],
    ['missing event_data', smallEvent({ event_data: undefined }), 422],
    ['wrong type', smallEvent({ device_id: 42 }), 422],
    ['wrong type of a known detection key', imageEvent({ images: [{ objectDetections: [{ class: 'c', x: '1', y: 1, width: 1, height: 1, confidence: 0.5 }] }] }), 422],
    ['unknown field inside event_data', smallEvent({ event_schema: 'quality_check', event_data: { result: 'pass', colour: 'red' } }), 400],
    ['too long device_id', smallEvent({ device_id: 'd'.repeat(257) }), 422],
    ['confidence above 1', imageEvent({ images: [{ classifications: [{ class: 'c', confidence: 1.5 }] }] }), 422],
    ['E4 unknown event_schema', smallEvent({ event_schema: 'weather' }), 422],
    ['E2 event_data off its schema', smallEvent({ event_schema: 'quality_check', event_data: { result: 'maybe' } }), 400],
    ['E3 undecodable base64', imageEvent({ images: [{ base64Image: 'not base64 at all!' }] }), 400],
    ['E3 truncated base64', imageEvent({ images: [{ base64Image: fixture('cat.jpg').toString('base64').slice(0, 101) }] }), 400],
  ];
  for (const [name, body, status] of cases) {
    const res = await postJson(`${store.url}/v2/events`, body);
    t.equal(res.status, status, name);
    t.ok(res.body.detail, `${name} has a detail`);
    t.same(responseProblems('error', res.body), [], `${name} error body shape`);
  }
  const e2 = await postJson(`${store.url}/v2/events`, smallEvent({ event_schema: 'quality_check', event_data: {} }));
  t.type(e2.body.detail, 'string');
  t.match(e2.body.detail, /quality_check/, 'E2 detail names the schema');
  t.equal(await countOf(store.url), 0);
});

t.test('E1: solution is required when cloud upload is on and DEFAULT_SOLUTION_ID is unset', async (t) => {
  const store = await startStore({ CLOUD_UPLOAD_URL: 'http://127.0.0.1:9' });
  t.teardown(store.stop);
  t.equal((await postJson(`${store.url}/v2/events`, smallEvent())).status, 400);
  t.equal((await postJson(`${store.url}/v2/events`, smallEvent({ solution: 'line-qa' }))).status, 201);
  const withDefault = await startStore({ CLOUD_UPLOAD_URL: 'http://127.0.0.1:9', DEFAULT_SOLUTION_ID: 'default-sol' });
  t.teardown(withDefault.stop);
  t.equal((await postJson(`${withDefault.url}/v2/events`, smallEvent())).status, 201);
});

t.test('a body over MAX_RECORD_SIZE_BYTES answers 413 without being read whole', async (t) => {
  const store = await startStore({ MAX_RECORD_SIZE_BYTES: '65536' });
  t.teardown(store.stop);
  const big = imageEvent({}, 'retina.jpg'); // ~360 KB of base64
  const res = await postJson(`${store.url}/v2/events`, big);
  t.equal(res.status, 413);

  // Chunked, so the size is only known while reading: still 413. A raw socket reads the answer
  // whatever the server does with the rest of the body (fetch may fail writing it instead).
  const bytes = Buffer.from(JSON.stringify(big));
  const chunks: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += 16384) chunks.push(bytes.subarray(i, i + 16384));
  const chunked = await rawRequest(Number(new URL(store.url).port), [
    'POST /v2/events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n',
    ...chunks.map((c) => Buffer.concat([Buffer.from(`${c.length.toString(16)}\r\n`), c, Buffer.from('\r\n')])),
    '0\r\n\r\n',
  ]);
  t.equal(chunked !== 'closed' && chunked.status, 413, 'a chunked body growing past the limit: 413');
  t.equal(await countOf(store.url), 0);
});

t.test('a client that disconnects mid-body leaves no trace and others are served', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const { port } = new URL(store.url);
  const body = JSON.stringify(imageEvent());
  await new Promise<void>((resolve) => {
    const socket = net.connect(Number(port), '127.0.0.1', () => {
      socket.write(`POST /v2/events HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
      socket.write(body.slice(0, body.length / 2), () => {
        socket.destroy();
        resolve();
      });
    });
  });
  const ok = await postJson(`${store.url}/v2/events`, imageEvent());
  t.equal(ok.status, 201);
  t.equal(await countOf(store.url), 1);
});

// Found by the fuzz run (npm run fuzz; docs/RELIABILITY.md, "How each promise is tested"), commit d13be91.
t.test('a valid event whose indexed value is over 1978 bytes is stored (found by the fuzz run)', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  for (const [what, event] of [
    ['external_id of 700 €', smallEvent({ event_schema: 'custom', event_data: { external_id: LONG_EXTERNAL_ID } })],
    ['custom_metadata value of 1000 €', smallEvent({ custom_metadata: { note: '€'.repeat(1000) } })],
    ['related_event_id of 1000 emoji', smallEvent({ event_schema: 'operator_feedback', event_data: { related_event_id: '\u{1F600}'.repeat(1000), feedback: 'correct' } })],
  ] as const) {
    const created = await postJson(`${store.url}/v2/events`, event);
    t.equal(created.status, 201, `${what}: ${JSON.stringify(created.body)}`);
  }
  const found = await getJson(`${store.url}/v2/events?external_id=${encodeURIComponent(LONG_EXTERNAL_ID)}`);
  t.equal(found.status, 200);
  t.equal(found.body.count, 1, 'and found by its external_id');
});

// Found by the fuzz run beside the test above, commit d13be91.
t.test('one such event does not fail the creates group-committed with it', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const neighbours = Array.from({ length: 20 }, () => postJson(`${store.url}/v2/events`, imageEvent()));
  const long = postJson(`${store.url}/v2/events`, smallEvent({ event_schema: 'custom', event_data: { external_id: LONG_EXTERNAL_ID } }));
  const statuses = (await Promise.all(neighbours)).map((r) => r.status);
  await long;
  t.same(statuses, statuses.map(() => 201), 'every ordinary create sent with it is acknowledged');
  t.ok((await getJson(`${store.url}/stats`)).body.current.total_events >= 20, 'and stored');
});

// Found by the fuzz run (a __proto__ key came back renamed), commit fa04ddb.
t.test('a custom_metadata key "__proto__" is refused with 422 naming it, and nothing is stored (found by the fuzz run)', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const body = '{"inference_timestamp":"2026-11-22T01:00:00Z","event_schema":"custom","event_data":{},"custom_metadata":{"__proto__":"x","line":"A"}}';
  const created = await postJson(`${store.url}/v2/events`, body);
  t.equal(created.status, 422);
  t.same(created.body.detail.map((d: { loc: unknown[] }) => d.loc), [['body', 'custom_metadata', '__proto__']], 'the key is named');
  t.equal((await getJson(`${store.url}/stats`)).body.current.total_events, 0, 'nothing stored');
});
