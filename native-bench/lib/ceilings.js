/**
 * The machine's limits, measured by the same run as the systems: the HTTP ceiling of
 * each engine (a hello-world POST of a small-event body), the no-storage ceiling of each engine
 * (the store's own create path with nothing stored, for small and image events), the durable floor
 * of each engine (the body appended and fdatasync'd, nothing else: ceilings/durable-floor.js), the CPU ceiling
 * of an image event (JSON.parse plus base64 decode of its body, one thread) and the disk ceiling
 * (sequential writes with fdatasync, in lib/machine.js).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ServerProcess, storeCommand } from './store-process.js';
import { runWrk } from './wrk.js';

const here = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const hello = (engine) => ({ command: process.execPath, args: [path.join(here, 'ceilings', 'http-hello.js')], cwd: here, env: { HTTP_ENGINE: engine } });
/** ceilings/no-storage.js with the settings the bench gives the store (lib/store-process.js). */
const noStorage = (engine) => ({ ...storeCommand(engine), args: [path.join(here, 'ceilings', 'no-storage.js')], cwd: here });
/** ceilings/durable-floor.js, likewise. */
const durableFloor = (engine) => ({ ...storeCommand(engine), args: [path.join(here, 'ceilings', 'durable-floor.js')], cwd: here });
const firstBody = (requestsFile) => fs.readFileSync(requestsFile, 'utf8').split('\n', 1)[0];

/**
 * @typedef {object} CeilingOptions
 * @property {string} requestsFile create bodies, one per line (lib/payloads.js)
 * @property {number} connections
 * @property {number} seconds
 * @property {number} warmupSeconds
 * @property {number} port
 * @property {string} dataDir given to the server, which writes nothing there
 * @property {'uws' | 'node'} [engine] uws (default) or node
 */

/**
 * Starts `server`, runs `check` on it, then POSTs the bodies of `requestsFile` with wrk: a warm-up,
 * then the measured run.
 * @returns {Promise<import('./wrk.js').WrkResult & { connections: number, serverCpuSeconds: number, writtenBytes: number }>}
 *   serverCpuSeconds and writtenBytes (bytes passed to write calls, `wchar`, as bench.js counts the systems') over the measured run
 */
async function serverCeiling(server, { requestsFile, connections, seconds, warmupSeconds, port, dataDir }, check = async () => undefined) {
  const running = await ServerProcess.start(server, dataDir, { port });
  try {
    await check(running);
    const load = { url: running.url, file: requestsFile, mode: 'post', connections };
    await runWrk({ ...load, seconds: warmupSeconds }).result;
    const before = running.usage();
    const run = await runWrk({ ...load, seconds }).result;
    if (run.errors > 0) throw new Error(`${server.args.at(-1)}: ${run.errors} requests failed: ${JSON.stringify(run.errorsByKind)}`);
    const after = running.usage();
    return { ...run, connections, serverCpuSeconds: after.cpuSeconds - before.cpuSeconds, writtenBytes: after.writtenBytes - before.writtenBytes };
  } finally {
    await running.stop();
  }
}

/**
 * POSTs the small-event bodies of `requestsFile` to ceilings/http-hello.js on `engine` with wrk.
 * @param {CeilingOptions} options
 * @returns {Promise<import('./wrk.js').WrkResult & { serverCpuSeconds: number }>} requests per second in `rate`
 */
export function httpCeiling({ engine = 'uws', ...options }) {
  return serverCeiling(hello(engine), options);
}

/**
 * POSTs the create bodies of `requestsFile` to ceilings/no-storage.js on `engine` with wrk, after
 * checking that the first body is answered as the store answers a create (201, an id, one image
 * id per image).
 * @param {CeilingOptions} options
 * @returns {Promise<import('./wrk.js').WrkResult & { serverCpuSeconds: number }>} creates per second in `rate`
 */
export function noStorageCeiling({ engine = 'uws', ...options }) {
  return serverCeiling(noStorage(engine), options, async (running) => {
    const body = firstBody(options.requestsFile);
    const response = await fetch(`${running.url}/v2/events`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
    const answer = await response.json();
    const images = JSON.parse(body).images.filter((image) => image.base64Image).length;
    if (response.status !== 201 || typeof answer.id !== 'string' || answer.image_ids?.length !== images) {
      throw new Error(`no-storage ceiling answered ${response.status} ${JSON.stringify(answer)}`);
    }
  });
}

/**
 * POSTs the create bodies of `requestsFile` to ceilings/durable-floor.js on `engine` with wrk,
 * after checking that it answers the first one 201 with an id.
 * @param {CeilingOptions} options dataDir: where the floor writes its file
 * @returns {Promise<import('./wrk.js').WrkResult & { serverCpuSeconds: number, writtenBytes: number, engine: string }>}
 *   creates per second in `rate`; the engine it ran on
 */
export async function durableFloorCeiling({ engine = 'uws', ...options }) {
  const run = await serverCeiling(durableFloor(engine), options, async (running) => {
    const response = await fetch(`${running.url}/v2/events`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: firstBody(options.requestsFile) });
    const answer = await response.json();
    if (response.status !== 201 || typeof answer.id !== 'string') throw new Error(`durable floor answered ${response.status} ${JSON.stringify(answer)}`);
  });
  return { ...run, engine };
}

/**
 * JSON.parse of an image-event body and base64 decode of its image, in a loop on this thread
 * for `seconds`: what one core can do before anything is stored.
 * @param {string} requestsFile image-event bodies, one per line (the first is used)
 * @returns {{ eventsPerSecond: number, mbPerSecond: number, bodyBytes: number }} MB = 10^6 bytes of request body
 */
export function cpuCeiling(requestsFile, seconds) {
  const body = firstBody(requestsFile);
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
