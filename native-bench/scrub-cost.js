#!/usr/bin/env node
/**
 * What the scrub of the log costs (issue 70's target: at the default SCRUB_PASS_HOURS, at most 1%
 * of a core and 1% of the disk's bandwidth on a store of 1,000,000 events; docs/STORAGE.md, "The
 * scrub"). A store of `--events` small events (the bench's bodies, through the create path, 500 at
 * a time) is made under `--dir` (default the OS temp dir: put it on the disk to judge), then:
 *
 * 1. one whole pass with the page cache dropped first (as root): CPU, wall time, bytes read from
 *    the device (`/proc/self/io` `read_bytes`);
 * 2. `--steps` steps at the default pace (`scrubStepBytes` of the log at 168 hours), back to back:
 *    CPU per step, which the worker takes once a second.
 *
 *   npm run build && node native-bench/scrub-cost.js --events 1000000
 *
 * Prints the figures, the share of a core and of a 10 MB/s card's reads at the default pace (the
 * pass's device reads per byte of log, the index's pages included, at the pace's bytes of log a
 * second), and the load. Recorded results: RESULTS.scrub.md.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { BENCH_STORE_OPTIONS, EventStore, fillStore, loadAverage, loadModule } from './lib/in-process-store.js';

const { values } = parseArgs({ options: { events: { type: 'string', default: '1000000' }, steps: { type: 'string', default: '600' }, dir: { type: 'string', default: os.tmpdir() } } });
const events = Number(values.events);
const { loadConfig } = await loadModule('config.js');
const { smallEventBodies } = await loadModule('bench/payloads.js');
const { LifecycleStore, LogScrub } = await loadModule('store/index.js');
const { scrubStepBytes, SCRUB_MIN_STEP_BYTES, SCRUB_STEP_MS } = await loadModule('lifecycle/scrub-runner.js');

/** Bytes this process read from the block device so far (`/proc/self/io` `read_bytes`). */
const deviceReads = () => Number(/read_bytes: (\d+)/.exec(fs.readFileSync('/proc/self/io', 'utf8'))?.[1] ?? 0);
const cpuMs = (since) => {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000;
};

const dataDir = fs.mkdtempSync(path.join(values.dir, 'scrub-cost-'));
try {
  console.log(`scrub-cost: ${events.toLocaleString('en-US')} small events into ${dataDir}; load ${loadAverage()}`);
  const bodies = smallEventBodies(2000).map((text) => JSON.parse(text));
  const store = await EventStore.open(dataDir, BENCH_STORE_OPTIONS);
  const seconds = await fillStore({ store, config: loadConfig({ DATA_DIR: dataDir }) }, events, (i) => bodies[i % bodies.length]);
  await store.close();
  console.log(`  made in ${seconds.toFixed(0)} s`);

  const lifecycle = LifecycleStore.open(dataDir, BENCH_STORE_OPTIONS, () => undefined);
  const scrub = new LogScrub(lifecycle, async () => {
    throw new Error('the scrub found damage in a sound log');
  }, (finding) => console.log('  finding:', finding));
  const logBytes = scrub.logBytes();
  try {
    fs.writeFileSync('/proc/sys/vm/drop_caches', '3');
  } catch {
    console.log('  (page cache not dropped: not root)');
  }
  const reads = deviceReads();
  const cpu = process.cpuUsage();
  const wall = performance.now();
  while (scrub.status.passes === 0) await scrub.step(64 * 1024 * 1024);
  const passCpu = cpuMs(cpu);
  const passReads = deviceReads() - reads;
  console.log(`  one pass over ${(logBytes / 2 ** 20).toFixed(1)} MiB: ${(passCpu / 1000).toFixed(2)} s CPU, ${((performance.now() - wall) / 1000).toFixed(2)} s, ${passReads / 2 ** 20 | 0} MiB read from the device`);

  // At the default pace a step reads a tick's share, or SCRUB_MIN_STEP_BYTES every so many ticks.
  const perTick = scrubStepBytes(logBytes, 168);
  const budget = Math.max(perTick, Math.min(SCRUB_MIN_STEP_BYTES, logBytes));
  const ticksPerStep = budget / perTick;
  const steps = Number(values.steps);
  const stepCpu = process.cpuUsage();
  for (let i = 0; i < steps; i++) await scrub.step(budget);
  const perStep = cpuMs(stepCpu) / steps;
  // The device reads of the pass per byte of log (the index's pages it compares with come too), at the pace.
  const bytesPerSecond = perTick * (1000 / SCRUB_STEP_MS) * Math.max(1, passReads / logBytes);
  console.log(`  default pace (168 h): ${perTick.toLocaleString('en-US')} bytes a second, a step of ${budget.toLocaleString('en-US')} bytes every ${(ticksPerStep * SCRUB_STEP_MS / 1000).toFixed(0)} s, ${perStep.toFixed(3)} ms CPU a step`);
  console.log(`  share of a core: ${((perStep / (ticksPerStep * SCRUB_STEP_MS)) * 100).toFixed(5)}%; device reads ${(bytesPerSecond / 1024).toFixed(2)} KiB/s (the pass's per byte of log), ${((bytesPerSecond / 10e6) * 100).toFixed(5)}% of a 10 MB/s card`);
  console.log(`  whole pass at the default pace: ${(passCpu / (168 * 3600 * 1000) * 100).toFixed(5)}% of a core for the reading and checking alone; load ${loadAverage()}`);
  await lifecycle.close();
} finally {
  fs.rmSync(dataDir, { recursive: true, force: true });
}
