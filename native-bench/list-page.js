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
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { seeded, smallEvent } from './lib/payloads.js';

const dist = process.env.STORE_DIST ? pathToFileURL(`${path.resolve(process.env.STORE_DIST)}/`) : new URL('../dist/src/', import.meta.url);
const load = (module) => import(new URL(module, dist).href);
const { loadConfig } = await load('config.js');
const { EventStore } = await load('store/event-store.js');
const { createEvent } = await load('events/create-event.js');
const { listEventsBody } = await load('events/read-events.js');
const present = await load('events/present.js');
const codec = await load('store/record-codec.js');

const events = Number(process.argv[2] ?? 100_000);
const pages = Number(process.argv[3] ?? 2000);
const QUERIES = [
  'limit=100',
  'device_id=cam-7&metadata_filter=line:B&limit=100',
  'metadata_filter=batch:77&limit=100',
  'device_id=cam-7&metadata_filter=temperature_c:gt:35&limit=100',
];

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'list-page-'));
const config = loadConfig({ DATA_DIR: dataDir });
// Builds with stored JSON (record layout 3) need the presenter set, as serve.ts does.
codec.setRecordPresenter?.(present.presentEventJson);
const store = await EventStore.open(dataDir, { sinks: [] });
try {
  const random = seeded(1);
  const started = performance.now();
  const CONCURRENT = 500;
  for (let i = 0; i < events; i += CONCURRENT) {
    const batch = Array.from({ length: Math.min(CONCURRENT, events - i) }, (_, j) => smallEvent(random, i + j));
    await Promise.all(batch.map((body) => createEvent(store, config, body)));
  }
  const fillSeconds = (performance.now() - started) / 1000;
  console.log(`${events} events stored in ${fillSeconds.toFixed(1)} s; LMDB ${(store.lmdbBytes() / 1048576).toFixed(0)} MiB; load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  const limits = { maxResponseBytes: config.maxListResponseBytes, maxScanRecords: config.maxListScanRecords };
  for (const query of QUERIES) {
    const params = new URLSearchParams(query);
    const body = listEventsBody(store, params, limits);
    const count = JSON.parse(body.toString()).count;
    for (let i = 0; i < Math.min(200, pages); i++) listEventsBody(store, params, limits);
    const times = [];
    for (let i = 0; i < pages; i++) {
      const t0 = performance.now();
      listEventsBody(store, params, limits);
      times.push((performance.now() - t0) * 1000);
    }
    times.sort((a, b) => a - b);
    const mean = times.reduce((a, b) => a + b, 0) / times.length;
    console.log(`${query}: median ${times[times.length >> 1].toFixed(0)} µs, mean ${mean.toFixed(0)} µs per page; ${count} events, ${body.length} bytes`);
  }
  console.log(`load average after: ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
} finally {
  await store.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
