#!/usr/bin/env node
/**
 * Lists, searches and counts on a live box (issue 59's "lists on a live box pay for its head"),
 * in process (no HTTP): a temporary store gets `base` small events checkpointed into LMDB, then
 * `head` more that stay in the head (checkpoints 10 minutes apart, and 19,500 is under the
 * head's 20,000-create trigger: docs/STORAGE.md, "When a checkpoint runs"). Each query is timed
 * with those creates in the head, then again once a checkpoint has put them into LMDB, so the
 * store holds the same events both times; the ratio is what the head costs a read.
 *
 *   npm run build && node native-bench/head-lists.js [base=100000] [head=19500] [calls=300]
 *
 * STORE_DIST=<dir> measures another build (its `dist/src`), for before/after figures.
 * Prints, per query, the median and p95 of `calls` calls (after a warm-up), with the head and
 * without it, and their ratio.
 */
import fs from 'node:fs';
import { BENCH_STORE_OPTIONS, EventStore, loadAverage, loadModule, timeAsyncCalls } from './lib/in-process-store.js';
import { seeded, smallEvent } from './lib/payloads.js';

const { loadConfig } = await loadModule('config.js');
const { createEvent } = await loadModule('events/create-event.js');
const { countStatsResponse, listEventsBody, searchEventsBody } = await loadModule('events/read-events.js');

const base = Number(process.argv[2] ?? 100_000);
const headCreates = Number(process.argv[3] ?? 19_500);
const calls = Number(process.argv[4] ?? 300);

/** The queries of issue 59's probe: filters that match nothing, a device, a search, the count stats. */
const QUERIES = [
  { name: 'list device_id=nope', run: (s, l) => listEventsBody(s, new URLSearchParams('device_id=nope&limit=100'), l) },
  { name: 'list external_id=nope', run: (s, l) => listEventsBody(s, new URLSearchParams('external_id=nope&limit=100'), l) },
  { name: 'list device_id=cam-3', run: (s, l) => listEventsBody(s, new URLSearchParams('device_id=cam-3&limit=100'), l) },
  { name: 'list device_id=cam-3, line B', run: (s, l) => listEventsBody(s, new URLSearchParams('device_id=cam-3&metadata_filter=line:B&limit=100'), l) },
  { name: 'search device:cam-3 class:defective', run: (s, l) => searchEventsBody(s, new URLSearchParams('q=device:cam-3 class:defective&limit=100'), l) },
  { name: 'count stats device_id=cam-3', run: (s) => countStatsResponse(s, new URLSearchParams('device_id=cam-3')) },
];

const dataDir = fs.mkdtempSync(`${process.env.TMPDIR ?? '/tmp'}/head-lists-`);
const config = loadConfig({ DATA_DIR: dataDir });
const store = await EventStore.open(dataDir, { ...BENCH_STORE_OPTIONS, checkpointMs: 600_000, checkpointMaxMs: 600_000 });
const limits = { maxResponseBytes: config.maxListResponseBytes, maxScanRecords: config.maxListScanRecords };

/** Creates events from..to-1, 500 at a time, as POST /v2/events does. */
async function fill(random, from, to) {
  for (let i = from; i < to; i += 500) {
    const batch = Array.from({ length: Math.min(500, to - i) }, (_, j) => smallEvent(random, i + j));
    await Promise.all(batch.map((body) => createEvent(store, config, body)));
  }
}

/** Median and p95 (µs) of each query's calls. */
async function timeQueries() {
  const rows = [];
  for (const { run } of QUERIES) {
    const times = (await timeAsyncCalls(() => run(store, limits), { warmUp: Math.min(50, calls), calls })).map((ms) => ms * 1000);
    rows.push({ median: times[times.length >> 1], p95: times[Math.floor(times.length * 0.95)] });
  }
  return rows;
}

try {
  const random = seeded(7);
  await fill(random, 0, base);
  await store.checkpointed();
  await fill(random, base, base + headCreates);
  const bounds = store.headBounds();
  if (!bounds) throw new Error('a checkpoint ran: the head is empty');
  console.log(`${base} events checkpointed into LMDB, then ${headCreates} into the head; load average ${loadAverage()}`);
  await timeQueries(); // a pass untimed: the fill's garbage is collected, and every query warmed up, before either set of figures
  const withHead = await timeQueries();
  await store.checkpointed();
  if (store.headBounds()) throw new Error('the checkpoint left creates in the head');
  console.log(`checkpointed, the head empty; load average ${loadAverage()}`);
  const without = await timeQueries();
  console.log('| query | with the head, median (p95) | empty head, median (p95) | ratio of medians |');
  console.log('|---|---:|---:|---:|');
  QUERIES.forEach(({ name }, i) => {
    const a = withHead[i];
    const b = without[i];
    console.log(`| ${name} | ${a.median.toFixed(0)} µs (${a.p95.toFixed(0)}) | ${b.median.toFixed(0)} µs (${b.p95.toFixed(0)}) | ${(a.median / b.median).toFixed(2)}x |`);
  });
  console.log(`load average after: ${loadAverage()}`);
} finally {
  await store.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
