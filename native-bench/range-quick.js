#!/usr/bin/env node
/**
 * A few seconds of the bench's Range workload (bench.js, step 5: 1 MiB Range GETs at 200 seeded
 * offsets into a 100 MB video, 10 connections, wrk), per HTTP engine, with the store's CPU per
 * answer: a quick before/after check that a busy machine can run (CPU per answer moves less
 * with the machine's load than MB/s does). Not the bench: state the load with the figures.
 *
 *   npm run build && node native-bench/range-quick.js [seconds=4] [engines] [runs=1]
 *
 * `engines` (e.g. `uws,node`) defaults to every engine this machine can bench, as bench.js and
 * sweep.js choose them (lib/store-process.js `enginesToBench`): node:http alone where no native
 * uWebSockets.js build loads (Node 24 on glibc older than 2.38), said in one line first; an engine
 * that cannot run here stops it with the reason, never a stack trace.
 *
 * STORE_DIST=<dir> runs another build's `cli.js` (its `dist/src`, e.g. a copy of an older
 * commit's) for before/after figures taken minutes apart.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeRangeRequests } from './lib/payloads.js';
import { enginesToBench, ServerProcess, storeCommand } from './lib/store-process.js';
import { SYSTEMS } from './lib/systems.js';
import { runWrk } from './lib/wrk.js';
import { writeVideoFile } from './uploads.js';

const seconds = Number(process.argv[2] ?? 4);
const { engines } = await enginesToBench(process.argv[3]?.split(','), (line) => console.error(line));
const runs = Number(process.argv[4] ?? 1);
const VIDEO_BYTES = 100_000_000;
const CONNECTIONS = 10;

const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'range-quick-'));
const load = () => os.loadavg().map((l) => l.toFixed(1)).join(' ');
try {
  const videoFile = path.join(workDir, 'video.mp4');
  writeVideoFile(videoFile, VIDEO_BYTES);
  for (const engine of engines) {
    const server = storeCommand(engine);
    if (process.env.STORE_DIST) server.args = [path.join(path.resolve(process.env.STORE_DIST), 'cli.js'), 'serve'];
    const running = await ServerProcess.start(server, path.join(workDir, engine));
    try {
      const system = SYSTEMS.find((s) => s.engine === engine);
      const route = await system.placeVideo(running, videoFile);
      const requests = writeRangeRequests(workDir, engine, route, VIDEO_BYTES);
      const check = await fetch(`${running.url}${route}`, { headers: { Range: 'bytes=1000-1999' } });
      const expected = fs.readFileSync(videoFile).subarray(1000, 2000);
      if (check.status !== 206 || !Buffer.from(await check.arrayBuffer()).equals(expected)) throw new Error(`${engine}: wrong 206`);
      await runWrk({ url: running.url, file: requests.file, mode: 'range', connections: CONNECTIONS, seconds: 1 }).result;
      for (let i = 0; i < runs; i++) {
        const before = running.usage();
        const loadBefore = load();
        const run = await runWrk({ url: running.url, file: requests.file, mode: 'range', connections: CONNECTIONS, seconds }).result;
        const after = running.usage();
        const cpuMs = ((after.cpuSeconds - before.cpuSeconds) * 1000) / run.requests;
        const mainMs = ((after.mainThreadCpuSeconds - before.mainThreadCpuSeconds) * 1000) / run.requests;
        console.log(`${engine}: ${(run.bytes / 1e6 / run.seconds).toFixed(0)} MB/s, ${run.rate.toFixed(0)} answers/s, p99 ${run.p99Ms.toFixed(1)} ms, `
          + `store CPU ${cpuMs.toFixed(3)} ms per answer (main thread ${mainMs.toFixed(3)}), errors ${run.errors}; load ${loadBefore} -> ${load()}`);
      }
    } finally {
      await running.stop();
    }
  }
} finally {
  fs.rmSync(workDir, { recursive: true, force: true });
}
