#!/usr/bin/env node
/**
 * Micro-measurement of one list page, in process (no HTTP): fills a temporary store with small
 * events (lib/payloads.js, the bench's ~1 KB events) through the store's own create path, then
 * times `listEventsBody` (the body of `GET /v2/events`) per query. Seconds to a minute, not the
 * bench's 24 minutes: fine on a shared machine, but state the load with the figures.
 *
 *   npm run build && node native-bench/list-page.js [events=100000] [pages=2000]
 *
 * STORE_DIST=<dir> measures another build (its `dist/src`, e.g. a copy of an older commit's), for
 * before/after figures taken minutes apart on the same machine.
 * Prints, per query, µs per page (median and mean of `pages` calls after a warm-up), the events
 * and bytes of one page.
 */
import fs from 'node:fs';
import { fillStore, loadAverage, loadModule, openBenchStore, timeAsyncCalls } from './lib/in-process-store.js';
import { seeded, smallEvent } from './lib/payloads.js';

const { listEventsBody } = await loadModule('events/read-events.js');

const events = Number(process.argv[2] ?? 100_000);
const pages = Number(process.argv[3] ?? 2000);
const QUERIES = [
  'limit=100',
  'device_id=cam-7&metadata_filter=line:B&limit=100',
  'metadata_filter=batch:77&limit=100',
  'device_id=cam-7&metadata_filter=temperature_c:gt:35&limit=100',
];

const bench = await openBenchStore('list-page');
const { store, config, dataDir } = bench;
try {
  const random = seeded(1);
  const fillSeconds = await fillStore(bench, events, (i) => smallEvent(random, i));
  console.log(`${events} events stored in ${fillSeconds.toFixed(1)} s; LMDB ${(store.lmdbBytes() / 1048576).toFixed(0)} MiB; load average ${loadAverage()}`);
  const limits = { maxResponseBytes: config.maxListResponseBytes, maxScanRecords: config.maxListScanRecords };
  for (const query of QUERIES) {
    const params = new URLSearchParams(query);
    const body = await listEventsBody(store, params, limits);
    const count = JSON.parse(body.toString()).count;
    const times = (await timeAsyncCalls(() => listEventsBody(store, params, limits), { warmUp: Math.min(200, pages), calls: pages })).map((ms) => ms * 1000);
    const mean = times.reduce((a, b) => a + b, 0) / times.length;
    console.log(`${query}: median ${times[times.length >> 1].toFixed(0)} µs, mean ${mean.toFixed(0)} µs per page; ${count} events, ${body.length} bytes`);
  }
  console.log(`load average after: ${loadAverage()}`);
} finally {
  await store.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
