/**
 * The live event stream as a WebSocket (docs/API.md, "Live stream"), on the process's engine
 * (one of the files `npm run test:engine` runs on each engine): messages `{"type", "id", "data"}` carrying what
 * the SSE stream carries, resumable with `since`, the key as `api_key`, a browser's cross-origin
 * upgrade refused before any upgrade, and an Upgrade on another path answered as that path.
 */
import t from 'tap';
import WebSocket from 'ws';
import { postJson, smallEvent } from './support/events.js';
import { startStore } from './support/store-server.js';

interface StreamFrame {
  type: string;
  id?: string;
  data: unknown;
}

/** Opens a WebSocket and collects its messages; resolves once open. */
async function open(url: string, headers: Record<string, string> = {}): Promise<{ socket: WebSocket; next: () => Promise<StreamFrame> }> {
  const socket = new WebSocket(url, { headers });
  const frames: StreamFrame[] = [];
  const waiting: ((frame: StreamFrame) => void)[] = [];
  socket.on('message', (data) => {
    const frame = JSON.parse(data.toString()) as StreamFrame;
    const wake = waiting.shift();
    if (wake) wake(frame);
    else frames.push(frame);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  const next = () => {
    const ready = frames.shift();
    if (ready) return Promise.resolve(ready);
    return new Promise<StreamFrame>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no WebSocket message in time')), 15_000);
      waiting.push((frame) => { clearTimeout(timer); resolve(frame); });
    });
  };
  return { socket, next };
}

/** The status an upgrade was refused with (the HTTP answer instead of 101). */
function refusal(url: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers });
    socket.once('unexpected-response', (_req, res) => { resolve(res.statusCode ?? 0); socket.terminate(); });
    socket.once('open', () => { socket.terminate(); reject(new Error('the upgrade was accepted')); });
    socket.once('error', () => undefined);
  });
}

t.test('a WebSocket subscriber gets matching creates and finalizes, and resumes with since', async (t) => {
  const store = await startStore({ CLEANUP_INTERVAL_SECONDS: '3600' });
  t.teardown(() => store.stop());
  const wsUrl = store.url.replace('http:', 'ws:');
  const { socket, next } = await open(`${wsUrl}/v2/events/stream?device_id=cam-1`);
  t.teardown(() => socket.terminate());

  const first = await postJson(`${store.url}/v2/events`, smallEvent({ device_id: 'cam-1', draft: true }));
  await postJson(`${store.url}/v2/events`, smallEvent({ device_id: 'cam-2' }));
  await postJson(`${store.url}/v2/events/${first.body.id}/finalize`, '');
  const created = await next();
  const stored = await fetch(`${store.url}/v2/events/${first.body.id}`).then((res) => res.json());
  t.same(created.type, 'created');
  t.equal(created.id, first.body.created_at, 'id: the created_at, the resume point');
  t.same(created.data, { ...stored, draft: true, finalized_at: null }, 'data: the event as stored then');
  const finalized = await next();
  t.same([finalized.type, (finalized.data as { id: string; draft: boolean }).id, (finalized.data as { draft: boolean }).draft], ['finalized', first.body.id, false]);

  const second = await postJson(`${store.url}/v2/events`, smallEvent({ device_id: 'cam-1' }));
  const resumed = await open(`${wsUrl}/v2/events/stream?device_id=cam-1&since=${encodeURIComponent(first.body.created_at)}`);
  t.teardown(() => resumed.socket.terminate());
  const again = await resumed.next();
  t.same([again.type, (again.data as { id: string }).id], ['created', second.body.id], 'since: the stored events after it first');
});

t.test('an upgrade passes the checks of the SSE route: key, filters, and no cross-origin browser', async (t) => {
  const store = await startStore({ CLEANUP_INTERVAL_SECONDS: '3600', API_KEY: 'ws-key' });
  t.teardown(() => store.stop());
  const wsUrl = store.url.replace('http:', 'ws:');
  t.equal(await refusal(`${wsUrl}/v2/events/stream`), 401, 'no key');
  t.equal(await refusal(`${wsUrl}/v2/events/stream?api_key=ws-key&since=never`), 400, 'a malformed since');
  t.equal(await refusal(`${wsUrl}/v2/events/stream?api_key=ws-key`, { Origin: 'http://evil.example' }), 403,
    'a page of another origin (WebSockets are outside CORS: it could read the events otherwise)');
  const { socket, next } = await open(`${wsUrl}/v2/events/stream?api_key=ws-key`);
  t.teardown(() => socket.terminate());
  const created = await postJson(`${store.url}/v2/events`, smallEvent(), { 'x-api-key': 'ws-key' });
  t.equal((await next()).id, created.body.created_at, 'api_key in the query is the key');
});

t.test('an Upgrade on a path with no WebSocket route gets that path\'s ordinary answer', async (t) => {
  const store = await startStore({ CLEANUP_INTERVAL_SECONDS: '3600' });
  t.teardown(() => store.stop());
  const wsUrl = store.url.replace('http:', 'ws:');
  t.equal(await refusal(`${wsUrl}/health`), 200, '/health answers as it does to a GET');
  t.equal(await refusal(`${wsUrl}/v2/events/not-an-event`), 404, 'an unknown event, 404');
});
