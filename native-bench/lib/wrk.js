/**
 * Runs wrk (C, one thread: light beside the server on a 2-core box) with requests.lua, which
 * replays a file of pre-generated requests round-robin and prints one `BENCH {json}` line.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { childrenCpuSeconds } from './store-process.js';

const SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'requests.lua');

/**
 * @typedef {object} WrkResult
 * @property {number} requests completed requests
 * @property {number} seconds measured duration
 * @property {number} rate requests per second
 * @property {number} bytes response bytes received (headers included)
 * @property {number} p50Ms
 * @property {number} p90Ms
 * @property {number} p99Ms
 * @property {number} p999Ms
 * @property {number} maxMs
 * @property {number} errors socket errors, timeouts and HTTP statuses >= 400
 * @property {Record<string, number>} errorsByKind connect, read, write, status (>= 400), timeout
 * @property {number} wrkCpuSeconds CPU seconds the load generator itself used
 */

/** wrk runs started by this process: each gets its own tag, the prefix of post-ids mode's ids. */
let runs = 0;

/**
 * Runs one wrk load.
 * @param {object} load
 * @param {string} load.url base URL of the store
 * @param {string} load.file requests file (one JSON body or one path per line)
 * @param {'post' | 'post-ids' | 'get' | 'range'} load.mode POST bodies to /v2/events (post-ids: with an id unique
 *   to each request in each body's slot, see requests.lua), GET the paths, or GET the paths with their Range headers
 * @param {number} load.connections
 * @param {number} load.seconds run length; the run may be cut short with `stop()` on the handle
 * @returns {{ result: Promise<WrkResult>, stop: () => void }}
 */
export function runWrk({ url, file, mode, connections, seconds }) {
  const cpuBefore = childrenCpuSeconds();
  runs += 1;
  const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--timeout', '10s', '-s', SCRIPT, url, '--', file, mode, `run${process.pid}.${runs}`];
  const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const kill = () => child.kill('SIGKILL');
  process.once('exit', kill);
  child.on('close', () => process.off('exit', kill));
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const result = new Promise((resolve, reject) => {
    child.on('error', (err) => reject(new Error(`cannot run wrk (${err.message}): run sh setup.sh`)));
    child.on('close', (code) => {
      const line = /^BENCH (\{.*\})$/m.exec(output);
      if (code !== 0 || !line) {
        reject(new Error(`wrk ${args.join(' ')} failed (exit ${code}):\n${output}`));
        return;
      }
      const r = JSON.parse(line[1]);
      const seconds = r.duration_us / 1e6;
      const ms = (us) => us / 1000;
      resolve({
        requests: r.requests,
        seconds,
        rate: r.requests / seconds,
        bytes: r.bytes,
        p50Ms: ms(r.p50_us),
        p90Ms: ms(r.p90_us),
        p99Ms: ms(r.p99_us),
        p999Ms: ms(r.p999_us),
        maxMs: ms(r.max_us),
        errors: Object.values(r.errors).reduce((a, b) => a + b, 0),
        errorsByKind: r.errors,
        wrkCpuSeconds: childrenCpuSeconds() - cpuBefore,
      });
    });
  });
  // wrk reports what it measured so far when interrupted.
  return { result, stop: () => child.kill('SIGINT') };
}
