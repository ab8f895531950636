#!/usr/bin/env node
/**
 * The edge-event-store bench: starts the store from ../dist itself (fresh DATA_DIR under
 * .data/, LOG_LEVEL=warn), drives it with wrk, and writes RESULTS.md.
 *
 *   node bench.js [--quick] [--profile]
 *
 * Workloads (each on its own store process, so CPU seconds and peak RSS are its own):
 *   1. durable-acked ingest of small events (~0.85 KB JSON, no image), 50 connections
 *   2. ingest of events carrying one JPEG (rocket.jpg, 41,501 bytes), 50 connections
 *   3. preload of 1,000,000 small events (100,000 with --quick) at full speed
 *   4. list queries with metadata filters over the preloaded store (restarted on it)
 * --quick: shorter runs and a preload of 100k events or 45 s (under 2 minutes); writes RESULTS.quick.md.
 * --profile: runs every store under `node --cpu-prof` and prints where its CPU went.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { machineBusySeconds, machineDetails, waitForQuiet } from './lib/machine.js';
import { IMAGE_FIXTURE, writeImageEvents, writeQueries, writeSmallEvents } from './lib/payloads.js';
import { renderResults } from './lib/report.js';
import { repoRoot, StoreProcess } from './lib/store-process.js';
import { runWrk } from './lib/wrk.js';
import { summariseProfile } from './profile-summary.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const quick = process.argv.includes('--quick');
const profile = process.argv.includes('--profile');
const plan = quick
  ? { warmupSeconds: 1, ingestSeconds: 6, preloadEvents: 100_000, preloadMaxSeconds: 45, querySeconds: 4, quietWaitSeconds: 3 }
  : { warmupSeconds: 5, ingestSeconds: 30, preloadEvents: 1_000_000, preloadMaxSeconds: 3600, querySeconds: 15, quietWaitSeconds: 60 };
const CONNECTIONS = 50;
const workDir = path.join(here, '.data');

const log = (message) => console.log(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}`);

/**
 * Starts a store, once the machine is quiet (other work on the box skews the figures);
 * under --profile its CPU profile goes to .data/profiles/<name>.
 */
async function startStore(name, dataDir) {
  if (!(await waitForQuiet({ timeoutSeconds: plan.quietWaitSeconds }))) log(`${name}: the machine stayed busy with other work; measuring anyway`);
  const profileDir = profile ? path.join(workDir, 'profiles', name) : undefined;
  const store = await StoreProcess.start(dataDir, { profileDir });
  log(`${name}: store pid ${store.pid} at ${store.url}`);
  return Object.assign(store, { profileDir });
}

/** Stops a store gracefully and, under --profile, prints the top of its CPU profile. */
async function stopStore(store) {
  const stopped = await store.stop();
  if (stopped.code !== 0) throw new Error(`store did not stop gracefully: ${JSON.stringify(stopped)}\n${store.output}`);
  if (store.profileDir) {
    for (const file of fs.readdirSync(store.profileDir).filter((f) => f.endsWith('.cpuprofile'))) {
      const { totalMs, rows } = summariseProfile(path.join(store.profileDir, file));
      log(`profile ${file} (self time, ${(totalMs / 1000).toFixed(1)} s sampled):`);
      for (const r of rows.slice(0, 15)) console.log(`    ${((100 * r.selfMs) / totalMs).toFixed(1).padStart(5)}%  ${r.name}`);
    }
  }
  return stopped;
}

/**
 * One measured wrk run against `store`: the wrk figures plus the server's CPU seconds, the wrk
 * process's and everything else's on the machine over the run.
 * @param {() => boolean | Promise<boolean>} [until] polled every 250 ms; the run stops when true
 */
async function measure(store, load, until) {
  const before = store.usage();
  const busy0 = machineBusySeconds();
  const run = runWrk({ url: store.url, ...load });
  let polling = Boolean(until);
  const poller = polling && (async () => {
    while (polling) {
      await new Promise((r) => setTimeout(r, 250));
      if (polling && (await until())) break;
    }
  })().finally(run.stop);
  const wrk = await run.result.finally(() => (polling = false));
  await poller;
  const after = store.usage();
  const serverCpuSeconds = after.cpuSeconds - before.cpuSeconds;
  const otherCpuSeconds = Math.max(0, machineBusySeconds() - busy0 - serverCpuSeconds - wrk.wrkCpuSeconds);
  if (wrk.errors > 0) throw new Error(`${wrk.errors} requests failed (socket errors, timeouts or HTTP >= 400)`);
  return {
    ...wrk,
    connections: load.connections,
    serverCpuSeconds,
    mainThreadCpuSeconds: after.mainThreadCpuSeconds - before.mainThreadCpuSeconds,
    writtenBytes: after.writtenBytes - before.writtenBytes,
    otherCpuSeconds,
  };
}

/** Ingest at 50 connections for plan.ingestSeconds on a fresh store; checks every ack is stored. */
async function ingest(name, requests) {
  const dataDir = path.join(workDir, `store-${name}`);
  const store = await startStore(name, dataDir);
  const load = { file: requests.file, mode: 'post', connections: CONNECTIONS };
  const warm = await runWrk({ url: store.url, ...load, seconds: plan.warmupSeconds }).result;
  const run = await measure(store, { ...load, seconds: plan.ingestSeconds });
  const stored = await store.eventCount();
  if (stored < warm.requests + run.requests) throw new Error(`${name}: ${warm.requests + run.requests} acknowledged, ${stored} stored`);
  const { peakRssBytes } = store.usage();
  const stopped = await stopStore(store);
  log(`${name}: ${run.rate.toFixed(0)} events/s, p50 ${run.p50Ms.toFixed(2)} ms, p99 ${run.p99Ms.toFixed(2)} ms`);
  return { ...run, peakRssBytes, stored, stopMs: stopped.ms, diskBytes: duBytes(dataDir) };
}

/** Fills a fresh store with plan.preloadEvents small events at full speed (stops at plan.preloadMaxSeconds). */
async function preload(requests) {
  const dataDir = path.join(workDir, 'store-preloaded');
  const store = await startStore('preload', dataDir);
  let stored = 0;
  const run = await measure(
    store,
    { file: requests.file, mode: 'post', connections: CONNECTIONS, seconds: plan.preloadMaxSeconds },
    async () => (stored = await store.eventCount()) >= plan.preloadEvents,
  );
  stored = await store.eventCount();
  const { peakRssBytes } = store.usage();
  const stopped = await stopStore(store);
  log(`preload: ${stored} events at ${run.rate.toFixed(0)} events/s`);
  return { ...run, peakRssBytes, stored, stopMs: stopped.ms, dataDir, diskBytes: duBytes(dataDir) };
}

/** Sanity check: the example query returns events that all match its filters; returns how many. */
async function checkQuery(store, example) {
  const list = await store.getJson(example);
  const params = new URL(example, store.url).searchParams;
  const device = params.get('device_id');
  const parts = params.get('metadata_filter').split(':'); // key:value or key:op:value
  const [key, value] = [parts[0], parts[parts.length - 1]];
  const matches = (stored) => (parts[1] === 'gt' ? Number(stored) > Number(value) : String(stored) === value);
  const ok = list.events.every((e) => (device === null || e.device_id === device) && matches(e.custom_metadata[key]));
  if (!ok || list.count === 0) throw new Error(`${example} returned ${list.count} events, matching: ${ok}`);
  return list.count;
}

/** List queries over the preloaded store: each filter at 1 connection, the first also at 10. */
async function queries(dataDir, files) {
  const store = await startStore('queries', dataDir);
  const runs = [
    { name: 'deviceAndLine', connections: 1, target: true },
    { name: 'batchOnly', connections: 1, target: true },
    { name: 'deviceAndRange', connections: 1, target: false },
    { name: 'deviceAndLine', connections: 10, target: false },
  ];
  const results = [];
  for (const { name, connections, target } of runs) {
    const { file, example } = files[name];
    const pageSize = await checkQuery(store, example);
    await runWrk({ url: store.url, file, mode: 'get', connections, seconds: plan.warmupSeconds }).result;
    const run = await measure(store, { file, mode: 'get', connections, seconds: plan.querySeconds });
    log(`query ${example} x${connections}: p50 ${run.p50Ms.toFixed(2)} ms, p99 ${run.p99Ms.toFixed(2)} ms, ${run.rate.toFixed(0)}/s`);
    results.push({ ...run, name, example, target, pageSize });
  }
  const { peakRssBytes } = store.usage();
  const stopped = await stopStore(store);
  return { runs: results, peakRssBytes, stopMs: stopped.ms };
}

function duBytes(dir) {
  let total = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += fs.statSync(path.join(entry.parentPath ?? entry.path, entry.name)).blocks * 512;
  }
  return total;
}

async function main() {
  const started = Date.now();
  fs.rmSync(workDir, { recursive: true, force: true });
  fs.mkdirSync(path.join(workDir, 'requests'), { recursive: true });
  const machine = machineDetails(workDir, repoRoot);
  log(`${quick ? 'quick' : 'full'} run on ${machine.cpu}, ${machine.cores} cores; store: ${machine.store}`);

  const requestsDir = path.join(workDir, 'requests');
  const small = writeSmallEvents(requestsDir);
  const images = writeImageEvents(requestsDir);
  const queryFiles = writeQueries(requestsDir);

  const smallIngest = await ingest('small', small);
  const imageIngest = await ingest('image', images);
  fs.rmSync(path.join(workDir, 'store-image'), { recursive: true, force: true }); // gigabytes of JPEGs
  const preloaded = await preload(small);
  const queryResults = await queries(preloaded.dataDir, queryFiles);

  const results = {
    quick, plan, machine, connections: CONNECTIONS, imageFixture: IMAGE_FIXTURE,
    payloads: { small, images }, smallIngest, imageIngest, preloaded, queries: queryResults,
    minutes: (Date.now() - started) / 60000,
  };
  const out = path.join(here, quick ? 'RESULTS.quick.md' : 'RESULTS.md');
  fs.writeFileSync(out, renderResults(results));
  fs.writeFileSync(path.join(workDir, 'results.json'), JSON.stringify(results, null, 2));
  log(`wrote ${out} in ${results.minutes.toFixed(1)} min`);
}

// Exit (and so kill the stores and wrk, see StoreProcess and runWrk) when interrupted.
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(1));

main().catch((err) => {
  console.error(`bench failed: ${err.stack ?? err}`);
  process.exit(1);
});
