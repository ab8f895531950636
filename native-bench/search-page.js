#!/usr/bin/env node
/**
 * The event search and its index backfill, in process (no HTTP), on a store of `events` events
 * (default 1,000,000) made through the store's own create path: camera events with 1 to 4
 * detections of a skewed class mix (person in ~40% of events, forklift in ~1%), 8 devices,
 * 3 streams, a metadata line. Then:
 *
 * 1. Times `searchEventsBody` (the body of `GET /v2/events/search`, page of 100) per query:
 *    median and p99 of `pages` calls after a warm-up.
 * 2. Strips the search index entries (classes, streams, solutions) and its meta state, as a
 *    store written before them, reopens, and times the start-up backfill: events/s, and the
 *    latency of creates made while it runs (each backfill step holds the write lock <= 4 ms).
 *
 *   npm run build && node native-bench/search-page.js [events=1000000] [pages=500]
 *
 * Minutes for a million events: state the load with the figures (`os.loadavg()` is printed).
 */
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import { BENCH_STORE_OPTIONS, createOne, EventStore, fillStore, loadAverage, loadModule, openBenchStore, timeAsyncCalls } from './lib/in-process-store.js';
import { seeded } from './lib/payloads.js';

const { openDatabases } = await loadModule('store/index/lmdb-env.js');
const { searchEventsBody } = await loadModule('events/read-events.js');

const events = Number(process.argv[2] ?? 1_000_000);
const pages = Number(process.argv[3] ?? 500);
/** Classes with the share of events that hold at least one. */
const CLASSES = [['person', 0.4], ['car', 0.25], ['truck', 0.08], ['bicycle', 0.05], ['dog', 0.03], ['forklift', 0.01]];

/** One camera event: detections of the classes its dice give, at least one box. */
function cameraEvent(random, i) {
  const boxes = [];
  for (const [cls, share] of CLASSES) {
    if (random() >= share) continue;
    const n = 1 + Math.floor(random() * 3);
    for (let k = 0; k < n && boxes.length < 4; k++) {
      boxes.push({ class: cls, x: 100 + k * 30, y: 120, width: 40, height: 80, confidence: Number((0.3 + random() * 0.69).toFixed(3)) });
    }
  }
  if (boxes.length === 0) boxes.push({ class: 'background', x: 1, y: 1, width: 1, height: 1, confidence: 0.2 });
  return {
    solution: 'yard',
    workflow_id: 'detect',
    inference_timestamp: new Date(Date.UTC(2026, 10, 1) + i * 40).toISOString(),
    device_id: `cam-${1 + Math.floor(random() * 8)}`,
    stream_id: `rtsp-${1 + Math.floor(random() * 3)}`,
    event_schema: 'custom',
    event_data: { value: 'frame' },
    custom_metadata: { line: random() < 0.5 ? 'A' : 'B', frame: i },
    images: [{ label: 'annotated', objectDetections: boxes }],
  };
}

const QUERIES = [
  'class:person',
  'class:forklift',
  'class:person device:cam-3',
  'class:dog stream:rtsp-2',
  'class:car OR class:truck',
  'class:person>=2',
  'class:person min-confidence:0.9',
  'class:forklift meta.line:B',
  '-class:person device:cam-1',
];

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

const bench = await openBenchStore('search-page');
const { config, dataDir } = bench;
const limits = { maxResponseBytes: config.maxListResponseBytes, maxScanRecords: config.maxListScanRecords };
try {
  let { store } = bench;
  const random = seeded(7);
  const fillSeconds = await fillStore(bench, events, (i) => cameraEvent(random, i));
  console.log(`${events} events stored in ${fillSeconds.toFixed(1)} s; LMDB ${(store.lmdbBytes() / 1048576).toFixed(0)} MiB; load average ${loadAverage()}`);

  console.log('\n| Query (page of 100) | Events in page | Median | p99 |\n|---|---|---|---|');
  for (const q of QUERIES) {
    const params = new URLSearchParams({ q, limit: '100' });
    const body = await searchEventsBody(store, params, limits);
    const count = JSON.parse(body.toString()).count;
    const times = await timeAsyncCalls(() => searchEventsBody(store, params, limits), { warmUp: Math.min(100, pages), calls: pages });
    console.log(`| \`${q}\` | ${count} | ${percentile(times, 0.5).toFixed(2)} ms | ${percentile(times, 0.99).toFixed(2)} ms |`);
  }
  console.log(`load average after the queries: ${loadAverage()}`);
  const baseline = [];
  for (let k = 0; k < 200; k++) {
    const t0 = performance.now();
    await createOne({ store, config }, cameraEvent(random, events + k));
    baseline.push(performance.now() - t0);
  }
  baseline.sort((a, b) => a - b);
  console.log(`creates one at a time, no backfill: p50 ${percentile(baseline, 0.5).toFixed(1)} ms, p99 ${percentile(baseline, 0.99).toFixed(1)} ms`);
  await store.close();

  // As a store written before the search index: its entries and its meta state removed.
  const stripStarted = performance.now();
  const dbs = openDatabases(dataDir);
  let removed = 0;
  for (const code of ['c', 't', 'o']) {
    for (;;) {
      const keys = [...dbs.index.getKeys({ start: [code], end: [`${code}\u0000`], limit: 50_000 })];
      if (keys.length === 0) break;
      await dbs.root.transaction(() => {
        for (const key of keys) dbs.index.removeSync(key);
      });
      removed += keys.length;
    }
  }
  await dbs.meta.remove('searchIndex');
  await dbs.root.close();
  console.log(`\nstripped ${removed} search index entries in ${((performance.now() - stripStarted) / 1000).toFixed(1)} s`);

  // Reopen: the backfill runs while creates go on, one at a time, timed.
  const reopened = performance.now();
  let lastProgress = 0;
  store = await EventStore.open(dataDir, {
    ...BENCH_STORE_OPTIONS,
    onSearchIndexProgress: (progress) => {
      lastProgress = progress.indexed;
    },
  });
  const openMs = performance.now() - reopened;
  const createTimes = [];
  let i = events + 200;
  while (!store.searchIndexReady) {
    const t0 = performance.now();
    await createOne({ store, config }, cameraEvent(random, i++));
    createTimes.push(performance.now() - t0);
  }
  const seconds = (performance.now() - reopened) / 1000;
  createTimes.sort((a, b) => a - b);
  console.log(`backfill of ${events + 200} events: ${seconds.toFixed(1)} s (open ${openMs.toFixed(0)} ms), ${((events + 200) / seconds).toFixed(0)} events/s; `
    + `indexed ${lastProgress} by its last report; ${createTimes.length} creates meanwhile, one at a time: p50 ${percentile(createTimes, 0.5).toFixed(1)} ms, `
    + `p99 ${percentile(createTimes, 0.99).toFixed(1)} ms, max ${createTimes[createTimes.length - 1]?.toFixed(1)} ms; load average ${loadAverage()}`);
  const params = new URLSearchParams({ q: 'class:person', limit: '100' });
  const check = JSON.parse((await searchEventsBody(store, params, limits)).toString());
  console.log(`after the backfill, class:person answers ${check.count} events from the index`);
  await store.close();
} finally {
  fs.rmSync(dataDir, { recursive: true, force: true });
}
