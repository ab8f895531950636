#!/usr/bin/env node
/**
 * The tail of creates at 50 connections, and what the HTTP thread stalled for (issue 59, item 2):
 * the built store on a fresh data directory, wrk posting small or image events for `--seconds`
 * after a 5 s warm-up, and inside the store (lib/loop-delay.js, preloaded) the event loop's delay
 * sampled every millisecond and every GC pause, counted from the end of the warm-up.
 *
 *   npm run build && node native-bench/create-tail.js [--kind=small|image] [--seconds=20] [--engine=uws] [--runs=3] [--node-args='--max-semi-space-size=32']
 *
 * Prints one line per run: events/s, latency p50, p99, p99.9 and max (wrk), the loop delay's p99
 * and max, GC pauses (count, total, longest), CPU and bytes written (the process tree's
 * `write_bytes`) per event; then the medians of the runs.
 * Run it from another checkout's native-bench/ for a before/after of that build.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { loadAverage } from './lib/in-process-store.js';
import { writeImageEvents, writeSmallEvents } from './lib/payloads.js';
import { ServerProcess, storeCommand } from './lib/store-process.js';
import { runWrk } from './lib/wrk.js';

const option = (name, fallback) => process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const kind = option('kind', 'small');
const seconds = Number(option('seconds', '20'));
const engine = option('engine', 'uws');
const runs = Number(option('runs', '3'));
/** V8 or Node flags for the store's process, e.g. a GC setting under trial. */
const nodeArgs = option('node-args', '').split(' ').filter(Boolean);
const CONNECTIONS = 50;
const preload = pathToFileURL(path.join(path.dirname(fileURLToPath(import.meta.url)), 'lib', 'loop-delay.js')).href;

const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'create-tail-'));
const requests = kind === 'image' ? writeImageEvents(workDir) : writeSmallEvents(workDir);

/** One run on a fresh store: wrk's figures, the loop delay and GC pauses, CPU per event. */
async function run(n) {
  const running = await ServerProcess.start(storeCommand(engine), path.join(workDir, `data-${n}`), { nodeArgs: [...nodeArgs, '--import', preload] });
  try {
    await runWrk({ url: running.url, file: requests.file, mode: 'post', connections: CONNECTIONS, seconds: 5 }).result;
    process.kill(running.pid, 'SIGUSR2');
    const before = running.usage();
    const wrk = await runWrk({ url: running.url, file: requests.file, mode: 'post', connections: CONNECTIONS, seconds }).result;
    const after = running.usage();
    const cpuSeconds = after.cpuSeconds - before.cpuSeconds;
    const written = after.writtenBytes - before.writtenBytes;
    await running.stop();
    const line = /^LOOP_DELAY (.*)$/m.exec(running.output);
    if (!line) throw new Error(`no LOOP_DELAY line from the store:\n${running.output}`);
    if (wrk.errors > 0) throw new Error(`${wrk.errors} errors: ${JSON.stringify(wrk.errorsByKind)}`);
    return { ...wrk, loop: JSON.parse(line[1]), cpuUsPerEvent: (cpuSeconds * 1e6) / wrk.requests, kibPerEvent: written / 1024 / wrk.requests };
  } finally {
    if (!running.stopping) await running.stop();
  }
}

const f = (x, digits = 1) => x.toFixed(digits);
const describe = (r) => `${f(r.rate, 0)}/s, p50 ${f(r.p50Ms, 2)} ms, p99 ${f(r.p99Ms)} ms, p99.9 ${f(r.p999Ms)} ms, max ${f(r.maxMs)} ms; loop delay p99 ${f(r.loop.p99Ms)} ms, max ${f(r.loop.maxMs)} ms; GC ${r.loop.gc.count} pauses, ${f(r.loop.gc.totalMs, 0)} ms, longest ${f(r.loop.gc.maxMs)} ms (${Object.entries(r.loop.gc.byKind).map(([kind, g]) => `${kind} ${g.count}, ${f(g.totalMs, 0)} ms, longest ${f(g.maxMs)}`).join('; ')}); ${f(r.cpuUsPerEvent, 0)} µs CPU/event, ${f(r.kibPerEvent)} KiB written/event`;
const median = (values) => values.sort((a, b) => a - b)[values.length >> 1];

try {
  console.log(`${kind} events, ${CONNECTIONS} connections, ${seconds} s after a 5 s warm-up, HTTP_ENGINE=${engine}${nodeArgs.length > 0 ? `, node ${nodeArgs.join(' ')}` : ''}; load average ${loadAverage()}`);
  const results = [];
  for (let n = 0; n < runs; n++) {
    results.push(await run(n));
    console.log(`run ${n + 1}: ${describe(results[n])}`);
  }
  const pick = (get) => median(results.map(get));
  console.log(`median: ${f(pick((r) => r.rate), 0)}/s, p99 ${f(pick((r) => r.p99Ms))} ms, max ${f(pick((r) => r.maxMs))} ms; loop delay p99 ${f(pick((r) => r.loop.p99Ms))} ms, max ${f(pick((r) => r.loop.maxMs))} ms; longest GC ${f(pick((r) => r.loop.gc.maxMs))} ms; ${f(pick((r) => r.cpuUsPerEvent), 0)} µs CPU/event, ${f(pick((r) => r.kibPerEvent))} KiB written/event`);
  console.log(`load average after: ${loadAverage()}`);
} finally {
  fs.rmSync(workDir, { recursive: true, force: true });
}
