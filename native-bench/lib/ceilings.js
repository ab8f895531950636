/**
 * The machine's limits, measured by the same run as the systems: the HTTP ceiling of
 * each engine (a hello-world POST of a small-event body), the CPU ceiling of an image event
 * (JSON.parse plus base64 decode of its body, one thread) and the disk ceiling (sequential
 * writes with fdatasync, in lib/machine.js).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ServerProcess } from './store-process.js';
import { runWrk } from './wrk.js';

const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const hello = (engine) => ({ command: process.execPath, args: [path.join(here, 'ceilings', 'http-hello.js')], cwd: here, env: { HTTP_ENGINE: engine } });

/**
 * POSTs the small-event bodies of `requestsFile` to ceilings/http-hello.js on `engine` with wrk.
 * @param {{ requestsFile: string, connections: number, seconds: number, warmupSeconds: number, port: number, dataDir: string, engine?: 'uws' | 'node' }} options
 *   engine: uws (default) or node
 * @returns {Promise<import('./wrk.js').WrkResult & { serverCpuSeconds: number }>} requests per second in `rate`
 */
export async function httpCeiling({ requestsFile, connections, seconds, warmupSeconds, port, dataDir, engine = 'uws' }) {
  const server = await ServerProcess.start(hello(engine), dataDir, { port });
  try {
    const load = { url: server.url, file: requestsFile, mode: 'post', connections };
    await runWrk({ ...load, seconds: warmupSeconds }).result;
    const before = server.usage().cpuSeconds;
    const run = await runWrk({ ...load, seconds }).result;
    if (run.errors > 0) throw new Error(`http ceiling: ${run.errors} requests failed`);
    return { ...run, serverCpuSeconds: server.usage().cpuSeconds - before };
  } finally {
    await server.stop();
  }
}

/**
 * JSON.parse of an image-event body and base64 decode of its image, in a loop on this thread
 * for `seconds`: what one core can do before anything is stored.
 * @param {string} requestsFile image-event bodies, one per line (the first is used)
 * @returns {{ eventsPerSecond: number, mbPerSecond: number, bodyBytes: number }} MB = 10^6 bytes of request body
 */
export function cpuCeiling(requestsFile, seconds) {
  const body = fs.readFileSync(requestsFile, 'utf8').split('\n', 1)[0];
  const bodyBytes = Buffer.byteLength(body);
  let decodedBytes = 0;
  const decode = () => {
    const event = JSON.parse(body);
    decodedBytes += Buffer.from(event.images[0].base64Image, 'base64').length;
  };
  for (let i = 0; i < 200; i++) decode(); // warm-up: let V8 optimise
  let events = 0;
  const started = performance.now();
  const until = started + seconds * 1000;
  while (performance.now() < until) {
    for (let i = 0; i < 20; i++) decode();
    events += 20;
  }
  const elapsed = (performance.now() - started) / 1000;
  if (decodedBytes === 0) throw new Error('cpu ceiling: nothing decoded');
  return { eventsPerSecond: events / elapsed, mbPerSecond: (events * bodyBytes) / 1e6 / elapsed, bodyBytes };
}
