/**
 * Upload benchmark: streamed multipart video uploads into drafts, measured as upload
 * throughput (MB/s of file bytes, durable and attached when the 201 arrives) and the server's
 * peak RSS growth over its idle RSS, for
 *   - one 1 GiB video streamed at full speed (chunked transfer encoding: the uWebSockets.js build
 *     in use refuses a Content-Length of ten digits), and
 *   - 20 concurrent 50 MB uploads.
 * Targets: >= 500 MB/s for the single upload; peak RSS growth < 64 MiB in both runs.
 *
 * Run: `node uploads.js [--quick] [--engine=uws|node]` (after `npm run build` in the repository);
 * writes RESULTS.uploads.md.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeResults } from './lib/side-results.js';
import { repoRoot, StoreProcess } from './lib/store-process.js';

const MiB = 1024 * 1024;
const CHUNK = Buffer.alloc(MiB, 0x5a);
const VIDEO_HEAD = fs.readFileSync(path.join(repoRoot, 'test', 'fixtures', 'cat-zoom.mp4'));

function residentBytes(pid) {
  const match = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match[1]) * 1024;
}

/** Resets VmHWM to the current RSS (Linux: write 5 to /proc/<pid>/clear_refs). */
function resetPeak(pid) {
  fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
}

function peakBytes(pid) {
  const match = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match[1]) * 1024;
}

export async function createDraft(store) {
  const response = await fetch(`${store.url}/v2/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ inference_timestamp: new Date().toISOString(), event_schema: 'custom', event_data: {}, draft: true }),
  });
  if (response.status !== 201) throw new Error(`draft: ${response.status} ${await response.text()}`);
  return (await response.json()).id;
}

/**
 * Writes the same bytes `upload` sends as a file of its own (the video the Range workload
 * downloads from every system).
 */
export function writeVideoFile(file, bytes) {
  const fd = fs.openSync(file, 'w');
  fs.writeSync(fd, VIDEO_HEAD);
  for (let written = VIDEO_HEAD.length; written < bytes; written += CHUNK.length) {
    fs.writeSync(fd, CHUNK, 0, Math.min(CHUNK.length, bytes - written));
  }
  fs.closeSync(fd);
}

/**
 * Streams one multipart upload of `bytes` file bytes (a real MP4 head, then filler) to draft
 * `eventId`, writing as fast as the socket takes it.
 * @returns the attach response
 */
export function upload(store, eventId, bytes, { chunked }) {
  const boundary = 'edge-bench-boundary';
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="clip.mp4"\r\nContent-Type: video/mp4\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const { port } = new URL(store.url);
  return new Promise((resolve, reject) => {
    const request = http.request({
      host: '127.0.0.1', port, method: 'POST', path: `/v2/events/${eventId}/videos`,
      headers: {
        'content-type': `multipart/form-data; boundary=${boundary}`,
        ...(chunked ? { 'transfer-encoding': 'chunked' } : { 'content-length': head.length + bytes + tail.length }),
      },
    }, (response) => {
      let text = '';
      response.on('data', (d) => (text += d));
      response.on('end', () => (response.statusCode === 201 ? resolve(JSON.parse(text)) : reject(new Error(`upload: ${response.statusCode} ${text}`))));
    });
    request.on('error', reject);
    request.write(head);
    request.write(VIDEO_HEAD);
    let sent = VIDEO_HEAD.length;
    const pump = () => {
      while (sent < bytes) {
        const piece = Math.min(CHUNK.length, bytes - sent);
        sent += piece;
        if (!request.write(piece === CHUNK.length ? CHUNK : CHUNK.subarray(0, piece))) {
          request.once('drain', pump);
          return;
        }
      }
      request.end(tail);
    };
    pump();
  });
}

/** One measured run: `count` concurrent uploads of `bytes` each. */
async function run(store, name, count, bytes, options) {
  const drafts = await Promise.all(Array.from({ length: count }, () => createDraft(store)));
  await new Promise((r) => setTimeout(r, 500));
  const idle = residentBytes(store.pid);
  resetPeak(store.pid);
  const started = performance.now();
  const attached = await Promise.all(drafts.map((id) => upload(store, id, bytes, options)));
  const seconds = (performance.now() - started) / 1000;
  const peak = peakBytes(store.pid);
  const total = attached.reduce((sum, a) => sum + a.size_bytes, 0);
  if (total !== count * bytes) throw new Error(`${name}: attached ${total} bytes, sent ${count * bytes}`);
  return { name, count, bytes, seconds, mbPerSecond: total / 1e6 / seconds, rssGrowth: Math.max(0, peak - idle), idle };
}

/**
 * Runs both upload workloads on a fresh store.
 * @param {{ quick?: boolean, dataRoot: string, port?: number, engine?: 'uws' | 'node' }} options
 *   quick: 256 MiB and 20 x 10 MB; port: where the store listens (a free one when not given);
 *   engine: the store's HTTP engine (default uws)
 * @returns the measured runs
 */
export async function runUploadBench({ quick = false, dataRoot, port, engine = 'uws' }) {
  const dataDir = fs.mkdtempSync(path.join(dataRoot, 'uploads-'));
  process.env.MAX_VIDEO_UPLOAD_BYTES = String(2 * 1024 * MiB); // the store inherits the environment
  const store = await StoreProcess.start(dataDir, { port, engine });
  try {
    const single = await run(store, quick ? 'one 256 MiB video' : 'one 1 GiB video', 1, (quick ? 256 : 1024) * MiB, { chunked: true });
    const many = await run(store, quick ? '20 concurrent 10 MB videos' : '20 concurrent 50 MB videos', 20, (quick ? 10 : 50) * 1e6, { chunked: false });
    return [single, many];
  } finally {
    await store.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The runs as a Markdown table with the targets. */
export function uploadTable(runs) {
  const rows = runs.map((r) => {
    const target = r.count === 1 ? '>= 500 MB/s' : '';
    const met = (r.count === 1 ? r.mbPerSecond >= 500 : true) && r.rssGrowth < 64 * MiB;
    return `| ${r.name} | ${(r.count * r.bytes / MiB).toFixed(0)} MiB | ${r.seconds.toFixed(2)} s | ${r.mbPerSecond.toFixed(0)} MB/s ${target ? `(target ${target})` : ''} | ${(r.rssGrowth / MiB).toFixed(1)} MiB over ${(r.idle / MiB).toFixed(0)} MiB idle (target < 64 MiB) | ${met ? 'met' : '**missed**'} |`;
  });
  return ['| Upload | Bytes | Time | Throughput | Server peak RSS growth | |', '|---|---|---|---|---|---|', ...rows].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const quick = process.argv.includes('--quick');
  const engine = process.argv.find((arg) => arg.startsWith('--engine='))?.slice('--engine='.length) ?? 'uws';
  const runs = await runUploadBench({ quick, engine, dataRoot: fs.mkdtempSync(path.join(os.tmpdir(), 'ees-bench-')) });
  writeResults('RESULTS.uploads.md', 'Upload benchmark', quick, uploadTable(runs));
}
