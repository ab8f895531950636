/**
 * NATS JetStream benchmark (docs/OPERATIONS.md, "NATS JetStream" and "Hub mode"). Targets: the
 * sink keeps up with the store's own image-event ingest rate; a hub ingests at least 80% of the
 * store's direct POST rate (native-bench/PROFILE.md, "The hub's import"), at no more CPU per event than a direct POST.
 *
 * One local nats-server (JetStream, file storage), image events (lib/payloads.js: a small event
 * with the ~41 KB IMAGE_FIXTURE):
 *   1. direct: wrk POSTs them at 50 connections into a device store whose NATS server is not up
 *      yet: the store's own ingest rate, and a backlog of every event created;
 *   2. sink: the server starts; the time from then until the device's backlog is 0 gives the
 *      events/s and image MB/s one sink connection ships;
 *   3. hub: a hub store consumes the stream from the start; the time until it holds every event
 *      gives its ingest rate, compared with the direct rate of 1.
 *
 * Each phase's CPU (utime + stime): the device store's over the direct POSTs, the hub's and
 * nats-server's while the hub consumes, per event.
 *
 * Run: `node nats.js [--quick] [--profile=DIR]` after `npm run build` in the repository; needs
 * `nats-server` (Debian: `apt-get install nats-server`). `--profile=DIR` runs the hub under
 * `node --cpu-prof`, its profile written to DIR (profile-summary.js reads it). Writes RESULTS.nats.md.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeImageEvents } from './lib/payloads.js';
import { writeResults } from './lib/side-results.js';
import { freePort, statCpuSeconds, StoreProcess } from './lib/store-process.js';
import { runWrk } from './lib/wrk.js';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (message) => console.log(`[nats ${new Date().toISOString().slice(11, 19)}] ${message}`);

/** A nats-server with JetStream on `port`, storing under `dir`; resolves once it accepts connections. */
async function startNatsServer(port, dir) {
  const child = spawn(process.env.NATS_SERVER_PATH ?? 'nats-server', ['-js', '-sd', dir, '-a', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
  process.once('exit', () => child.kill('SIGKILL'));
  for (let i = 0; i < 200; i++) {
    const up = await new Promise((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => (socket.destroy(), resolve(true)));
      socket.on('error', () => resolve(false));
    });
    if (up) return child;
    await sleep(50);
  }
  throw new Error(`nats-server did not listen on ${port}`);
}

/** Polls `probe` every 50 ms until it is true; resolves with the time it took (s). */
async function timeUntil(probe, timeoutMs = 30 * 60_000) {
  const started = performance.now();
  while (!(await probe())) {
    if (performance.now() - started > timeoutMs) throw new Error('timed out');
    await sleep(50);
  }
  return (performance.now() - started) / 1000;
}

const stats = async (store) => (await fetch(`${store.url}/stats`)).json();

/**
 * Runs the three phases.
 * @returns {{ direct, created, imageBytes, sinkSeconds, hubSeconds }}
 */
export async function runNatsBench({ dataRoot, seconds, profileDir }) {
  const natsPort = await freePort();
  const natsUrl = `nats://127.0.0.1:${natsPort}`;
  const requests = writeImageEvents(fs.mkdtempSync(path.join(dataRoot, 'requests-')), 200);
  process.env.NATS_URL = natsUrl; // the store inherits the environment
  const device = await StoreProcess.start(fs.mkdtempSync(path.join(dataRoot, 'device-')));
  delete process.env.NATS_URL;
  let server;
  let hub;
  try {
    log(`direct: image events into the device, ${seconds} s, its NATS server down`);
    const deviceCpu = device.usage().cpuSeconds;
    const direct = await runWrk({ url: device.url, file: requests.file, mode: 'post', connections: 50, seconds }).result;
    const directCpuSeconds = device.usage().cpuSeconds - deviceCpu;
    const created = (await stats(device)).current.total_events;
    const backlog = (await stats(device)).sinks.nats.backlog_events;
    log(`direct: ${direct.rate.toFixed(0)} req/s; ${created} events, backlog ${backlog}`);

    server = await startNatsServer(natsPort, fs.mkdtempSync(path.join(dataRoot, 'nats-')));
    log('sink: server up, draining');
    const sinkSeconds = await timeUntil(async () => (await stats(device)).sinks.nats.backlog_events === 0);
    log(`sink: ${created} events in ${sinkSeconds.toFixed(1)} s`);

    process.env.NATS_SOURCE_URL = natsUrl;
    const serverCpu = statCpuSeconds(`/proc/${server.pid}/stat`);
    hub = await StoreProcess.start(fs.mkdtempSync(path.join(dataRoot, 'hub-')), { profileDir });
    delete process.env.NATS_SOURCE_URL;
    const hubSeconds = await timeUntil(async () => (await stats(hub)).current.total_events >= created);
    const cpu = { direct: directCpuSeconds, hub: hub.usage().cpuSeconds, hubMainThread: hub.usage().mainThreadCpuSeconds, natsServer: statCpuSeconds(`/proc/${server.pid}/stat`) - serverCpu };
    log(`hub: ${created} events in ${hubSeconds.toFixed(1)} s; CPU: hub ${cpu.hub.toFixed(2)} s (its HTTP thread ${cpu.hubMainThread.toFixed(2)} s), nats-server ${cpu.natsServer.toFixed(2)} s; the device's direct POSTs ${cpu.direct.toFixed(2)} s`);
    return { direct, created, imageBytes: requests.imageBytes, sinkSeconds, hubSeconds, cpu };
  } finally {
    await hub?.stop();
    await device.stop();
    server?.kill('SIGTERM');
  }
}

/** The RESULTS.nats.md table. */
export function natsTable({ direct, created, imageBytes, sinkSeconds, hubSeconds, cpu }) {
  const directRate = direct.rate;
  const sinkRate = created / sinkSeconds;
  const hubRate = created / hubSeconds;
  const perEvent = (seconds, events) => `${((seconds / events) * 1e6).toFixed(0)} µs`;
  const directEvents = direct.rate * direct.seconds;
  const verdict = (met) => (met ? 'met' : '**missed**');
  return [
    '| Figure | Result | Target | |',
    '|---|---|---|---|',
    `| Direct POST of image events (wrk, 50 connections), the store's own rate | ${directRate.toFixed(0)} events/s, p99 ${direct.p99Ms.toFixed(1)} ms (${created.toLocaleString('en-US')} events in ${direct.seconds.toFixed(1)} s) | | |`,
    `| Sink: one connection ships (files to the object store, then the event; from a backlog) | ${sinkRate.toFixed(0)} events/s, ${((sinkRate * imageBytes) / 1e6).toFixed(1)} MB/s of images | >= the direct rate | ${verdict(sinkRate >= directRate)} |`,
    `| Hub: consumes the stream into its store (files fetched from the bucket) | ${hubRate.toFixed(0)} events/s (${(hubRate / directRate).toFixed(2)}x the direct rate) | >= 0.8x the direct rate | ${verdict(hubRate >= 0.8 * directRate)} |`,
    `| CPU per image event: the hub's import (its HTTP thread's), against the device's direct POST | ${perEvent(cpu.hub, created)} (${perEvent(cpu.hubMainThread, created)}) against ${perEvent(cpu.direct, directEvents)} | <= the direct POST's | ${verdict(cpu.hub / created <= cpu.direct / directEvents)} |`,
    `| CPU per image event of nats-server while the hub consumes | ${perEvent(cpu.natsServer, created)} | | |`,
    '',
    `Image: ${(imageBytes / 1024).toFixed(1)} KiB JPEG per event (lib/payloads.js, IMAGE_FIXTURE). Rates over the whole phase: the sink's from the server's start`,
    'to an empty backlog, the hub\'s from its start (including its own start-up) to holding every event.',
    'CPU: utime + stime of each process tree over its phase (the hub\'s from its start, so its start-up is in it).',
    'All of it on one machine: the device store, nats-server and the hub share its cores.',
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const quick = process.argv.includes('--quick');
  const loadAtStart = os.loadavg()[0];
  const dataRoot = fs.mkdtempSync(path.join(path.dirname(fileURLToPath(import.meta.url)), '.data-nats-'));
  try {
    const profile = process.argv.find((arg) => arg.startsWith('--profile='))?.slice('--profile='.length);
    const result = await runNatsBench({ dataRoot, seconds: quick ? 3 : 15, profileDir: profile && path.resolve(profile) });
    writeResults('RESULTS.nats.md', 'NATS JetStream benchmark', quick, natsTable(result), { loadAtStart });
  } finally {
    fs.rmSync(dataRoot, { recursive: true, force: true });
  }
}
