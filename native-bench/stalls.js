#!/usr/bin/env node
/**
 * `/health` while one heavy request runs (docs/API.md, "Requests share the store"; RESULTS.stalls.md: an
 * export of 131 events of 260,000 detections held the HTTP thread for 22 s). Target: `/health`
 * p99 under 100 ms and max under 1 s while any valid request runs.
 *
 * The built store (`dist/src/cli.js serve`, or `--store-root DIR`'s, another checkout's build, for
 * a before/after) is started on a fresh DATA_DIR and given `--events` creates of `--detections`
 * detections each (images of MAX_PREDICTIONS_PER_IMAGE detections, no image files: the issue's
 * events; MAX_PREDICTIONS_PER_EVENT is raised to `--detections` so that a store of events from
 * before that bound can be measured too). A worker thread of this process asks `GET /health`
 * every 10 ms over one kept-alive connection (its own thread, so that this thread's reading of
 * large bodies does not delay its clock), while, one phase at a time:
 *   - create: the `--events` heavy creates, one after another;
 *   - export: `GET /v2/export?format=coco&q=class:c1` (every event matches), read to its end;
 *   - search: `GET /v2/events/search?q=class:c1 min-confidence:0.99` followed to its last page
 *     (no detection is that sure: every event's record is decoded and checked);
 *   - list: `GET /v2/events?metadata_filter=n:ne:-1&limit=100` followed to its last page (a filter
 *     no index covers: every record decoded), then `GET /v2/events?limit=100` (stored JSON only);
 *   - count: `GET /events/count/stats?device_id=cam-max`.
 * Per phase: /health p50, p99 and max (ms) and how many probes, the phase's wall time, the
 * store's CPU seconds (all its threads, /proc/<pid>/stat) and its HTTP thread's alone
 * (/proc/<pid>/task/<pid>/stat: what other requests waited behind, whatever the load), and the
 * 1-minute load average.
 *
 *   npm run build && node native-bench/stalls.js [--events 20] [--detections 100000] [--store-root DIR] [--profile DIR]
 *
 * `--profile DIR` runs the store under `node --cpu-prof`, its threads' profiles written to DIR at its
 * stop (profile-summary.js reads them).
 *
 * A few minutes on 2 cores (the creates take most of it). State the load with the figures
 * (printed); results in RESULTS.stalls.md.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { repoRoot, ServerProcess, statCpuSeconds } from './lib/store-process.js';

const { values: options } = parseArgs({
  options: {
    events: { type: 'string', default: '20' },
    detections: { type: 'string', default: '100000' },
    'store-root': { type: 'string', default: repoRoot },
    'probe-ms': { type: 'string', default: '10' },
    profile: { type: 'string' },
  },
});
const events = Number(options.events);
const detections = Number(options.detections);
const storeRoot = path.resolve(options['store-root']);
const PER_IMAGE = 10_000;

/** The /health prober (memory-peak.ts's, in a worker of its own). */
const PROBER = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const latencies = [];
let stopping = false;
parentPort.on('message', () => { stopping = true; });
const probe = () => new Promise((resolve) => {
  const began = performance.now();
  const req = http.get(workerData.url + '/health', { agent, timeout: 120000 }, (res) => {
    res.resume();
    res.on('end', () => { latencies.push(performance.now() - began); resolve(); });
  });
  req.on('error', () => { latencies.push(performance.now() - began); resolve(); });
});
(async () => {
  while (!stopping) {
    await probe();
    await new Promise((resolve) => setTimeout(resolve, workerData.probeMs));
  }
  agent.destroy();
  parentPort.postMessage(latencies);
})();
`;

/** One create body of `detections` detections in images of PER_IMAGE, custom_metadata n = i. */
function heavyBody(i) {
  const detection = (k) => ({ class: `c${k % 80}`, x: 100 + (k % 1700), y: 50 + (k % 1000), width: 40.5, height: 80.25, confidence: 0.875 });
  const images = [];
  for (let left = detections; left > 0; left -= PER_IMAGE) {
    images.push({ label: 'crowd', object_detections: Array.from({ length: Math.min(PER_IMAGE, left) }, (_, k) => detection(k)) });
  }
  return JSON.stringify({
    inference_timestamp: '2026-11-22T01:00:00Z', event_schema: 'custom', event_data: { value: 'heavy' },
    device_id: 'cam-max', custom_metadata: { n: i }, images,
  });
}

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'stalls-bench-'));
const server = await ServerProcess.start({
  command: process.execPath,
  args: [path.join(storeRoot, 'dist', 'src', 'cli.js'), 'serve'],
  cwd: storeRoot,
  env: { HOST: '127.0.0.1', LOG_LEVEL: 'warn', API_KEY: '', MAX_PREDICTIONS_PER_EVENT: String(Math.max(detections, 100_000)) },
}, dataDir, { nodeArgs: options.profile ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(options.profile)}`] : [] });
const cpu = () => statCpuSeconds(`/proc/${server.pid}/stat`);
/** CPU seconds of the store's main thread alone, the HTTP thread (/proc/<pid>/task/<pid>/stat). */
const httpCpu = () => statCpuSeconds(`/proc/${server.pid}/task/${server.pid}/stat`);

/** Runs `work` with the prober asking /health; returns the phase's row. */
async function phase(name, work) {
  const prober = new Worker(PROBER, { eval: true, workerData: { url: server.url, probeMs: Number(options['probe-ms']) } });
  const cpuBefore = cpu();
  const httpBefore = httpCpu();
  const began = performance.now();
  const closedBefore = closedByStore;
  const note = `${await work()}${closedByStore > closedBefore ? ` (${closedByStore - closedBefore} connection closed by the store, asked again)` : ''}`;
  const seconds = (performance.now() - began) / 1000;
  const cpuSeconds = cpu() - cpuBefore;
  const httpSeconds = httpCpu() - httpBefore;
  const latencies = await new Promise((resolve) => {
    prober.once('message', resolve);
    prober.postMessage('stop');
  });
  await prober.terminate();
  latencies.sort((a, b) => a - b);
  const row = {
    name, note, seconds, cpuSeconds, httpSeconds, probes: latencies.length,
    p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), max: latencies.at(-1), load: os.loadavg()[0],
  };
  console.log(`| ${name} | ${note} | ${seconds.toFixed(1)} s | ${cpuSeconds.toFixed(2)} s | ${httpSeconds.toFixed(2)} s | ${row.probes} | ${row.p50.toFixed(1)} | ${row.p99.toFixed(1)} | ${row.max.toFixed(1)} | ${row.load.toFixed(2)} |`);
  return row;
}

/** Connections the store closed under a page (seen on large pages under load, before this change too): each page asked again once. */
let closedByStore = 0;

/** GETs `route`, reading the body to its end (asking once more if the connection is closed under it); returns its bytes. */
async function get(route, again = true) {
  try {
    const response = await fetch(server.url + route);
    const body = Buffer.from(await response.arrayBuffer());
    if (response.status !== 200) throw new Error(`GET ${route}: ${response.status} ${body.toString().slice(0, 300)}`);
    return body;
  } catch (err) {
    if (!again || err.cause?.code !== 'UND_ERR_SOCKET') throw err;
    closedByStore++;
    return get(route, false);
  }
}

/** Follows a list or search to its last page; returns the pages and events read. */
async function follow(first, nextRoute) {
  let pages = 0;
  let found = 0;
  for (let route = first; route;) {
    const page = JSON.parse((await get(route)).toString());
    pages++;
    found += page.count;
    route = nextRoute(page);
  }
  return `${pages} pages, ${found} events`;
}

try {
  console.log(`store ${storeRoot} (node ${process.version}); ${events} events of ${detections} detections; load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  console.log('\n| Phase | Request | Wall | Store CPU | HTTP thread CPU | /health probes | p50 ms | p99 ms | max ms | load (1 min) |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  await phase('create', async () => {
    for (let i = 0; i < events; i++) {
      const response = await fetch(`${server.url}/v2/events`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: heavyBody(i) });
      const text = await response.text();
      if (response.status !== 201) throw new Error(`create ${i}: ${response.status} ${text.slice(0, 300)}`);
    }
    return `${events} x POST /v2/events (${(heavyBody(0).length / 1048576).toFixed(1)} MiB each)`;
  });
  await phase('export', async () => `GET /v2/export?format=coco&q=class:c1: ${(await get('/v2/export?format=coco&q=class:c1')).length} B zip`);
  const search = `/v2/events/search?q=${encodeURIComponent('class:c1 min-confidence:0.99')}&limit=100`;
  await phase('search', async () => `class:c1 min-confidence:0.99: ${await follow(search, (page) => page.next_cursor && `${search}&cursor=${page.next_cursor}`)}`);
  const filtered = '/v2/events?metadata_filter=n:ne:-1&limit=100';
  await phase('list, filter', async () => `metadata_filter=n:ne:-1: ${await follow(filtered, (page) => page.next_timestamp && `${filtered}&end_time=${encodeURIComponent(page.next_timestamp)}`)}`);
  const plain = '/v2/events?limit=100';
  await phase('list', async () => `limit=100: ${await follow(plain, (page) => page.next_timestamp && `${plain}&end_time=${encodeURIComponent(page.next_timestamp)}`)}`);
  await phase('count', async () => `device_id=cam-max: ${JSON.parse((await get('/events/count/stats?device_id=cam-max')).toString()).filtered_count}`);
  console.log(`\nstore CPU over its life ${server.usage().cpuSeconds.toFixed(1)} s; load average after ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
} finally {
  await server.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
