/**
 * `npm run memory-peak`: the store's peak memory and `/health` latency under the heaviest mix of
 * valid creates (docs/RELIABILITY.md, "Memory under the largest valid creates"). For each kind of
 * maximal create (scripts/lib/maximal-creates.ts: `image`, a body of MAX_RECORD_SIZE_BYTES with
 * MAX_POINTS_PER_EVENT points; `points`, those points alone in the densest text; `detections`,
 * images of MAX_PREDICTIONS_PER_IMAGE detections filling the body), a fresh store (the built
 * `dist/src/cli.js`) takes `--creates` of them at once, and for `points` as many more as
 * MAX_INFLIGHT_BODY_BYTES lets in at once, each client posting again after `Retry-After` when
 * answered 503 `body_budget_full`, until every create is stored; meanwhile a worker thread asks
 * `GET /health` every `--probe-ms`. Reported per kind: the store's peak resident memory (VmHWM of
 * /proc/<pid>/status, proc(5), counted from the phase's start by writing 5 to
 * /proc/<pid>/clear_refs), its VmRSS `--settle-seconds` after the last answer, the answers by
 * status, /health p50, p99 and max, whether the store survived, and the 1-minute load average.
 *
 * Options: `--creates 20`, `--kinds image,points,detections`, `--probe-ms 10`,
 * `--settle-seconds 5`, `--node PATH` (default: this Node), `--max-old-space-mib 512` (V8's heap
 * limit for the store, as the systemd unit's NODE_OPTIONS sets it; 0: Node's default, a quarter of
 * the machine's memory). The environment is passed on to the store (HTTP_ENGINE,
 * MAX_INFLIGHT_BODY_BYTES, ...), whose settings also size the bodies.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { loadConfig } from '../src/config.js';
import { percentile } from './lib/latency.js';
import { MAXIMAL_KINDS, maximalCreate, type MaximalKind } from './lib/maximal-creates.js';
import { spawnStore } from './lib/spawned-store.js';

const MiB = 1024 * 1024;

/** `load 1.23 1.10 0.98 on 2 cores` (uptime's load averages). */
const load = (): string => `load ${os.loadavg().map((l) => l.toFixed(2)).join(' ')} on ${os.cpus().length} cores`;

/** A field of /proc/<pid>/status in bytes (VmRSS, VmHWM), or NaN once the process is gone. */
function statusBytes(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

/**
 * The /health prober, in a worker thread of its own so that the posting of large bodies on this
 * thread does not delay its clock: asks every `probeMs` over one kept-alive connection, and posts
 * the latencies (ms) back when told to stop.
 */
const PROBER = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const latencies = [];
let failures = 0;
let stopping = false;
parentPort.on('message', () => { stopping = true; });
const probe = () => new Promise((resolve) => {
  const began = performance.now();
  const req = http.get(workerData.url + '/health', { agent, timeout: 60000 }, (res) => {
    res.resume();
    res.on('end', () => { latencies.push(performance.now() - began); if (res.statusCode !== 200) failures++; resolve(); });
  });
  req.on('error', () => { failures++; latencies.push(performance.now() - began); resolve(); });
});
(async () => {
  while (!stopping) {
    await probe();
    await new Promise((resolve) => setTimeout(resolve, workerData.probeMs));
  }
  agent.destroy();
  parentPort.postMessage({ latencies, failures });
})();
`;

interface PhaseResult {
  kind: MaximalKind;
  bodyBytes: number;
  clients: number;
  statuses: Record<string, number>;
  peakBytes: number;
  polledPeakBytes: number;
  settledBytes: number;
  startBytes: number;
  health: { count: number; failures: number; p50: number; p99: number; max: number };
  survived: boolean;
  seconds: number;
  load: string;
}

/** One client: posts `body` until it is stored (201), waiting `Retry-After` after each 503; any other answer ends it. */
async function postUntilStored(url: string, body: string, statuses: Record<string, number>): Promise<void> {
  for (;;) {
    let status: string;
    let retryAfter = 1;
    try {
      const res = await fetch(`${url}/v2/events`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      await res.arrayBuffer();
      status = String(res.status);
      retryAfter = Number(res.headers.get('retry-after') ?? 1);
    } catch {
      status = 'connection failed';
    }
    statuses[status] = (statuses[status] ?? 0) + 1;
    if (status === '201' || (status !== '503' && status !== 'connection failed')) return;
    await sleep(retryAfter * 1000);
  }
}

interface Options {
  creates: number;
  probeMs: number;
  settleSeconds: number;
  node: string;
  /** V8's old space limit for the store (MiB); 0: Node's default. */
  maxOldSpaceMib: number;
}

async function phase(kind: MaximalKind, options: Options): Promise<PhaseResult> {
  const config = loadConfig({ ...process.env });
  const body = maximalCreate(kind, config);
  const bodyBytes = Buffer.byteLength(body);
  // Dense bodies are small: as many as the budget takes at once, so that all of it is in use.
  const clients = kind === 'points' ? Math.max(options.creates, Math.ceil(config.maxInflightBodyBytes / bodyBytes) + options.creates) : options.creates;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'edge-events-memory-peak-'));
  const heap: Record<string, string> = options.maxOldSpaceMib > 0 ? { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --max-old-space-size=${options.maxOldSpaceMib}`.trim() } : {};
  const store = await spawnStore({ PORT: '0', DATA_DIR: dataDir, ...heap }, options.node);
  const pid = store.child.pid!;
  let exited = false;
  store.child.on('exit', () => (exited = true));
  try {
    await (await fetch(`${store.url}/health`)).arrayBuffer();
    await sleep(1000);
    const startBytes = statusBytes(pid, 'VmRSS');
    fs.writeFileSync(`/proc/${pid}/clear_refs`, '5'); // VmHWM counts from here (proc(5), clear_refs)
    let polledPeakBytes = startBytes;
    const poll = setInterval(() => {
      const now = statusBytes(pid, 'VmRSS');
      if (now > polledPeakBytes) polledPeakBytes = now;
    }, 20);
    const prober = new Worker(PROBER, { eval: true, workerData: { url: store.url, probeMs: options.probeMs } });
    const began = performance.now();
    const statuses: Record<string, number> = {};
    await Promise.all(Array.from({ length: clients }, () => postUntilStored(store.url, body, statuses)));
    const seconds = (performance.now() - began) / 1000;
    const probed = new Promise<{ latencies: number[]; failures: number }>((resolve) => prober.once('message', resolve));
    prober.postMessage('stop');
    const { latencies, failures } = await probed;
    await prober.terminate();
    const peakBytes = statusBytes(pid, 'VmHWM');
    const loadNow = load();
    await sleep(options.settleSeconds * 1000);
    clearInterval(poll);
    const settledBytes = statusBytes(pid, 'VmRSS');
    return {
      kind, bodyBytes, clients, statuses, peakBytes, polledPeakBytes, settledBytes, startBytes, seconds, load: loadNow,
      health: { count: latencies.length, failures, p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: Math.max(...latencies) },
      survived: !exited,
    };
  } finally {
    if (exited) console.log(`the store exited; its last lines:\n${store.output().split('\n').slice(-20).join('\n')}`);
    else {
      store.child.kill('SIGTERM');
      await new Promise((resolve) => store.child.once('exit', resolve));
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      creates: { type: 'string' }, kinds: { type: 'string' }, 'probe-ms': { type: 'string' }, 'settle-seconds': { type: 'string' }, node: { type: 'string' },
      'max-old-space-mib': { type: 'string' },
    },
  });
  const kinds = (values.kinds ?? MAXIMAL_KINDS.join(',')).split(',').map((kind) => kind.trim());
  for (const kind of kinds) if (!MAXIMAL_KINDS.includes(kind as MaximalKind)) throw new Error(`--kinds: unknown kind ${kind}; expected ${MAXIMAL_KINDS.join(', ')}`);
  const options: Options = {
    maxOldSpaceMib: Number(values['max-old-space-mib'] ?? 512),
    creates: Number(values.creates ?? 20),
    probeMs: Number(values['probe-ms'] ?? 10),
    settleSeconds: Number(values['settle-seconds'] ?? 5),
    node: values.node ?? process.execPath,
  };
  const config = loadConfig({ ...process.env });
  console.log(`node ${process.version} (${options.node}), --max-old-space-size=${options.maxOldSpaceMib || '(default)'}, HTTP_ENGINE=${process.env.HTTP_ENGINE ?? '(best that loads)'}, MAX_RECORD_SIZE_BYTES=${config.maxRecordSizeBytes}, `
    + `MAX_POINTS_PER_EVENT=${config.maxPointsPerEvent}, MAX_INFLIGHT_BODY_BYTES=${config.maxInflightBodyBytes}; ${load()}`);
  const mib = (bytes: number) => `${(bytes / MiB).toFixed(0)} MiB`;
  let worst = 0;
  for (const kind of kinds as MaximalKind[]) {
    const r = await phase(kind, options);
    worst = Math.max(worst, r.peakBytes);
    console.log(`${r.kind}: ${r.clients} creates of ${(r.bodyBytes / MiB).toFixed(2)} MiB at once, all answered in ${r.seconds.toFixed(1)} s; answers ${JSON.stringify(r.statuses)}; `
      + `RSS ${mib(r.startBytes)} before, peak ${mib(r.peakBytes)} (VmHWM; ${mib(r.polledPeakBytes)} polled), ${mib(r.settledBytes)} ${options.settleSeconds} s after; `
      + `/health ${r.health.count} probes, ${r.health.failures} failed, p50 ${r.health.p50.toFixed(1)} ms, p99 ${r.health.p99.toFixed(1)} ms, max ${r.health.max.toFixed(1)} ms; `
      + `${r.survived ? 'store alive' : 'STORE DIED'}; ${r.load}`);
    if (!r.survived) process.exitCode = 1;
  }
  console.log(`worst peak RSS: ${mib(worst)}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
