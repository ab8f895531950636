#!/usr/bin/env node
/**
 * The side-by-side bench: starts edge-event-store and each peer (lib/systems.js,
 * peers/README.md) in turn on the same port with a fresh data directory, drives them with the
 * same wrk scripts at fixed connection counts, measures the machine's own ceilings in the same
 * run, and writes RESULTS.md.
 *
 *   node bench.js [--quick] [--profile] [--systems=edge-event-store,fastify-sqlite] [--engines=uws,node]
 *
 * Workloads, for every system:
 *   1. ingest of small events (~0.9 KB JSON, no image), 50 connections, durable before the 201
 *   2. the same with varied index keys: 1,000 devices, an external id unique to each request,
 *      custom_metadata values from large ranges (lib/payloads.js, variedEvent)
 *   3. ingest of events carrying one JPEG (rocket.jpg, 41,501 bytes), 50 connections
 *   4. filtered lists over 1,000,000 stored events (edge-event-store preloads through its API;
 *      the peers are bulk-loaded by peers/bulk-load.js), 1 and 10 connections
 *   5. start-up to a 200 from /health with those 1,000,000 events stored
 *   6. Range requests of 1 MiB at seeded offsets into a 100 MB video, 10 connections
 *   7. restart after an unclean stop: kill -9 of the whole server during small-event ingest at
 *      50 connections, then start-up to a 200 from /health over what it left (median of 3)
 * and for edge-event-store only: a 1 GiB streamed upload and 20 concurrent 50 MB uploads
 * (uploads.js). Ceilings: lib/ceilings.js (hello-world HTTP; the store's create path with no
 * storage, ceilings/no-storage.js, for small and image events; the durable floor,
 * ceilings/durable-floor.js, the body appended and fdatasync'd and nothing else, for small and
 * image events, to which every system's ingest rate, CPU and bytes per event are compared; CPU)
 * and the disk probe of lib/machine.js.
 * edge-event-store runs on each of its HTTP engines (docs/OPERATIONS.md, "HTTP engines"): native
 * uWebSockets.js (`edge-event-store`) and node:http (`edge-event-store-node`), each with its own
 * HTTP and no-storage ceilings and uploads; RESULTS.md compares them in "HTTP engines". --engines=uws: only one.
 * --quick: shorter runs, a 20,000-event list store, no waiting for a quiet machine (a few
 * minutes); writes RESULTS.quick.md. --profile: edge-event-store runs under `node --cpu-prof`
 * and the top of each profile is printed. --systems=a,b: only those systems (edge-event-store
 * first; at least one peer), for working on one of them.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuCeiling, durableFloorCeiling, httpCeiling, noStorageCeiling } from './lib/ceilings.js';
import { machineBusySeconds, machineDetails, waitForQuiet } from './lib/machine.js';
import { IMAGE_FIXTURE, writeImageEvents, writeQueries, writeRangeRequests, writeSmallEvents, writeVariedEvents } from './lib/payloads.js';
import { renderResults } from './lib/report.js';
import { ENGINES, enginesToBench, repoRoot, ServerProcess } from './lib/store-process.js';
import { SYSTEMS } from './lib/systems.js';
import { runWrk } from './lib/wrk.js';
import { bulkLoad } from './peers/bulk-load.js';
import { summariseProfile } from './profile-summary.js';
import { runUploadBench, writeVideoFile } from './uploads.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const quick = process.argv.includes('--quick');
const profile = process.argv.includes('--profile');
const plan = quick
  ? { warmupSeconds: 1, ingestSeconds: 4, listEvents: 20_000, listSeconds: 2, rangeSeconds: 2, ceilingSeconds: 3, quietWaitSeconds: 0, starts: 1, listRuns: 2, crashes: 1, crashAfterSeconds: 2 }
  : { warmupSeconds: 5, ingestSeconds: 30, listEvents: 1_000_000, listSeconds: 15, rangeSeconds: 15, ceilingSeconds: 15, quietWaitSeconds: 60, starts: 3, listRuns: 3, crashes: 3, crashAfterSeconds: 4 };
const only = process.argv.find((arg) => arg.startsWith('--systems='))?.slice('--systems='.length).split(',');
const log = (message) => console.log(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}`);
const { engines, note: engineNote } = await enginesToBench(process.argv.find((arg) => arg.startsWith('--engines='))?.slice('--engines='.length).split(','), log);
const systemsToRun = SYSTEMS.filter((s) => (!only || only.includes(s.name)) && (!s.engine || engines.includes(s.engine)));
const storeEngines = ENGINES.filter((engine) => systemsToRun.some((s) => s.engine === engine));
if (storeEngines.length === 0) throw new Error('--systems and --engines leave no edge-event-store to measure');
const PORT = Number(process.env.BENCH_PORT ?? 18001);
const INGEST_CONNECTIONS = 50;
const RANGE_CONNECTIONS = 10;
const VIDEO_BYTES = 100_000_000;
const workDir = path.join(here, '.data');

/**
 * Starts `system` on PORT over `dataDir` once the machine is quiet (other work skews every
 * figure); edge-event-store under --profile writes its CPU profile to .data/profiles/<label>.
 */
async function start(system, dataDir, label) {
  if (plan.quietWaitSeconds > 0 && !(await waitForQuiet({ timeoutSeconds: plan.quietWaitSeconds }))) {
    log(`${system.name} ${label}: the machine stayed busy with other work; measuring anyway`);
  }
  const profileDir = profile && system.preload === 'http' ? path.join(workDir, 'profiles', label) : undefined;
  const nodeArgs = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
  const running = await ServerProcess.start(system.server, dataDir, { port: PORT, nodeArgs });
  return Object.assign(running, { profileDir });
}

/** Stops a server gracefully and, under --profile, prints the top of its CPU profile. */
async function stop(running) {
  const stopped = await running.stop();
  if (stopped.code !== 0) throw new Error(`server did not stop gracefully: ${JSON.stringify(stopped)}\n${running.output}`);
  for (const file of running.profileDir ? fs.readdirSync(running.profileDir).filter((f) => f.endsWith('.cpuprofile')) : []) {
    const { totalMs, rows } = summariseProfile(path.join(running.profileDir, file));
    log(`profile ${file} (self time, ${(totalMs / 1000).toFixed(1)} s sampled):`);
    for (const r of rows.slice(0, 15)) console.log(`    ${((100 * r.selfMs) / totalMs).toFixed(1).padStart(5)}%  ${r.name}`);
  }
  return stopped;
}

/**
 * One measured wrk run: the wrk figures plus the server's CPU seconds, and what the rest of the
 * machine used over the run.
 * @param {() => boolean | Promise<boolean>} [until] polled every 250 ms; the run stops when true
 */
async function measure(running, load, until) {
  const before = running.usage();
  const busy0 = machineBusySeconds();
  const run = runWrk({ url: running.url, ...load });
  let polling = Boolean(until);
  const poller = polling && (async () => {
    while (polling) {
      await new Promise((r) => setTimeout(r, 250));
      if (polling && (await until())) break;
    }
  })().finally(run.stop);
  const wrk = await run.result.finally(() => (polling = false));
  await poller;
  const after = running.usage();
  const serverCpuSeconds = after.cpuSeconds - before.cpuSeconds;
  const otherCpuSeconds = Math.max(0, machineBusySeconds() - busy0 - serverCpuSeconds - wrk.wrkCpuSeconds);
  // A request unanswered after 10 s is a result (reported, left out of the latencies); any
  // other failure (HTTP >= 400, a refused or broken connection) stops the bench.
  const { timeout: timeouts, ...failures } = wrk.errorsByKind;
  if (Object.values(failures).some((n) => n > 0)) throw new Error(`requests failed: ${JSON.stringify(failures)} (status: HTTP >= 400)`);
  return {
    ...wrk,
    connections: load.connections,
    timeouts,
    serverCpuSeconds,
    mainThreadCpuSeconds: after.mainThreadCpuSeconds - before.mainThreadCpuSeconds,
    writtenBytes: after.writtenBytes - before.writtenBytes,
    otherCpuSeconds,
  };
}

/** Ingest at 50 connections on a fresh data directory; checks that every ack is stored. */
async function ingest(system, kind, requests) {
  const dataDir = path.join(workDir, `${system.name}-${kind}`);
  const running = await start(system, dataDir, `${system.name}-${kind}`);
  const load = { file: requests.file, mode: requests.mode ?? 'post', connections: INGEST_CONNECTIONS };
  const warm = await runWrk({ url: running.url, ...load, seconds: plan.warmupSeconds }).result;
  const run = await measure(running, { ...load, seconds: plan.ingestSeconds });
  const stored = await running.eventCount();
  if (stored < warm.requests + run.requests) throw new Error(`${system.name} ${kind}: ${warm.requests + run.requests} acknowledged, ${stored} stored`);
  const { peakRssBytes } = running.usage();
  await stop(running);
  const diskBytes = duBytes(dataDir);
  fs.rmSync(dataDir, { recursive: true, force: true });
  log(`${system.name} ${kind} ingest: ${run.rate.toFixed(0)} events/s, p50 ${run.p50Ms.toFixed(2)} ms, p99 ${run.p99Ms.toFixed(2)} ms`);
  return { ...run, peakRssBytes, stored, diskBytes };
}

/**
 * The list store of edge-event-store: plan.listEvents small events through POST /v2/events at
 * full speed, on the bench's own data directory.
 */
async function preloadThroughApi(system, dataDir, requests) {
  const running = await start(system, dataDir, `${system.name}-preload`);
  let stored = 0;
  const run = await measure(
    running,
    { file: requests.file, mode: 'post', connections: INGEST_CONNECTIONS, seconds: 3600 },
    async () => (stored = await running.eventCount()) >= plan.listEvents,
  );
  stored = await running.eventCount();
  await stop(running);
  log(`${system.name}: preloaded ${stored} events through its API at ${run.rate.toFixed(0)} events/s`);
  return { how: 'POST /v2/events, 50 connections', stored, seconds: run.seconds, rate: run.rate };
}

/** The peers' list store: bulk-loaded once, copied for each peer. */
let peerTemplate;
function preloadPeer(dataDir) {
  if (!peerTemplate) {
    const templateDir = path.join(workDir, 'peer-template');
    const loaded = bulkLoad(templateDir, plan.listEvents);
    log(`peers: bulk-loaded ${loaded.count} events in ${loaded.seconds.toFixed(1)} s`);
    peerTemplate = { dir: templateDir, ...loaded };
  }
  fs.cpSync(peerTemplate.dir, dataDir, { recursive: true });
  return { how: 'peers/bulk-load.js (10,000-row transactions)', stored: peerTemplate.count, seconds: peerTemplate.seconds, rate: peerTemplate.count / peerTemplate.seconds };
}

/** Sanity check: the example query returns events that all match its filters; returns how many. */
async function checkQuery(running, example) {
  const list = await running.getJson(example);
  const params = new URL(example, running.url).searchParams;
  const device = params.get('device_id');
  const [key, value] = params.get('metadata_filter').split(':');
  const ok = list.events.every((e) => (device === null || e.device_id === device) && String(e.custom_metadata[key]) === value);
  if (!ok || list.count === 0) throw new Error(`${example} returned ${list.count} events, matching: ${ok}`);
  return list.count;
}

/**
 * Filtered lists and start-up over the list store: the first start is timed, the queries run,
 * then the system is restarted plan.starts - 1 more times; start-up is the median.
 */
async function listsAndStartup(system, requests, queryFiles) {
  const dataDir = path.join(workDir, `${system.name}-list`);
  const preload = system.preload === 'http' ? await preloadThroughApi(system, dataDir, requests) : preloadPeer(dataDir);
  const running = await start(system, dataDir, `${system.name}-list`);
  const startMs = [running.startMs];
  const stored = await running.eventCount();
  const runs = [
    { name: 'deviceAndLine', connections: 1 },
    { name: 'batchOnly', connections: 1 },
    { name: 'deviceAndLine', connections: 10 },
  ].slice(0, plan.listRuns);
  const results = [];
  for (const { name, connections } of runs) {
    const { file, example } = queryFiles[name];
    const pageSize = await checkQuery(running, example);
    await runWrk({ url: running.url, file, mode: 'get', connections, seconds: plan.warmupSeconds }).result;
    const run = await measure(running, { file, mode: 'get', connections, seconds: plan.listSeconds });
    log(`${system.name} list ${name} x${connections}: ${run.rate.toFixed(0)}/s, p50 ${run.p50Ms.toFixed(2)} ms, p99 ${run.p99Ms.toFixed(2)} ms`);
    results.push({ ...run, name, example, pageSize });
  }
  const { peakRssBytes } = running.usage();
  await stop(running);
  for (let i = 1; i < plan.starts; i++) {
    const again = await start(system, dataDir, `${system.name}-restart-${i}`);
    startMs.push(again.startMs);
    await stop(again);
  }
  const diskBytes = duBytes(dataDir);
  fs.rmSync(dataDir, { recursive: true, force: true });
  startMs.sort((a, b) => a - b);
  log(`${system.name}: start-up with ${stored} events stored ${startMs.map((ms) => ms.toFixed(0)).join(', ')} ms`);
  return { preload, stored, runs: results, peakRssBytes, diskBytes, startMs: startMs[Math.floor(startMs.length / 2)], starts: startMs.length };
}

/**
 * Restarts after an unclean stop at full ingest: small events at 50 connections, the server's
 * whole process tree killed with SIGKILL plan.crashAfterSeconds into the load, started again at
 * once over the same data directory (no wait for a quiet machine: the restart is the figure),
 * plan.crashes times in a row. Checks after each restart that every acknowledged event is
 * stored. edge-event-store runs these starts at LOG_LEVEL=info, so its `store opened` line
 * says how many creates it replayed from its log.
 * @returns {{ restartMs: number, restarts: number[], replayed: number[], acknowledged: number }}
 *   restartMs is the median of `restarts` (spawn to the first 200 of /health, ms)
 */
async function crashRestarts(system, requests) {
  const dataDir = path.join(workDir, `${system.name}-crash`);
  const server = system.preload === 'http' ? { ...system.server, env: { ...system.server.env, LOG_LEVEL: 'info' } } : system.server;
  let running = await start({ ...system, server }, dataDir, `${system.name}-crash`);
  const restarts = [];
  const replayed = [];
  let acknowledged = 0;
  for (let i = 0; i < plan.crashes; i++) {
    const load = runWrk({ url: running.url, file: requests.file, mode: 'post', connections: INGEST_CONNECTIONS, seconds: plan.crashAfterSeconds + 30 });
    await new Promise((resolve) => setTimeout(resolve, plan.crashAfterSeconds * 1000));
    await running.crash();
    load.stop();
    const { requests: answered, errorsByKind } = await load.result;
    if (errorsByKind.status > 0) throw new Error(`${system.name} crash run: ${errorsByKind.status} answers >= 400 before the kill`);
    acknowledged += answered;
    running = await ServerProcess.start(server, dataDir, { port: PORT });
    restarts.push(running.startMs);
    const opened = /^.*"store opened".*$/m.exec(running.output);
    if (opened) replayed.push(JSON.parse(opened[0]).store.replayed);
    const stored = await running.eventCount();
    if (stored < acknowledged) throw new Error(`${system.name} after kill -9 number ${i + 1}: ${acknowledged} acknowledged, ${stored} stored`);
  }
  await stop(running);
  fs.rmSync(dataDir, { recursive: true, force: true });
  const restartMs = [...restarts].sort((a, b) => a - b)[Math.floor(restarts.length / 2)];
  log(`${system.name}: restart after kill -9 at full ingest ${restarts.map((ms) => ms.toFixed(0)).join(', ')} ms${replayed.length ? `, replayed ${replayed.join(', ')} creates` : ''}`);
  return { restartMs, restarts, replayed, acknowledged };
}

/** Range requests into the 100 MB video, on a fresh data directory. */
async function rangeDownload(system, videoFile) {
  const dataDir = path.join(workDir, `${system.name}-range`);
  const running = await start(system, dataDir, `${system.name}-range`);
  const route = await system.placeVideo(running, videoFile);
  const requests = writeRangeRequests(path.join(workDir, 'requests'), system.name, route, VIDEO_BYTES);
  const load = { file: requests.file, mode: 'range', connections: RANGE_CONNECTIONS };
  const check = await fetch(`${running.url}${route}`, { headers: { Range: 'bytes=1000-1999' } });
  const expected = fs.readFileSync(videoFile).subarray(1000, 2000);
  if (check.status !== 206 || !Buffer.from(await check.arrayBuffer()).equals(expected)) throw new Error(`${system.name}: ${route} did not answer the right 206`);
  await runWrk({ url: running.url, ...load, seconds: plan.warmupSeconds }).result;
  const run = await measure(running, { ...load, seconds: plan.rangeSeconds });
  const { peakRssBytes } = running.usage();
  await stop(running);
  fs.rmSync(dataDir, { recursive: true, force: true });
  const mbPerSecond = run.bytes / 1e6 / run.seconds;
  log(`${system.name} range: ${run.rate.toFixed(0)} requests/s, ${mbPerSecond.toFixed(0)} MB/s, p99 ${run.p99Ms.toFixed(2)} ms`);
  return { ...run, mbPerSecond, peakRssBytes, rangeBytes: requests.rangeBytes };
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
  const requestsDir = path.join(workDir, 'requests');
  fs.mkdirSync(requestsDir, { recursive: true });
  const machine = machineDetails(workDir, repoRoot);
  log(`${quick ? 'quick' : 'full'} run on ${machine.cpu}, ${machine.cores} cores; store: ${machine.store}`);

  const small = writeSmallEvents(requestsDir);
  const varied = writeVariedEvents(requestsDir);
  const images = writeImageEvents(requestsDir);
  const queryFiles = writeQueries(requestsDir);
  const videoFile = path.join(workDir, 'video-100mb.mp4');
  writeVideoFile(videoFile, VIDEO_BYTES);

  const httpByEngine = {};
  const noStorageByEngine = {};
  const durableFloorByEngine = {};
  for (const engine of storeEngines) {
    const ceiling = (requestsFile) => ({ requestsFile, connections: INGEST_CONNECTIONS, seconds: plan.ceilingSeconds, warmupSeconds: plan.warmupSeconds, port: PORT, dataDir: path.join(workDir, `ceiling-${engine}`), engine });
    httpByEngine[engine] = await httpCeiling(ceiling(small.file));
    noStorageByEngine[engine] = { small: await noStorageCeiling(ceiling(small.file)), image: await noStorageCeiling(ceiling(images.file)) };
    durableFloorByEngine[engine] = { small: await durableFloorCeiling(ceiling(small.file)), image: await durableFloorCeiling(ceiling(images.file)) };
  }
  const ceilings = {
    // The first engine run (uws unless --engines says otherwise) is the one the targets use.
    http: httpByEngine[storeEngines[0]],
    httpByEngine,
    noStorage: noStorageByEngine[storeEngines[0]],
    noStorageByEngine,
    // Every system's ingest is divided by the floor on the first engine (report.js, "Against the durable floor").
    durableFloor: durableFloorByEngine[storeEngines[0]],
    durableFloorByEngine,
    cpu: cpuCeiling(images.file, plan.ceilingSeconds),
    diskMBs: machine.diskCeilingMBs,
  };
  const httpCeilings = storeEngines.map((engine) => `HTTP ${engine} ${httpByEngine[engine].rate.toFixed(0)} POST/s, `
    + `no storage ${engine} ${noStorageByEngine[engine].small.rate.toFixed(0)} small / ${noStorageByEngine[engine].image.rate.toFixed(0)} image creates/s, `
    + `durable floor ${engine} ${durableFloorByEngine[engine].small.rate.toFixed(0)} small / ${durableFloorByEngine[engine].image.rate.toFixed(0)} image creates/s`).join(', ');
  log(`ceilings: ${httpCeilings}, CPU ${ceilings.cpu.eventsPerSecond.toFixed(0)} image events/s, disk ${ceilings.diskMBs.toFixed(0)} MB/s`);

  const systems = [];
  for (const system of systemsToRun) {
    log(`${system.name}: ${system.stack}`);
    systems.push({
      name: system.name,
      engine: system.engine,
      stack: system.stack,
      small: await ingest(system, 'small', small),
      varied: await ingest(system, 'varied', varied),
      image: await ingest(system, 'image', images),
      list: await listsAndStartup(system, small, queryFiles),
      range: await rangeDownload(system, videoFile),
      crash: await crashRestarts(system, small),
    });
  }
  const uploadsByEngine = {};
  for (const engine of storeEngines) {
    uploadsByEngine[engine] = await runUploadBench({ quick, dataRoot: workDir, port: PORT, engine });
    log(`edge-event-store uploads (${engine}): ${uploadsByEngine[engine].map((u) => `${u.name} ${u.mbPerSecond.toFixed(0)} MB/s`).join(', ')}`);
  }
  const uploads = uploadsByEngine[storeEngines[0]];

  const results = {
    quick, plan, machine, engineNote, ceilings, systems, uploads, uploadsByEngine, imageFixture: IMAGE_FIXTURE, payloads: { small, varied, images },
    connections: { ingest: INGEST_CONNECTIONS, range: RANGE_CONNECTIONS }, videoBytes: VIDEO_BYTES, port: PORT,
    minutes: (Date.now() - started) / 60000,
  };
  fs.writeFileSync(path.join(workDir, 'results.json'), JSON.stringify(results, null, 2));
  const out = path.join(here, quick ? 'RESULTS.quick.md' : 'RESULTS.md');
  fs.writeFileSync(out, renderResults(results));
  log(`wrote ${out} in ${results.minutes.toFixed(1)} min`);
}

// Exit (and so kill the servers and wrk, see ServerProcess and runWrk) when interrupted.
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(1));

main().catch((err) => {
  console.error(`bench failed: ${err.stack ?? err}`);
  process.exit(1);
});
