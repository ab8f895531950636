/**
 * The live stream's catch-up holds a bounded number of bytes whatever the events' size and however
 * many clients never read (docs/API.md, "Live stream"), and a page of another origin cannot open
 * it. Found by a hostile-input probe: 40 events of 9.5 MB and one client that never read took a
 * store from 347 MB to 1,297 MB of RSS, four such clients to 3,059 MB. Here: 32 events of about
 * 1.5 MB of JSON, four clients that send the request and never read, on a spawned store (its own
 * anonymous memory, RssAnon of /proc/<pid>/status: LMDB's pages are file-backed and not counted),
 * on the engine HTTP_ENGINE names.
 */
import fs from 'node:fs';
import net from 'node:net';
import t from 'tap';
import { launchStore } from '../../scripts/lib/store-process.js';
import { postJson, smallEvent } from '../support/events.js';
import { tempDataDir } from '../support/store-server.js';
import { until } from '../support/waiting.js';

const EVENTS = 32;
const CLIENTS = 4;
const MiB = 1024 * 1024;

/** RssAnon of process `pid` (bytes): its heap and buffers, without mapped files. */
function anonymousMemory(pid: number): number {
  const kib = /^RssAnon:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  if (kib === undefined) throw new Error(`no RssAnon for ${pid}`);
  return Number(kib) * 1024;
}

/** An event whose JSON is about 2 MB: 20 images of results alone, 1,000 detections each. */
function largeEvent(i: number): Record<string, unknown> {
  const detections = Array.from({ length: 1000 }, (_, k) => ({ class: `part-${k % 50}`, x: 100 + k, y: 200, width: 30, height: 40, confidence: 0.5 + (k % 50) / 100 }));
  return smallEvent({ device_id: 'cam-1', custom_metadata: { i }, images: Array.from({ length: 20 }, () => ({ object_detections: detections })) });
}

/** Opens the stream from the first event on and never reads: the socket's receive buffer fills and stays full. */
function stalledClient(url: URL): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname, () => {
      socket.write(`GET /v2/events/stream?since=1970-01-01T00:00:00.000000Z HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`);
      socket.pause();
      resolve(socket);
    });
    socket.on('error', reject);
  });
}

t.test('four clients that never read: the store\'s memory stays bounded, and it keeps answering', async (t) => {
  const store = await launchStore({ DATA_DIR: tempDataDir(), CLEANUP_INTERVAL_SECONDS: '3600', HTTP_ENGINE: process.env.HTTP_ENGINE ?? '' });
  t.teardown(() => store.kill());
  let bytes = 0;
  for (let i = 0; i < EVENTS; i++) {
    const body = largeEvent(i);
    bytes += Buffer.byteLength(JSON.stringify(body));
    const created = await postJson(`${store.url}/v2/events`, body);
    if (created.status !== 201) throw new Error(`create answered ${created.status}: ${JSON.stringify(created.body).slice(0, 300)}`);
  }
  t.ok(bytes > 40 * MiB, `${(bytes / MiB).toFixed(0)} MiB of events stored`);
  const before = anonymousMemory(store.pid);
  const clients = await Promise.all(Array.from({ length: CLIENTS }, () => stalledClient(new URL(store.url))));
  t.teardown(() => clients.forEach((client) => client.destroy()));
  // Each client's catch-up runs until its socket stops taking bytes; then it waits for the client.
  await until('the catch-ups are under way', async () => (await fetch(`${store.url}/metrics`).then((res) => res.text())).includes(`edge_events_stream_subscribers ${CLIENTS}`));
  // Watched for 3 s: long enough for every catch-up to fill its client's socket and wait.
  let peak = 0;
  let slowest = 0;
  const deadline = Date.now() + 3000;
  while (Date.now() < deadline) {
    peak = Math.max(peak, anonymousMemory(store.pid));
    const started = performance.now();
    if ((await fetch(`${store.url}/health`)).status !== 200) throw new Error('/health did not answer 200');
    slowest = Math.max(slowest, performance.now() - started);
  }
  t.comment(`/health answered every time; slowest ${slowest.toFixed(0)} ms (a figure, not a bound: docs/RELIABILITY.md)`);
  const growth = peak - before;
  // Bound: per client STREAM_SUBSCRIBER_BUFFER_BYTES (4 MiB) of a step plus one event and what its
  // transport holds, and the garbage a busy machine's GC has not collected yet. A block keeps no
  // presented JSON (docs/STORAGE.md, "Blocks"): each event a step reads is decoded and rendered,
  // a string and a buffer of its size, and malloc keeps the freed buffers' pages (seen in all on
  // node:http: 39 to 50 MiB when LMDB kept the JSON, 74 to 124 MiB from blocks; on uWS 46 to 51).
  // The probe's unbounded catch-up held the whole 100-event page per client (+364 MiB).
  t.ok(growth < CLIENTS * 40 * MiB, `anonymous memory grew by ${(growth / MiB).toFixed(0)} MiB for ${CLIENTS} clients and ${(bytes / MiB).toFixed(0)} MiB of events`);
});

t.test('a page of another origin cannot open the stream', async (t) => {
  const store = await launchStore({ DATA_DIR: tempDataDir(), CLEANUP_INTERVAL_SECONDS: '3600', HTTP_ENGINE: process.env.HTTP_ENGINE ?? '' });
  t.teardown(() => store.kill());
  t.equal((await postJson(`${store.url}/v2/events`, smallEvent())).status, 201);
  const crossSite = await fetch(`${store.url}/v2/events/stream?since=1970-01-01T00:00:00.000000Z`, { headers: { Origin: 'http://evil.example', 'Sec-Fetch-Site': 'cross-site' } });
  t.equal(crossSite.status, 403, 'refused, as changes are');
  await crossSite.arrayBuffer();
  const sameOrigin = await fetch(`${store.url}/v2/events/stream`, { headers: { Origin: store.url, 'Sec-Fetch-Site': 'same-origin' } });
  t.equal(sameOrigin.status, 200, 'the store\'s own page still streams (the operator page)');
  await sameOrigin.body?.cancel();
});
