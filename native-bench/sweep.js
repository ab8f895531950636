/**
 * Concurrency sweep (issue #28, item 5): edge-event-store, the peers and the durable floor
 * (ceilings/durable-floor.js: the body appended and fdatasync'd, nothing else; issue #59) side by side in one run,
 * at 1, 4, 16 and 50 requests in flight, with small events (~850 B of JSON) and image events
 * (the small events plus the base64 of rocket.jpg, 41,501 bytes). A device pipeline posts one
 * event and waits for the 201; bench.js's 50 wrk connections hide what that costs.
 *
 * For each workload, each number of requests in flight and each system in turn (so a row's
 * figures come from the same minutes): a fresh data directory, the system started, a short
 * warm-up, then a closed-loop client (lib/closed-loop.js: node:http, keep-alive, exactly N
 * requests in flight; a non-201 fails the run) for a fixed window. Reported per cell: events/s,
 * p50 and p99, the server's CPU per event (utime + stime over its whole process tree), bytes
 * written per event by the server's tree (`write_bytes`) and by the data directory's block device
 * (/proc/diskstats), both up to TAIL_SECONDS after the window so a background flush is counted,
 * and what else used the machine meanwhile; and each system's rate, CPU and bytes per event as a
 * ratio to the durable floor's (`--systems` leaves it out unless it names `durable-floor`).
 *
 * Run: `npm run sweep` (setup.sh, then `node sweep.js`), or `node sweep.js [--quick]
 * [--seconds=N] [--systems=edge-event-store,fastify-sqlite] [--in-flight=1,4] [--workloads=small]
 * [--late-check=N] [--pace=R] [--warmup=N] [--preload=S] [--max-storage=MiB] [--data-root=DIR]
 * [--results=NAME] [--compare=DIR]`. `--compare=DIR` measures another checkout's build too (DIR with
 * its dist/ built, an older commit's say), by turns with this one on the first engine.
 * The full run (5 systems x 2 workloads x 4 concurrencies, 8 s windows) takes about 12 minutes (10 with
 * the 4 systems before the durable floor; a fifth adds a fifth of the cells)
 * (README.md here gives every script's time)
 * and writes RESULTS.sweep.md; --quick (3 s windows, no wait for a quiet machine) writes
 * .data/RESULTS.sweep.quick.md instead, so a noisy check never replaces measured figures.
 * Both print the report and keep the raw figures in .data/sweep.json (.data/sweep.quick.json).
 *
 * `--pace=R` (`npm run paced`: R = 10) drives each system at a pipeline's pace instead: one event
 * at a time, R a second (lib/closed-loop.js `runPaced`), for windows of PACED_WINDOW_SECONDS after
 * 150 s of warm-up at the same pace (PACED_WARMUP_SECONDS), so that the bytes and the CPU a store
 * spends per event at the rate a box really sees are measured, where a checkpoint or a commit is
 * shared by few events. About 75 minutes, each window followed by the disk alone at the pace for
 * as long; it writes RESULTS.paced.md (.data/paced.json). `--preload=S` first fills each fresh store flat out for S
 * seconds (PRELOAD_IN_FLIGHT requests in flight), so the window's checkpoint lands on an index of a
 * box that has run a while, not on a nearly empty one. `--max-storage=MiB` runs edge-event-store
 * with MAX_STORAGE_BYTES of that many MiB (the peers have no such limit): with a preload past it,
 * the window is a full store's, whose cleanup deletes the oldest files as the events come, the
 * steady state of a box whose card is full (PROFILE.md, "A full store at the pace").
 * `--data-root=DIR` puts the data directories under DIR instead of .data/sweep, and counts DIR's block device: a file system mounted the way a
 * box mounts its own (ext4 with its journal, say, on a loop device) where this machine's differs;
 * `--results=NAME` writes RESULTS.NAME.md (.data/NAME.json) instead, so such a run keeps its own
 * report (journaled-ext4.sh, `npm run paced:journaled`).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { closedLoopAgent, runClosedLoop, runPaced } from './lib/closed-loop.js';
import { machineBusySeconds, machineDetails, pacedSyncLatency, waitForQuiet } from './lib/machine.js';
import { imageEventBodies, smallEventBodies } from './lib/payloads.js';
import { enginesToBench, repoRoot, ServerProcess } from './lib/store-process.js';
import { renderSweep } from './lib/sweep-report.js';
import { comparedBuild, DURABLE_FLOOR, durableFloorSystem, SYSTEMS } from './lib/systems.js';
import { blockDeviceOf, deviceWrittenBytes, treeWriteBytes } from './lib/write-counters.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const workDir = path.join(here, '.data');
const option = (name) => process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
const list = (name) => option(name)?.split(',');
const quick = process.argv.includes('--quick');
/** Where each cell's fresh data directory is made (`--data-root=DIR`), and whose block device is counted. */
const dataRoot = path.resolve(option('data-root') ?? path.join(workDir, 'sweep'));
/** Events a second offered one at a time (`--pace=R`), or undefined for the closed loops. */
const pace = option('pace') === undefined ? undefined : Number(option('pace'));
if (pace !== undefined && !(pace > 0)) throw new Error(`--pace=${option('pace')}: events a second, above 0`);

/** Seconds after the window until bytes written stop being counted (lmdb-js syncs on a thread of its own). */
const TAIL_SECONDS = 1.5;
/**
 * Seconds after the window of the second reading (`--late-check=N`), which checks that the tail
 * was long enough; 35 covers the kernel's writeback of dirty pages nobody synced (30 s).
 */
const LATE_CHECK_SECONDS = Number(option('late-check') ?? 5);
const PORT = Number(process.env.BENCH_PORT ?? 18001);

/**
 * Seconds of warm-up at the pace before a paced window. V8 optimizes a function only after many
 * calls, which at 10 events a second takes minutes: a paced window after a short warm-up measures
 * the JIT, not the system (PROFILE.md, "CPU at a pipeline's pace").
 */
const PACED_WARMUP_SECONDS = 150;
/**
 * Seconds of a paced window. At 10 events a second the store checkpoints every 200 s, when its
 * head holds CHECKPOINT_BATCH_ENTRIES (2,000) creates, sooner than INDEX_CHECKPOINT_MAX_MS (300 s;
 * docs/STORAGE.md, "When a checkpoint runs"). A 200 s window after the 150 s warm-up holds exactly
 * one, 50 s in, never at an edge: one checkpoint per 2,000 events, as on a box that runs for days.
 */
const PACED_WINDOW_SECONDS = 200;
/** Requests in flight while `--preload=S` fills a store before its warm-up. */
const PRELOAD_IN_FLIGHT = 4;

/**
 * @type {{ seconds: number, warmupSeconds: number, quietWaitSeconds: number, tailSeconds: number,
 *   lateCheckSeconds: number, preloadSeconds: number, preloadInFlight: number, pace?: number }}
 *   seconds: each measured window; quietWaitSeconds: how long each cell waits for a quiet machine
 *   before it starts anyway (0: it does not wait); preloadSeconds: how long a fresh store is filled
 *   flat out, preloadInFlight requests at a time, before its warm-up (0: not at all); pace: events
 *   a second, one at a time, when paced
 */
const plan = {
  seconds: Number(option('seconds') ?? (pace ? PACED_WINDOW_SECONDS : quick ? 3 : 8)),
  warmupSeconds: Number(option('warmup') ?? (quick ? 0.5 : pace ? PACED_WARMUP_SECONDS : 2)),
  quietWaitSeconds: quick ? 0 : 30,
  tailSeconds: TAIL_SECONDS,
  lateCheckSeconds: LATE_CHECK_SECONDS,
  preloadSeconds: Number(option('preload') ?? 0),
  preloadInFlight: PRELOAD_IN_FLIGHT,
  pace,
};
if (!(plan.lateCheckSeconds >= TAIL_SECONDS)) throw new Error(`--late-check=${option('late-check')}: at least ${TAIL_SECONDS} s`);
if (!(plan.preloadSeconds >= 0)) throw new Error(`--preload=${option('preload')}: a number of seconds, 0 or more`);
if (!(plan.warmupSeconds >= 0)) throw new Error(`--warmup=${option('warmup')}: a number of seconds, 0 or more`);
if (option('results') !== undefined && !/^[\w-]+$/.test(option('results'))) throw new Error(`--results=${option('results')}: letters, digits, - and _ only`);
if (!(plan.seconds > 0)) throw new Error(`--seconds=${option('seconds')}: a number of seconds above 0`);
const inFlight = pace ? [1] : (list('in-flight') ?? ['1', '4', '16', '50']).map(Number);
if (inFlight.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`--in-flight=${option('in-flight')}: whole numbers from 1`);
const only = list('systems');
const maxStorageMiB = option('max-storage') === undefined ? undefined : Number(option('max-storage'));
if (maxStorageMiB !== undefined && !(Number.isInteger(maxStorageMiB) && maxStorageMiB >= 1)) throw new Error(`--max-storage=${option('max-storage')}: whole MiB, 1 or more`);
/** A store system with MAX_STORAGE_BYTES set by `--max-storage`; a peer as it is. */
const withStorageLimit = (s) => (maxStorageMiB === undefined || !s.engine || s.floor ? s
  : { ...s, stack: `${s.stack}, MAX_STORAGE_BYTES=${maxStorageMiB} MiB`, server: { ...s.server, env: { ...s.server.env, MAX_STORAGE_BYTES: String(maxStorageMiB * 1024 * 1024) } } });
const unknown = (only ?? []).filter((name) => name !== DURABLE_FLOOR && !SYSTEMS.some((s) => s.name === name));
if (unknown.length > 0 || only?.length === 0) throw new Error(`--systems: unknown ${unknown.join(', ') || '(none given)'}; known: ${[...SYSTEMS.map((s) => s.name), DURABLE_FLOOR].join(', ')}`);

const log = (message) => console.log(`[sweep ${new Date().toISOString().slice(11, 19)}] ${message}`);
// edge-event-store on the engines this machine has (node:http alone where no native build loads),
// unless --systems names one that cannot run here, which stops the sweep with the reason.
const requestedEngines = only && [...new Set(SYSTEMS.filter((s) => s.engine && only.includes(s.name)).map((s) => s.engine))];
const { engines, note: engineNote } = await enginesToBench(requestedEngines?.length ? requestedEngines : undefined, log);
// The durable floor beside them (ceilings/durable-floor.js), on the store's first engine so that its
// HTTP is the store's: every system's figures are also given as a ratio to its own.
// `--compare=DIR`: another checkout's build (an older commit, say) right after this one's, by turns.
const compared = option('compare') === undefined ? [] : [comparedBuild(path.resolve(option('compare')), engines[0])];
const systems = [
  ...SYSTEMS.filter((s) => (only ? only.includes(s.name) : !s.engine || engines.includes(s.engine))),
  ...compared,
  ...(!only || only.includes(DURABLE_FLOOR) ? [durableFloorSystem(engines[0])] : []),
].map(withStorageLimit);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Mean length of `bodies` (bytes). */
const meanLength = (bodies) => bodies.reduce((n, b) => n + b.length, 0) / bodies.length;

/**
 * The workloads: a name, a label for the report and the request bodies (posted in turn).
 * @returns {Array<{ name: string, label: string, bodies: Buffer[] }>}
 */
function workloads() {
  const small = smallEventBodies(2000).map((body) => Buffer.from(body));
  const images = imageEventBodies(50);
  const all = [
    { name: 'small', label: `Small events (~${Math.round(meanLength(small))} B)`, bodies: small },
    {
      name: 'image',
      label: `Image events (one JPEG of ${images.imageBytes.toLocaleString('en-US')} B, bodies of ~${Math.round(meanLength(images.bodies.map((b) => Buffer.from(b)))).toLocaleString('en-US')} B)`,
      bodies: images.bodies.map((body) => Buffer.from(body)),
    },
  ];
  const chosen = list('workloads');
  return chosen ? all.filter((w) => chosen.includes(w.name)) : all;
}

/**
 * One cell: `system` started fresh, warmed up, then `n` requests in flight for plan.seconds.
 * @returns {Promise<import('./lib/sweep-report.js').SweepCell>}
 * @throws Error when a request fails, fewer events are stored than were acknowledged, or the
 *   server does not stop gracefully
 */
async function measureCell(system, workload, n, device) {
  const label = `${system.name} ${workload.name} x${n}`;
  const dataDir = path.join(dataRoot, `${system.name}-${workload.name}-${n}`);
  fs.rmSync(dataDir, { recursive: true, force: true });
  if (plan.quietWaitSeconds > 0 && !(await waitForQuiet({ timeoutSeconds: plan.quietWaitSeconds }))) {
    log(`${label}: the machine stayed busy with other work; measuring anyway`);
  }
  const running = await ServerProcess.start(system.server, dataDir, { port: PORT });
  const agent = closedLoopAgent(n);
  const load = { url: `${running.url}/v2/events`, bodies: workload.bodies, inFlight: n, agent, rate: pace };
  const drive = pace ? runPaced : runClosedLoop;
  let preloaded = 0;
  if (plan.preloadSeconds > 0) {
    const preloadAgent = closedLoopAgent(plan.preloadInFlight);
    const preload = await runClosedLoop({ ...load, inFlight: plan.preloadInFlight, agent: preloadAgent, seconds: plan.preloadSeconds });
    preloadAgent.destroy();
    preloaded = preload.requests;
    log(`${label}: preloaded ${preloaded} events in ${plan.preloadSeconds} s`);
  }
  const warm = await drive({ ...load, seconds: plan.warmupSeconds });

  const cpu0 = running.usage().cpuSeconds;
  const busy0 = machineBusySeconds();
  const process0 = treeWriteBytes(running.pid);
  const device0 = device ? deviceWrittenBytes(device.name) : null;
  const run = await drive({ ...load, seconds: plan.seconds });
  const serverCpuSeconds = running.usage().cpuSeconds - cpu0;
  const busy = machineBusySeconds() - busy0;
  const [load1] = os.loadavg();
  await sleep(plan.tailSeconds * 1000);
  const process1 = treeWriteBytes(running.pid);
  const device1 = device ? deviceWrittenBytes(device.name) : null;
  await sleep((plan.lateCheckSeconds - plan.tailSeconds) * 1000);
  const process2 = treeWriteBytes(running.pid);
  const device2 = device ? deviceWrittenBytes(device.name) : null;
  agent.destroy();

  const stored = await running.eventCount();
  const acknowledged = preloaded + warm.requests + run.requests;
  if (stored < acknowledged) throw new Error(`${label}: ${acknowledged} acknowledged, ${stored} stored`);
  const stopped = await running.stop();
  if (stopped.code !== 0) throw new Error(`${label}: the server did not stop gracefully: ${JSON.stringify(stopped)}\n${running.output}`);
  fs.rmSync(dataDir, { recursive: true, force: true });
  const diskAlone = pace
    ? await pacedSyncLatency({ dir: path.dirname(dataDir), bytes: Math.round(meanLength(workload.bodies)), rate: pace, seconds: plan.seconds })
    : null;

  const cell = {
    inFlight: n,
    preloaded,
    requests: run.requests,
    seconds: run.seconds,
    rate: run.rate,
    p50Ms: run.p50Ms,
    p99Ms: run.p99Ms,
    serverCpuSeconds,
    clientCpuSeconds: run.clientCpuSeconds,
    otherCpuSeconds: Math.max(0, busy - serverCpuSeconds - run.clientCpuSeconds),
    load1,
    processWrittenBytes: process1 - process0,
    deviceWrittenBytes: device ? device1 - device0 : null,
    lateProcessBytes: process2 - process1,
    lateDeviceBytes: device ? device2 - device1 : null,
    diskAlone,
  };
  const kib = (bytes) => (bytes === null ? 'n/a' : `${(bytes / cell.requests / 1024).toFixed(1)} KiB`);
  log(`${label}: ${cell.rate.toFixed(0)} events/s, p50 ${cell.p50Ms.toFixed(2)} ms, p99 ${cell.p99Ms.toFixed(2)} ms, `
    + `CPU ${((1e6 * serverCpuSeconds) / cell.requests).toFixed(0)} µs/event, written ${kib(cell.processWrittenBytes)} / ${kib(cell.deviceWrittenBytes)} per event `
    + `(late +${kib(cell.lateProcessBytes)} / +${kib(cell.lateDeviceBytes)}), other ${(cell.otherCpuSeconds / cell.seconds).toFixed(2)} cores, load ${load1.toFixed(2)}`
    + (diskAlone ? `; the disk alone after it: p50 ${diskAlone.p50Ms.toFixed(2)} ms, p99 ${diskAlone.p99Ms.toFixed(2)} ms` : ''));
  return cell;
}

async function main() {
  const started = performance.now();
  fs.mkdirSync(dataRoot, { recursive: true });
  const machine = machineDetails(dataRoot, repoRoot);
  const device = blockDeviceOf(dataRoot);
  if (!device) log('the data directory has no block device of its own: device bytes are not reported');
  const chosen = workloads();
  log(`${systems.map((s) => s.name).join(', ')}; ${chosen.map((w) => w.name).join(', ')}; ${inFlight.join(', ')} in flight; `
    + `${plan.seconds} s windows; device ${device ? `${device.name} (${device.majorMinor})` : 'n/a'}; store ${machine.store}`);
  const results = systems.map((s) => ({ name: s.name, engine: s.engine, floor: s.floor, stack: s.stack, cells: Object.fromEntries(chosen.map((w) => [w.name, []])) }));
  for (const workload of chosen) {
    for (const n of inFlight) {
      for (const [i, system] of systems.entries()) results[i].cells[workload.name].push(await measureCell(system, workload, n, device));
    }
  }
  const res = {
    machine,
    engineNote,
    systems: results,
    workloads: chosen.map(({ name, label }) => ({ name, label })),
    inFlight,
    plan,
    device,
    quick,
    argv: process.argv.slice(2),
    minutes: (performance.now() - started) / 60_000,
  };
  const name = option('results') ?? (pace ? 'paced' : 'sweep');
  // A quick run keeps its raw figures apart too, so it never replaces a full run's.
  fs.writeFileSync(path.join(workDir, `${name}${quick ? '.quick' : ''}.json`), JSON.stringify(res, null, 2));
  const report = renderSweep(res);
  const file = quick ? path.join(workDir, `RESULTS.${name}.quick.md`) : path.join(here, `RESULTS.${name}.md`);
  fs.writeFileSync(file, report);
  console.log(`\n${report}`);
  log(`written to ${path.relative(here, file)}`);
}

await main();
