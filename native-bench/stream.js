/**
 * Live stream benchmark (`GET /v2/events/stream`, docs/API.md "Live stream"; `GET /metrics`,
 * docs/OPERATIONS.md "Metrics"). Targets:
 *   - ingest at full rate with 100 SSE subscribers (half filtered to one device) and 10 WebSocket
 *     subscribers: throughput within 10% of no subscribers; delivery latency from the 201 to the
 *     subscriber p99 < 20 ms; one deliberately stalled subscriber changes neither;
 *   - a `/metrics` scrape under load < 5 ms.
 *
 * Three phases on one store, each ingesting small events with wrk at 50 connections (as bench.js's
 * small-event workload, with every 10th event of WATCHED_DEVICE):
 *   1. no subscribers (the baseline);
 *   2. with SSE_ALL + SSE_WATCHED SSE subscribers and WS_ALL + WS_WATCHED WebSocket subscribers,
 *      all in a clients process of their own (lib/stream-clients.js, worker threads);
 *   3. the same plus one stalled SSE subscriber that never reads: the store must drop it
 *      (`closed`, slow_consumer) once its buffer (STREAM_SUBSCRIBER_BUFFER_BYTES) is full.
 * In every phase a probe posts one event of WATCHED_DEVICE every 20 ms and notes when each 201
 * arrived; every subscriber notes when each probe event arrived (both on the machine's monotonic
 * clock): delivery latency = arrival - 201. /metrics is scraped every 250 ms and timed.
 *
 * Run: `node stream.js [--quick]` after `npm run build` in the repository (the store's dist/;
 * the `ws` package comes from the repository's node_modules); writes RESULTS.stream.md.
 * --quick: ~4 s phases, a smoke run of the script, not a measurement.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { machineBusySeconds } from './lib/machine.js';
import { seeded, smallEvent } from './lib/payloads.js';
import { writeResults } from './lib/side-results.js';
import { startStreamClients } from './lib/stream-clients.js';
import { LatencyProbe, MetricsScraper, StalledSubscriber, summarise } from './lib/stream-load.js';
import { statCpuSeconds, StoreProcess } from './lib/store-process.js';
import { runWrk } from './lib/wrk.js';

/** The device the filtered subscribers follow: every WATCHED_EVERY-th ingested event, and every probe. */
const WATCHED_DEVICE = 'watched-cam';
const WATCHED_EVERY = 10;
const SSE_ALL = 50;
const SSE_WATCHED = 50;
const WS_ALL = 5;
const WS_WATCHED = 5;
const INGEST_CONNECTIONS = 50;
const PROBE_INTERVAL_MS = 20;
const SCRAPE_INTERVAL_MS = 250;
/** Wait after the load for the last probe events to reach every subscriber. */
const GRACE_MS = 1000;
const TARGETS = { ingestRatio: 0.9, deliveryP99Ms: 20, scrapeP99Ms: 5 };
const BUFFER_BYTES = Number(process.env.STREAM_SUBSCRIBER_BUFFER_BYTES ?? 4 * 1024 * 1024);
/** About what the kernel holds for a socket that is not read, on loopback (tcp_wmem's 4 MiB, plus a receive buffer). */
const SOCKET_BUFFER_BYTES = 4 * 1024 * 1024;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (message) => console.log(`[stream ${new Date().toISOString().slice(11, 19)}] ${message}`);

/**
 * Writes `count` small create bodies (lib/payloads.js, smallEvent) in which every WATCHED_EVERY-th
 * is of WATCHED_DEVICE, so the filtered subscribers get a known share (1 / WATCHED_EVERY) of them.
 * @returns {{ file: string, count: number, watched: number, meanBytes: number }}
 */
export function writeStreamEvents(dir, count = 2000) {
  const random = seeded(1);
  const lines = Array.from({ length: count }, (_, i) => {
    const event = smallEvent(random, i);
    if (i % WATCHED_EVERY === 0) event.device_id = WATCHED_DEVICE;
    return JSON.stringify(event);
  });
  const file = path.join(dir, 'stream-events.txt');
  fs.writeFileSync(file, lines.join('\n') + '\n');
  const meanBytes = lines.reduce((n, line) => n + Buffer.byteLength(line), 0) / count;
  return { file, count, watched: Math.ceil(count / WATCHED_EVERY), meanBytes };
}

/** The subscribers of phases 2 and 3 (lib/stream-clients.js, SubscriberSpec). */
export function subscriberSpecs() {
  const all = '/v2/events/stream';
  const watched = `/v2/events/stream?device_id=${WATCHED_DEVICE}`;
  const make = (count, kind, group, streamPath) => Array.from({ length: count }, () => ({ kind, group, path: streamPath, seesProbes: true }));
  return [
    ...make(SSE_ALL, 'sse', 'SSE, all events', all),
    ...make(SSE_WATCHED, 'sse', `SSE, device_id=${WATCHED_DEVICE}`, watched),
    ...make(WS_ALL, 'ws', 'WebSocket, all events', all),
    ...make(WS_WATCHED, 'ws', `WebSocket, device_id=${WATCHED_DEVICE}`, watched),
  ];
}

/** Events stored in all, and of WATCHED_DEVICE (GET /events/count/stats). */
async function storedCounts(store) {
  const [total, watched] = await Promise.all([
    store.eventCount(),
    store.getJson(`/events/count/stats?device_id=${WATCHED_DEVICE}`).then((stats) => stats.filtered_count),
  ]);
  return { total, watched };
}

/**
 * Delivery of the probe events to the subscribers that should see them: latency (ms, arrival -
 * 201) over every (subscriber, probe event) pair, overall and by group; probe events a subscriber
 * still connected at the end never got (missed); subscribers whose stream ended before the end.
 */
export function deliveryFigures(probeEvents, tallies) {
  const all = [];
  const groups = new Map();
  let missed = 0;
  for (const tally of tallies.filter((t) => t.seesProbes)) {
    const group = groups.get(tally.group) ?? { name: tally.group, latencies: [], tallies: [] };
    groups.set(tally.group, group);
    group.tallies.push(tally);
    const arrived = new Map(tally.probes);
    for (const { id, ackNs } of probeEvents) {
      const at = arrived.get(id);
      if (at === undefined) {
        if (tally.endedAtNs === undefined) missed++;
        continue;
      }
      const ms = (at - ackNs) / 1e6;
      all.push(ms);
      group.latencies.push(ms);
    }
  }
  return {
    latency: summarise(all),
    pairs: tallies.filter((t) => t.seesProbes).length * probeEvents.length,
    missed,
    ended: tallies.filter((t) => t.endedAtNs !== undefined).map((t) => ({ group: t.group, closed: t.closed, error: t.error })),
    groups: [...groups.values()].map((g) => ({
      name: g.name,
      subscribers: g.tallies.length,
      latency: summarise(g.latencies),
      createdMin: Math.min(...g.tallies.map((t) => t.created)),
      createdMax: Math.max(...g.tallies.map((t) => t.created)),
      bytes: g.tallies.reduce((n, t) => n + t.bytes, 0),
    })),
  };
}

/**
 * One phase: connects the subscribers (and the stalled one), then ingests with wrk for `seconds`
 * while the probe posts and the scraper scrapes; collects what everyone saw.
 */
export async function runPhase(store, requests, { name, subscribers, stalled, seconds }) {
  const before = await storedCounts(store);
  const clients = subscribers ? await startStreamClients({ url: store.url, subscribers: subscriberSpecs(), threads: Math.max(1, os.availableParallelism()) }) : undefined;
  const stalledSubscriber = stalled ? await StalledSubscriber.open(store.url) : undefined;
  const scraper = new MetricsScraper({ url: store.url, intervalMs: SCRAPE_INTERVAL_MS }).start();
  const probe = new LatencyProbe({ url: store.url, device: WATCHED_DEVICE, intervalMs: PROBE_INTERVAL_MS });
  const usage0 = store.usage();
  const cpu0 = { store: usage0.cpuSeconds, storeMain: usage0.mainThreadCpuSeconds, clients: clients ? statCpuSeconds(`/proc/${clients.pid}/stat`) : 0, machine: machineBusySeconds(), at: performance.now() };

  let wrk;
  let cpu1;
  scraper.loaded = true;
  probe.start();
  try {
    wrk = await runWrk({ url: store.url, file: requests.file, mode: 'post', connections: INGEST_CONNECTIONS, seconds }).result;
    scraper.loaded = false;
    const usage1 = store.usage();
    cpu1 = { store: usage1.cpuSeconds, storeMain: usage1.mainThreadCpuSeconds, clients: clients ? statCpuSeconds(`/proc/${clients.pid}/stat`) : 0, machine: machineBusySeconds(), at: performance.now() };
  } finally {
    // Stopped whatever happened, or their loops would keep the bench from exiting.
    await probe.stop();
    await sleep(GRACE_MS);
    await scraper.stop();
  }

  const tallies = clients ? await clients.report() : [];
  const stalledResult = stalledSubscriber && await stalledSubscriber.finish();
  const after = await storedCounts(store);
  const wallSeconds = (cpu1.at - cpu0.at) / 1000;
  const cores = (from, to) => (to - from) / wallSeconds;
  const result = {
    name,
    wrk,
    probe: { sent: probe.events.length, failures: probe.failures, ackMs: summarise(probe.ackMs) },
    delivery: deliveryFigures(probe.events, tallies),
    metrics: scraper.underLoad(),
    created: { total: after.total - before.total, watched: after.watched - before.watched },
    cpu: {
      wallSeconds,
      store: cores(cpu0.store, cpu1.store),
      storeMain: cores(cpu0.storeMain, cpu1.storeMain),
      clients: cores(cpu0.clients, cpu1.clients),
      wrk: wrk.wrkCpuSeconds / wallSeconds,
      machine: cores(cpu0.machine, cpu1.machine),
    },
    stalled: stalledResult && {
      ...stalledResult,
      droppedByMetrics: scraper.droppedAtNs !== undefined,
      droppedAfterSeconds: scraper.droppedAtNs && (scraper.droppedAtNs - stalledSubscriber.openedAtNs) / 1e9,
    },
  };
  if (stalledResult && !(stalledResult.responseEnded && stalledResult.closed)) {
    log(`${name}: the stalled subscriber read ${stalledResult.bytes} bytes, ending with ${JSON.stringify(stalledResult.tail.slice(-160))}`);
  }
  log(`${name}: ${wrk.rate.toFixed(0)} events/s, p99 ${wrk.p99Ms.toFixed(2)} ms; delivery p99 ${result.delivery.latency?.p99.toFixed(2) ?? '-'} ms, missed ${result.delivery.missed}; /metrics p99 ${result.metrics.ms?.p99.toFixed(2)} ms`);
  return result;
}

/** Runs the three phases on a fresh store. */
export async function runStreamBench({ dataRoot, seconds, warmupSeconds }) {
  const requests = writeStreamEvents(fs.mkdtempSync(path.join(dataRoot, 'requests-')));
  const dataDir = fs.mkdtempSync(path.join(dataRoot, 'stream-'));
  const store = await StoreProcess.start(dataDir);
  try {
    await runWrk({ url: store.url, file: requests.file, mode: 'post', connections: INGEST_CONNECTIONS, seconds: warmupSeconds }).result;
    const phases = [];
    phases.push(await runPhase(store, requests, { name: 'baseline', subscribers: false, stalled: false, seconds }));
    phases.push(await runPhase(store, requests, { name: 'subscribers', subscribers: true, stalled: false, seconds }));
    phases.push(await runPhase(store, requests, { name: 'stalled', subscribers: true, stalled: true, seconds }));
    return { requests, phases };
  } finally {
    await store.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

const int = (n) => Math.round(n).toLocaleString('en');
const ms = (n) => (n === undefined ? '-' : n.toFixed(2));
const verdict = (ok) => (ok ? 'met' : '**missed**');
const triple = (s) => (s ? `${ms(s.p50)} / ${ms(s.p99)} / ${ms(s.max)} ms` : '-');
const scrapes = (m) => (m.ms ? `${triple(m.ms)} (${m.ms.count})` : '-');

/**
 * The stalled subscriber's fate, in words. `streamedBytes`: what each unfiltered SSE subscriber
 * received in the phase, i.e. what the store had to hold for the stalled one; below the socket
 * buffers (~4 MiB on Linux loopback) plus STREAM_SUBSCRIBER_BUFFER_BYTES it cannot be dropped yet.
 */
function stalledWords(stalled, streamedBytes) {
  if (!stalled) return '-';
  const reason = stalled.closed?.reason;
  const when = stalled.droppedAfterSeconds === undefined ? '' : ` ~${stalled.droppedAfterSeconds.toFixed(1)} s after it connected`;
  if (stalled.droppedByMetrics && stalled.responseEnded) return `dropped${when}, last message \`closed\` (${reason ?? 'none read'}); ${(stalled.bytes / 2 ** 20).toFixed(1)} MiB read in all`;
  const response = stalled.responseEnded ? `ended, last message ${stalled.closed ? `\`closed\` (${stalled.closed.reason})` : 'not `closed`'}` : 'never ended';
  const lead = streamedBytes > SOCKET_BUFFER_BYTES + BUFFER_BYTES ? '**not dropped as expected**' : 'not dropped, too little streamed yet';
  return `${lead}: dropped counter ${stalled.droppedByMetrics ? `rose${when}` : 'unchanged'}, response ${response}; ${(stalled.bytes / 2 ** 20).toFixed(1)} MiB read at the end, of ${(streamedBytes / 2 ** 20).toFixed(1)} MiB streamed to each unfiltered subscriber`;
}

/** Bytes each unfiltered SSE subscriber received in phase `p` (0 without subscribers). */
function unfilteredSseBytes(p) {
  const group = p.delivery.groups.find((g) => g.name === 'SSE, all events');
  return group ? group.bytes / group.subscribers : 0;
}

/** The figures as Markdown: targets, then per-phase detail, per-group delivery, method. */
export function streamTable({ requests, phases }, { seconds, quick }) {
  const [base, subs, stall] = phases;
  const ratio = (p) => p.wrk.rate / base.wrk.rate;
  const withSubs = [subs, stall];
  const ingestOk = withSubs.every((p) => ratio(p) >= TARGETS.ingestRatio);
  const deliveryOk = withSubs.every((p) => p.delivery.latency && p.delivery.latency.p99 < TARGETS.deliveryP99Ms && p.delivery.missed === 0);
  const scrapeOk = subs.metrics.ms && subs.metrics.ms.p99 < TARGETS.scrapeP99Ms;
  const stalledOk = Boolean(stall.stalled?.droppedByMetrics && stall.stalled.responseEnded && stall.stalled.closed?.reason === 'slow_consumer');
  // Too little streamed to fill the socket buffers and the store's queue: no drop was due yet.
  const stalledDue = stalledOk || unfilteredSseBytes(stall) > SOCKET_BUFFER_BYTES + BUFFER_BYTES;
  const stalledVerdict = stalledDue ? verdict(stalledOk) : 'not reached (phase too short)';
  const subscriberCount = SSE_ALL + SSE_WATCHED + WS_ALL + WS_WATCHED;
  const lines = [
    ...(quick ? ['**Quick smoke run (short phases): it shows the script works; its figures are not the results.**', ''] : []),
    `| Figure | No subscribers | ${subscriberCount} subscribers | ${subscriberCount} + 1 stalled | Target | |`,
    '|---|---|---|---|---|---|',
    `| Ingest, small events, ${INGEST_CONNECTIONS} conn. (wrk) | ${int(base.wrk.rate)}/s | ${int(subs.wrk.rate)}/s (${ratio(subs).toFixed(2)}x) | ${int(stall.wrk.rate)}/s (${ratio(stall).toFixed(2)}x) | >= ${TARGETS.ingestRatio}x of no subscribers | ${verdict(ingestOk)} |`,
    `| Ingest p99 (wrk) | ${ms(base.wrk.p99Ms)} ms | ${ms(subs.wrk.p99Ms)} ms | ${ms(stall.wrk.p99Ms)} ms | | |`,
    `| Delivery, 201 to subscriber, p50 / p99 / max | - | ${triple(subs.delivery.latency)} | ${triple(stall.delivery.latency)} | p99 < ${TARGETS.deliveryP99Ms} ms, none missed | ${verdict(deliveryOk)} |`,
    `| Probe deliveries missed (connected subscribers) | - | ${subs.delivery.missed} of ${int(subs.delivery.pairs)} | ${stall.delivery.missed} of ${int(stall.delivery.pairs)} | 0 | |`,
    `| \`/metrics\` scrape under load, p50 / p99 / max (scrapes) | ${scrapes(base.metrics)} | ${scrapes(subs.metrics)} | ${scrapes(stall.metrics)} | p99 < ${TARGETS.scrapeP99Ms} ms (with subscribers) | ${verdict(scrapeOk)} |`,
    `| Stalled SSE subscriber | - | - | ${stalledWords(stall.stalled, unfilteredSseBytes(stall))} | dropped (slow_consumer) | ${stalledVerdict} |`,
    '',
    '| Phase | wrk requests (errors) | Probe 201 p50 / p99 | Events created | Store CPU (main thread) | Clients CPU | wrk CPU | Machine busy |',
    '|---|---|---|---|---|---|---|---|',
    ...phases.map((p) => `| ${p.name} | ${int(p.wrk.requests)} (${p.wrk.errors}) | ${ms(p.probe.ackMs?.p50)} / ${ms(p.probe.ackMs?.p99)} ms (${p.probe.sent} sent, ${p.probe.failures} failed) | ${int(p.created.total)} (${int(p.created.watched)} of ${WATCHED_DEVICE}) | ${p.cpu.store.toFixed(2)} cores (${p.cpu.storeMain.toFixed(2)}) | ${p.cpu.clients.toFixed(2)} cores | ${p.cpu.wrk.toFixed(2)} cores | ${p.cpu.machine.toFixed(2)} of ${os.availableParallelism()} cores |`),
    '',
    '| Phase | Subscribers | Each got (created messages) | Expected | MB received, all | Delivery p50 / p99 / max |',
    '|---|---|---|---|---|---|',
    ...withSubs.flatMap((p) => p.delivery.groups.map((g) => {
      const expected = g.name.includes(WATCHED_DEVICE) ? p.created.watched : p.created.total;
      return `| ${p.name} | ${g.name}: ${g.subscribers} | ${int(g.createdMin)} to ${int(g.createdMax)} | ${int(expected)} | ${(g.bytes / 1e6).toFixed(1)} | ${triple(g.latency)} |`;
    })),
    '',
    `/metrics body: ${int(subs.metrics.bytes ?? 0)} bytes. Streams that ended before the end of their phase: ${withSubs.map((p) => `${p.name} ${p.delivery.ended.length}`).join(', ')}` +
      `${withSubs.flatMap((p) => p.delivery.ended).slice(0, 3).map((e) => ` (${e.group}: ${e.closed ? JSON.stringify(e.closed) : e.error})`).join('')}.`,
    '',
    `**Method.** One store (uWebSockets.js engine, default settings: STREAM_SUBSCRIBER_BUFFER_BYTES ${int(BUFFER_BYTES)}),`,
    `warmed up, then three phases of ${seconds} s on it, each ingesting small events (~${int(requests.meanBytes)} B, ${int(requests.count)} distinct`,
    `bodies round-robin, every ${WATCHED_EVERY}th of device \`${WATCHED_DEVICE}\`) with wrk at ${INGEST_CONNECTIONS} connections, as bench.js's small-event`,
    `workload. Subscribers: ${SSE_ALL} SSE unfiltered, ${SSE_WATCHED} SSE with \`device_id=${WATCHED_DEVICE}\`, ${WS_ALL} WebSocket unfiltered and`,
    `${WS_WATCHED} WebSocket with the filter, each on its own connection, in one process of their own (lib/stream-clients.js,`,
    `${os.availableParallelism()} worker threads), connected before the load starts. Delivery latency: in every phase a probe in the`,
    `bench's main process posts one event of \`${WATCHED_DEVICE}\` every ${PROBE_INTERVAL_MS} ms (besides wrk's load: wrk's rate leaves it out) and`,
    'notes when each 201 arrived (node:http, head parsed); every subscriber (all see the probe events) notes when each',
    'arrived, matched by the event id from the 201; latency = arrival - 201 on CLOCK_MONOTONIC (process.hrtime: one',
    'clock for all processes of the machine), over every (subscriber, probe event) pair. It can be negative: the store',
    'announces created events to the stream right after their index commit, before their 201s are sent',
    '(src/store/record/store-changes.ts), so a subscriber may read one before the probe has read its 201.',
    `/metrics is scraped every ${SCRAPE_INTERVAL_MS} ms, timed from request to last body byte. Percentiles are nearest-rank (with`,
    'fewer than 100 samples, p99 is the maximum). The stalled subscriber sends the request over a raw socket it never',
    'reads; it counts as dropped when `edge_events_stream_subscribers_dropped_total` rose (time: the first scrape that',
    'saw it) and, read at the end, its response ended (the last chunk of its chunked body) after a `closed` message with',
    "`slow_consumer` (the store keeps the connection open). Before the store's queue for it can overflow, the kernel's",
    `socket buffers (about 4 MiB on loopback) fill, so it needs about ${((SOCKET_BUFFER_BYTES + BUFFER_BYTES) / 2 ** 20).toFixed(0)} MiB of events streamed to it`,
    "(\"not reached\" when a phase streamed less).",
    '',
    `**Caveats.** The machine has ${os.availableParallelism()} cores: the store, wrk, the subscribers' process and the probe all share`,
    "them, so the subscribers' CPU (column \"Clients CPU\") is taken from the store's: the ingest ratio measures the",
    'store and its subscribers together on this machine, not the store alone, and the delivery latency includes the',
    'time a busy subscriber process takes to read its sockets. The fan-out to subscribers runs on the store\'s HTTP thread',
    'on the ingest path (before the 201s), so it is part of what the ingest ratio measures. The phases run one after',
    'another on one growing store; other work on the machine (load average above, "Machine busy") moves every figure.',
  ];
  return lines.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const quick = process.argv.includes('--quick');
  const [loadAtStart] = os.loadavg();
  const plan = quick ? { seconds: 4, warmupSeconds: 1 } : { seconds: 15, warmupSeconds: 3 };
  const dataRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'ees-bench-'));
  try {
    const results = await runStreamBench({ dataRoot, ...plan });
    const title = quick ? 'Live stream benchmark (quick smoke run)' : 'Live stream benchmark';
    writeResults('RESULTS.stream.md', title, quick, streamTable(results, { ...plan, quick }), { loadAtStart });
  } finally {
    fs.rmSync(dataRoot, { recursive: true, force: true });
  }
}
