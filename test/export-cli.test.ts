/**
 * `edge-events export` against a throwaway node:http server that answers `GET /v2/export` as the
 * contract says (docs/API.md, "Dataset export", "CLI"): a real zip made by writeDataset from the
 * fixture photos, streamed chunked; a 400 with a caret detail; a 401; a body cut short. Only the
 * CLI's behaviours are tested here: the progress line, the atomic `-o`, `--extract`, the
 * messages and exit codes.
 */
import t from 'tap';
import type { Test } from 'tap';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { writableSink } from '../src/export/dataset-zip.js';
import { writeDataset } from '../src/export/dataset-writer.js';
import { runExportCli } from '../src/export/export-command.js';
import type { ExportFormat } from '../src/export/export-types.js';
import { fixture } from './support/events.js';
import { exportEvents, readZip, results, storedEvent } from './support/export-data.js';

const API_KEY = 'key-123';
const photos: Record<string, Buffer> = { cat: fixture('cat.jpg'), rocket: fixture('rocket.jpg'), camera: fixture('camera.jpg') };

interface Store {
  url: string;
  requests: { url: URL; apiKey: string | undefined }[];
  /** What the next request gets: the export, a refusal, or a body cut after `bytes`. */
  mode: { kind: 'export' } | { kind: 'refuse'; status: number; body: unknown } | { kind: 'cut'; bytes: number };
}

async function store(t: Test): Promise<Store> {
  const state: Store = { url: '', requests: [], mode: { kind: 'export' } };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    state.requests.push({ url, apiKey: req.headers['x-api-key'] as string | undefined });
    if (url.pathname !== '/v2/export') return void res.writeHead(404).end();
    if (req.headers['x-api-key'] !== API_KEY) return void res.writeHead(401, { 'Content-Type': 'application/json' }).end(JSON.stringify({ detail: 'Missing or invalid X-API-Key' }));
    const mode = state.mode;
    if (mode.kind === 'refuse') return void res.writeHead(mode.status, { 'Content-Type': 'application/json' }).end(JSON.stringify(mode.body));
    res.writeHead(200, { 'Content-Type': 'application/zip' });
    const events = Object.keys(photos).map((id, i) => storedEvent(`ev-${i}`, [{ fileId: id, results: results({ object_detections: [{ class: 'thing', x: 100, y: 100, width: 50, height: 40, confidence: 0.9 }] }) }]));
    const sink = writableSink(res);
    let sent = 0;
    const cutting = mode.kind === 'cut' ? { ...sink, write(chunk: Buffer) {
      sent += chunk.length;
      if (sent > mode.bytes) {
        res.destroy();
        return false;
      }
      return sink.write(chunk);
    } } : sink;
    void writeDataset(url.searchParams.get('format') as ExportFormat, exportEvents(events), async (id) => photos[id] ?? null, cutting).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return state;
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function run(argv: string[], env: Record<string, string | undefined> = {}, tty = false): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const code = await runExportCli(argv, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text), isTTY: tty },
    env,
  });
  return { code, stdout, stderr };
}

function workDir(t: Test): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'export-cli-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

t.test('downloads the zip to -o, sends the query, format and key, prints a summary and draws progress on a TTY', async (t) => {
  const s = await store(t);
  const dir = workDir(t);
  const output = path.join(dir, 'dataset.zip');
  const result = await run(['device_id:cam-1 AND class:thing', '-f', 'yolo', '-o', output, '--store', s.url, '--api-key', API_KEY], {}, true);
  t.equal(result.code, 0, result.stderr);
  t.equal(s.requests.length, 1);
  t.equal(s.requests[0].url.searchParams.get('q'), 'device_id:cam-1 AND class:thing');
  t.equal(s.requests[0].url.searchParams.get('format'), 'yolo');
  t.equal(s.requests[0].apiKey, API_KEY);
  const entries = await readZip(output);
  t.same(entries.map((e) => e.name), ['images/cat.jpg', 'labels/cat.txt', 'images/rocket.jpg', 'labels/rocket.txt', 'images/camera.jpg', 'labels/camera.txt', 'data.yaml']);
  t.ok(entries[0].bytes.equals(photos.cat), 'the image arrives byte-identical');
  const size = readFileSync(output).length;
  t.match(result.stdout, new RegExp(`^Saved ${output.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} \\(yolo\\): 7 entries, 3 images, \\d+\\.\\d KiB\\n$`));
  t.ok(size > 0);
  t.match(result.stderr, /Export \(yolo\) \d+\.\d KiB at [\d.]+ (B|KiB|MiB|GiB)\/s/, 'the progress line shows bytes and rate');
  t.same(readdirSync(dir), ['dataset.zip'], 'no temporary file left');
});

t.test('without a TTY no progress is drawn; API_KEY and STORE_URL come from the environment', async (t) => {
  const s = await store(t);
  const dir = workDir(t);
  const output = path.join(dir, 'd.zip');
  const result = await run(['class:thing', '-o', output], { API_KEY, STORE_URL: s.url });
  t.equal(result.code, 0, result.stderr);
  t.equal(result.stderr, '');
  t.equal(s.requests[0].url.searchParams.get('format'), 'coco', 'coco by default');
  t.ok((await readZip(output)).some((e) => e.name === 'annotations.coco.json'));
});

t.test('--extract unpacks the zip into a directory and keeps the zip', async (t) => {
  const s = await store(t);
  const dir = workDir(t);
  const output = path.join(dir, 'd.zip');
  const target = path.join(dir, 'dataset');
  const result = await run(['class:thing', '-f', 'labelstudio', '-o', output, '--store', s.url, '-k', API_KEY, '--extract', target]);
  t.equal(result.code, 0, result.stderr);
  t.match(result.stdout, `Extracted 5 files to ${target}\n`);
  t.same(readdirSync(target).sort(), ['images', 'labeling-config.xml', 'tasks.json']);
  t.ok(readFileSync(path.join(target, 'images', 'rocket.jpg')).equals(photos.rocket));
  t.equal(JSON.parse(readFileSync(path.join(target, 'tasks.json'), 'utf8')).length, 3);
  t.ok(existsSync(output));
});

t.test('a 400 prints the store\'s detail with its caret, exit 1, -o untouched', async (t) => {
  const s = await store(t);
  const dir = workDir(t);
  const output = path.join(dir, 'd.zip');
  writeFileSync(output, 'previous export');
  const detail = 'Invalid query at column 7: unknown field "colour"\n  class colour:red\n        ^';
  s.mode = { kind: 'refuse', status: 400, body: { detail } };
  const result = await run(['class colour:red', '-o', output, '--store', s.url, '-k', API_KEY]);
  t.equal(result.code, 1);
  t.equal(result.stdout, '');
  t.equal(result.stderr, `error: ${detail}\nhint: Fix the query at the caret.\n`);
  t.equal(readFileSync(output, 'utf8'), 'previous export');
});

t.test('a refused API key exits 2', async (t) => {
  const s = await store(t);
  const dir = workDir(t);
  const result = await run(['class:thing', '-o', path.join(dir, 'd.zip'), '--store', s.url, '-k', 'wrong']);
  t.equal(result.code, 2);
  t.match(result.stderr, /^error: Missing or invalid X-API-Key\nhint: .*API_KEY/);
  t.same(readdirSync(dir), []);
});

t.test('a body cut short fails with exit 1 and leaves -o as it was', async (t) => {
  const s = await store(t);
  const dir = workDir(t);
  const output = path.join(dir, 'd.zip');
  writeFileSync(output, 'previous export');
  s.mode = { kind: 'cut', bytes: 40_000 };
  const result = await run(['class:thing', '-o', output, '--store', s.url, '-k', API_KEY]);
  t.equal(result.code, 1);
  t.match(result.stderr, /^error: (Export download failed|The export is not a complete zip)/);
  t.equal(readFileSync(output, 'utf8'), 'previous export');
  t.same(readdirSync(dir), ['d.zip'], 'the temporary file is removed');
});

t.test('an unreachable store and an unknown format exit 1', async (t) => {
  const dir = workDir(t);
  const unreachable = await run(['x', '-o', path.join(dir, 'd.zip'), '--store', 'http://127.0.0.1:1']);
  t.equal(unreachable.code, 1);
  t.match(unreachable.stderr, /^error: Store unreachable at http:\/\/127\.0\.0\.1:1/);
  const format = await run(['x', '-f', 'voc']);
  t.equal(format.code, 1);
  t.match(format.stderr, /error: option '-f, --format <format>' argument 'voc' is invalid/);
});
