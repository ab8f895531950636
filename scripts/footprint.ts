/**
 * `npm run footprint`: the figures of docs/OPERATIONS.md, "Footprint", on this machine:
 * - start-up: from spawning `edge-events serve` to its `READY=1` on a unix datagram socket named by
 *   NOTIFY_SOCKET (what `systemctl start` waits for under `Type=notify`), `--starts` runs on the
 *   same DATA_DIR (the first one creates it), median;
 * - memory: VmRSS and VmHWM of /proc/<pid>/status (proc(5)) after `--idle-seconds` idle, then
 *   after `--load-seconds` of native-bench's small events posted by `--in-flight` Node fetch loops.
 * Every figure comes with the 1-minute load average (other work on the machine skews it).
 *
 * Options: `--command PATH` the `edge-events` to run (default: this checkout's dist/src/cli.js,
 * e.g. /usr/bin/edge-events of the .deb), `--node PATH` (default: this Node), `--starts 7`,
 * `--idle-seconds 5`, `--load-seconds 5`, `--in-flight 4`. Environment: passed on (HTTP_ENGINE...).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { cliPath } from './lib/spawned-store.js';

const require = createRequire(import.meta.url);
const { DgramSocket } = require('node-unix-socket') as { DgramSocket: new () => NodeJS.EventEmitter & { bind(socketPath: string): void; close(): void } };

/** `load 1.23` (the 1-minute load average) on 2 cores. */
const load = (): string => `load ${os.loadavg()[0]!.toFixed(2)} on ${os.cpus().length} cores`;

/** VmRSS and VmHWM of `pid` in MB. */
function memory(pid: number): { rssMB: number; hwmMB: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kB = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status)?.[1]);
  return { rssMB: (kB('VmRSS') * 1024) / 1e6, hwmMB: (kB('VmHWM') * 1024) / 1e6 };
}

interface Started {
  child: ChildProcess;
  port: number;
  readyMs: number;
}

/** Spawns the store and waits for READY=1 on `socket`; the time is from spawn to the datagram. */
async function startStore(node: string, command: string, env: NodeJS.ProcessEnv, socket: NodeJS.EventEmitter): Promise<Started> {
  const ready = new Promise<{ at: number; status: string }>((resolve) => {
    const onData = (buf: Buffer) => {
      const text = buf.toString();
      if (!/^READY=1$/m.test(text)) return;
      socket.off('data', onData);
      resolve({ at: performance.now(), status: /^STATUS=(.*)$/m.exec(text)?.[1] ?? '' });
    };
    socket.on('data', onData);
  });
  const began = performance.now();
  const child = spawn(node, [command, 'serve'], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  const exited = once(child, 'exit').then(([code]) => {
    throw new Error(`the store exited with ${code} before READY=1`);
  });
  const { at, status } = await Promise.race([ready, exited]);
  const port = Number(/port (\d+)/.exec(status)?.[1]);
  return { child, port, readyMs: at - began };
}

async function stop(child: ChildProcess): Promise<void> {
  child.kill('SIGTERM');
  await once(child, 'exit');
}

/** Posts `bodies` in turn from `inFlight` loops for `seconds`; resolves with the creates answered 201. */
async function smallEventLoad(port: number, bodies: string[], inFlight: number, seconds: number): Promise<number> {
  const until = performance.now() + seconds * 1000;
  let next = 0;
  let created = 0;
  const loop = async () => {
    while (performance.now() < until) {
      const body = bodies[next++ % bodies.length]!;
      const res = await fetch(`http://127.0.0.1:${port}/v2/events`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      await res.arrayBuffer();
      if (res.status === 201) created += 1;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, loop));
  return created;
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      command: { type: 'string' }, node: { type: 'string' }, starts: { type: 'string' },
      'idle-seconds': { type: 'string' }, 'load-seconds': { type: 'string' }, 'in-flight': { type: 'string' },
    },
  });
  const node = values.node ?? process.execPath;
  const command = values.command ?? cliPath;
  const starts = Number(values.starts ?? 7);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'edge-events-footprint-'));
  const socket = new DgramSocket();
  try {
    const socketPath = path.join(work, 'notify');
    socket.bind(socketPath);
    const env = { ...process.env, PORT: '0', HOST: '127.0.0.1', DATA_DIR: path.join(work, 'data'), NOTIFY_SOCKET: socketPath, LOG_LEVEL: 'warn' };
    console.log(`${command} on ${node} (${(await run(node, ['--version'])).trim()})`);

    const times: number[] = [];
    for (let i = 0; i < starts; i++) {
      const started = await startStore(node, command, env, socket);
      times.push(started.readyMs);
      console.log(`start ${i + 1}: spawn to READY=1 ${started.readyMs.toFixed(0)} ms (${load()})`);
      await stop(started.child);
    }
    console.log(`start-up: median ${median(times).toFixed(0)} ms of ${starts} (first, creating DATA_DIR: ${times[0]!.toFixed(0)} ms)`);

    const store = await startStore(node, command, env, socket);
    try {
      await sleep(Number(values['idle-seconds'] ?? 5) * 1000);
      const idle = memory(store.child.pid!);
      console.log(`idle: VmRSS ${idle.rssMB.toFixed(1)} MB, VmHWM ${idle.hwmMB.toFixed(1)} MB (${load()})`);
      const payloads = (await import(new URL('../../native-bench/lib/payloads.js', import.meta.url).href)) as { smallEventBodies: (count: number) => string[] };
      const seconds = Number(values['load-seconds'] ?? 5);
      const inFlight = Number(values['in-flight'] ?? 4);
      const created = await smallEventLoad(store.port, payloads.smallEventBodies(2000), inFlight, seconds);
      const loaded = memory(store.child.pid!);
      console.log(`after ${seconds} s of small events, ${inFlight} in flight (${created} created, ${Math.round(created / seconds)}/s): VmRSS ${loaded.rssMB.toFixed(1)} MB, VmHWM ${loaded.hwmMB.toFixed(1)} MB (${load()})`);
    } finally {
      await stop(store.child);
    }
  } finally {
    socket.close();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/** `command args` stdout. */
async function run(command: string, args: string[]): Promise<string> {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  await once(child, 'exit');
  return out;
}

main().catch((err: unknown) => {
  console.error(`footprint failed: ${(err as Error).message}`);
  console.error('hint: build first (npm run build); --command names an edge-events that runs `serve`');
  process.exitCode = 1;
});
