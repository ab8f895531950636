/**
 * A pipeline that drafts and finalizes (issue #28, item 1): one closed loop posts a small draft
 * event, waits for its 201, posts the event's finalize, waits for its 200, and again. Reports
 * pairs a second, p50 and p99 of each request, and per pair the server's CPU (utime + stime over
 * its process tree), its `write_bytes` and the data directory's block device's bytes written
 * (/proc/diskstats), both up to TAIL_SECONDS after the window. The peers have no drafts, so only
 * edge-event-store runs: this build, and with `--compare=DIR` another checkout's build (its
 * `dist/`, e.g. a worktree of an older commit), by turns, so both come from the same minutes.
 *
 * Run: `node draft-finalize.js [--seconds=12] [--rounds=2] [--compare=DIR]`. Prints a Markdown
 * table, and writes it to RESULTS.drafts.md when the machine was quiet before the run.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { closedLoopAgent, post, quantile } from './lib/closed-loop.js';
import { machineBusySeconds, waitForQuiet } from './lib/machine.js';
import { smallEventBodies } from './lib/payloads.js';
import { repoRoot, ServerProcess } from './lib/store-process.js';
import { blockDeviceOf, deviceWrittenBytes } from './lib/write-counters.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const option = (name) => process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);
const seconds = Number(option('seconds') ?? 12);
const rounds = Number(option('rounds') ?? 2);
const builds = [repoRoot, ...(option('compare') ? [path.resolve(option('compare'))] : [])];
const WARMUP_SECONDS = 2;
/** Written after the window that still counts (a checkpoint, lmdb-js's flush). */
const TAIL_SECONDS = 1.5;

const drafts = smallEventBodies(500).map((body) => Buffer.from(JSON.stringify({ ...JSON.parse(body), draft: true })));

/** Drafts and finalizes for `windowSeconds`; latencies in ms. */
async function pairs(url, agent, windowSeconds) {
  const creates = [];
  const finalizes = [];
  const deadline = performance.now() + windowSeconds * 1000;
  for (let i = 0; performance.now() < deadline; i++) {
    const created = await post(agent, `${url}/v2/events`, drafts[i % drafts.length]);
    creates.push(created.ms);
    finalizes.push((await post(agent, `${url}/v2/events/${JSON.parse(created.body).id}/finalize`, Buffer.alloc(0), 200)).ms);
  }
  return { creates: creates.sort((a, b) => a - b), finalizes: finalizes.sort((a, b) => a - b) };
}

/** One window on `build`'s server, on a fresh data directory. */
async function measure(build) {
  const dataDir = fs.mkdtempSync(path.join(here, '.data', 'drafts-'));
  const device = blockDeviceOf(dataDir);
  const server = { command: process.execPath, args: [path.join(build, 'dist', 'src', 'cli.js'), 'serve'], cwd: build, env: { HOST: '127.0.0.1', LOG_LEVEL: 'warn', API_KEY: '' } };
  const running = await ServerProcess.start(server, dataDir);
  const agent = closedLoopAgent(1);
  try {
    await pairs(running.url, agent, WARMUP_SECONDS);
    await new Promise((resolve) => setTimeout(resolve, TAIL_SECONDS * 1000));
    const before = { usage: running.usage(), device: device && deviceWrittenBytes(device.name), busy: machineBusySeconds() };
    const started = performance.now();
    const { creates, finalizes } = await pairs(running.url, agent, seconds);
    const elapsed = (performance.now() - started) / 1000;
    await new Promise((resolve) => setTimeout(resolve, TAIL_SECONDS * 1000));
    const after = { usage: running.usage(), device: device && deviceWrittenBytes(device.name), busy: machineBusySeconds() };
    const n = creates.length;
    return {
      commit: execFileSync('git', ['-C', build, 'log', '-1', '--format=%h'], { encoding: 'utf8' }).trim(),
      pairsPerSecond: n / elapsed,
      create: [quantile(creates, 0.5), quantile(creates, 0.99)],
      finalize: [quantile(finalizes, 0.5), quantile(finalizes, 0.99)],
      cpuMsPerPair: ((after.usage.cpuSeconds - before.usage.cpuSeconds) * 1000) / n,
      processBytesPerPair: (after.usage.writtenBytes - before.usage.writtenBytes) / n,
      deviceBytesPerPair: device ? (after.device - before.device) / n : null,
      otherCores: (after.busy - before.busy - (after.usage.cpuSeconds - before.usage.cpuSeconds)) / (elapsed + 2 * TAIL_SECONDS),
      load: os.loadavg()[0],
    };
  } finally {
    agent.destroy();
    await running.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

fs.mkdirSync(path.join(here, '.data'), { recursive: true });
const quiet = await waitForQuiet();
const rows = [];
for (let round = 0; round < rounds; round++) for (const build of builds) rows.push(await measure(build));

const ms = (v) => `${v.toFixed(2)} ms`;
const kb = (v) => (v === null ? 'n/a' : `${(v / 1024).toFixed(1)} KiB`);
const table = [
  '| Build | pairs/s | create p50 / p99 | finalize p50 / p99 | CPU / pair | written / pair, process / device | other work, load |',
  '|---|---:|---:|---:|---:|---:|---:|',
  ...rows.map((r) => `| ${r.commit} | ${r.pairsPerSecond.toFixed(0)} | ${ms(r.create[0])} / ${ms(r.create[1])} | ${ms(r.finalize[0])} / ${ms(r.finalize[1])} | ${r.cpuMsPerPair.toFixed(2)} ms | ${kb(r.processBytesPerPair)} / ${kb(r.deviceBytesPerPair)} | ${r.otherCores.toFixed(2)} cores, ${r.load.toFixed(2)} |`),
].join('\n');
const report = `# A pipeline that drafts and finalizes

Written by \`node draft-finalize.js\` (native-bench/draft-finalize.js) on ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, Node ${process.version},
${seconds} s windows after a ${WARMUP_SECONDS} s warm-up, ${rounds} rounds, builds by turns. One loop: post a small draft event, wait for its 201, post
its finalize, wait for its 200. Written bytes and CPU count up to ${TAIL_SECONDS} s after each window; "other work" is the machine's busy
CPU minus the server's over the window (the client included), load the 1-minute average at the window's end.

${table}
`;
console.log(report);
if (quiet) fs.writeFileSync(path.join(here, 'RESULTS.drafts.md'), report);
else console.log('The machine was not quiet before the run: RESULTS.drafts.md is left as it was.');
