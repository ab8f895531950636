/**
 * The export and search CLIs do not trust their server (docs/SECURITY.md, "A store or search
 * server the CLI talks to"; src/search/download-limits.ts, src/search/zip-extract.ts), against
 * small fake servers (node:http): a body past its declared Content-Length; an endless body and a
 * declared length past the free space, the built `edge-events` in a mount namespace of its own on
 * a 16 MiB tmpfs, failing before the disk fills and leaving no partial file; zip bombs (one entry,
 * and many small entries, of deflated zeros) and a zip that does not fit, refused by `--extract`
 * and by `search --export` before any entry is written.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import t from 'tap';
import type { Test } from 'tap';
import ZipStream from 'zip-stream';
import { cliPath } from '../scripts/lib/spawned-store.js';
import { runExportCli } from '../src/export/export-command.js';
import { runSearchCli } from '../src/search/search-command.js';

const MiB = 1024 * 1024;

/** A zip of `entries` (name, bytes), deflated unless `store`, built with zip-stream as the store's exports are. */
async function zipOf(entries: [string, Buffer][], store = false): Promise<Buffer> {
  const zip = new ZipStream({ zlib: { level: 9 } });
  const chunks: Buffer[] = [];
  zip.on('data', (chunk: Buffer) => chunks.push(chunk));
  const ended = new Promise((resolve, reject) => {
    zip.on('end', resolve);
    zip.on('error', reject);
  });
  for (const [name, bytes] of entries) {
    await new Promise<void>((resolve, reject) => zip.entry(bytes, { name, store }, (err) => (err ? reject(err) : resolve())));
  }
  zip.finish();
  await ended;
  return Buffer.concat(chunks);
}

/** What a fake server answers: a status, headers, and a body (bytes, or a stream made per request). */
type Answer = { status?: number; headers?: Record<string, string>; body: Buffer | (() => Readable) };

/** A server on 127.0.0.1 answering by path (any path not listed: 404); its base URL. */
async function fakeServer(t: Test, answers: Record<string, Answer>): Promise<string> {
  const server = http.createServer((request, response) => {
    request.resume();
    const answer = answers[new URL(request.url ?? '/', 'http://x').pathname];
    if (answer === undefined) {
      response.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"not here"}');
      return;
    }
    response.writeHead(answer.status ?? 200, { 'content-type': 'application/zip', ...answer.headers });
    if (Buffer.isBuffer(answer.body)) response.end(answer.body);
    else answer.body().on('error', () => response.destroy()).pipe(response);
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Zeros without end, 64 KiB at a time, as fast as the client takes them. */
const endlessZeros = () => new Readable({
  read() {
    this.push(Buffer.alloc(64 * 1024));
  },
});

interface Output { code: number; stdout: string; stderr: string }

/** `edge-events export` in-process, its output collected. */
async function exportCli(argv: string[]): Promise<Output> {
  const out = { stdout: '', stderr: '' };
  const code = await runExportCli(argv, {
    stdout: { write: (text: string) => (out.stdout += text) },
    stderr: { write: (text: string) => (out.stderr += text), isTTY: false },
    env: {},
  });
  return { code, ...out };
}

const tempDir = (t: Test): string => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ees-bounds-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
};

t.test('a body past its declared Content-Length is cut there and fails; nothing is kept', async (t) => {
  // Content-Encoding makes fetch hand over more than the declared (encoded) length: a body that grows past it.
  const zeros = zlib.gzipSync(Buffer.alloc(8 * MiB));
  const store = await fakeServer(t, { '/v2/export': { headers: { 'content-encoding': 'gzip', 'content-length': String(zeros.length) }, body: zeros } });
  const dir = tempDir(t);
  const run = await exportCli(['class:cat', '--store', store, '-o', path.join(dir, 'd.zip')]);
  t.equal(run.code, 1);
  t.match(run.stderr, `error: The store sent more than the ${zeros.length} bytes its Content-Length declared; stopped\nhint: Check --store`);
  t.same(fs.readdirSync(dir), [], 'no zip, no .partial');
});

t.test('an endless body, or a declared length past the free space, fails before the disk fills, leaving no partial file (a 16 MiB tmpfs)', async (t) => {
  t.ok(fs.existsSync(cliPath), `${cliPath} is built (npm run build)`);
  const oneGiB = String(1024 * MiB);
  const store = await fakeServer(t, {
    '/v2/export': { body: endlessZeros },
    '/declared/v2/export': { headers: { 'content-length': oneGiB }, body: endlessZeros },
  });
  const dir = tempDir(t);
  /**
   * `edge-events export` on a 16 MiB tmpfs mounted over `dir` in a mount namespace of its own
   * (unshare(1)), then what the folder holds and its free bytes, as `left:<names> free:<bytes>`.
   */
  const onTmpfs = async (storeUrl: string) => {
    const script = 'mount -t tmpfs -o size=16m tmpfs "$0" && "$@"; code=$?; echo "left:$(ls -A "$0" | tr "\\n" " ") free:$(df -B1 --output=avail "$0" | tail -1)"; exit $code';
    const args = ['--mount', '--map-root-user', 'sh', '-c', script, dir, process.execPath, cliPath, 'export', 'class:cat', '--store', storeUrl, '-o', path.join(dir, 'd.zip')];
    return promisify(execFile)('unshare', args, { timeout: 60_000 }).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
    );
  };

  const endless = await onTmpfs(store);
  t.equal(endless.code, 1, 'exit 1');
  t.match(endless.stderr, new RegExp(`error: The store sent more than fits in ${dir}: stopped at [\\d.]+ MiB, [\\d.]+ MiB having been free, before the disk would fill\\nhint: Free space in ${dir}`), endless.stderr);
  t.notMatch(endless.stderr, /ENOSPC/, 'not a full disk\'s error: the disk never filled');
  const [, left, free] = /left:(.*) free:(\d+)/.exec(endless.stdout) ?? [];
  t.equal(left.trim(), '', 'no .partial file left');
  t.ok(Number(free) > 15 * MiB, `the tmpfs is as free as before (${free} bytes)`);

  const declared = await onTmpfs(`${store}/declared`);
  t.equal(declared.code, 1);
  t.match(declared.stderr, new RegExp(`error: The store declared 1\\.0 GiB, but ${dir} has [\\d.]+ MiB free\\n`), declared.stderr);
  t.match(declared.stdout, /left: +free:/, 'nothing written');
});

t.test('--extract refuses a zip bomb before writing any entry, and a zip past the free space', async (t) => {
  const bomb = await zipOf([['annotations.json', Buffer.alloc(32 * MiB)]]);
  const scattered = await zipOf(Array.from({ length: 64 }, (_, i): [string, Buffer] => [`labels/${i}.txt`, Buffer.alloc(512 * 1024)]));
  t.ok(bomb.length < 64 * 1024 && scattered.length < 64 * 1024, `small bombs: ${bomb.length} and ${scattered.length} bytes`);
  const store = await fakeServer(t, { '/one/v2/export': { body: bomb }, '/many/v2/export': { body: scattered } });
  const dir = tempDir(t);
  const extract = path.join(dir, 'dataset');

  const one = await exportCli(['class:cat', '--store', `${store}/one`, '-o', path.join(dir, 'one.zip'), '--extract', extract]);
  t.equal(one.code, 1, 'exit 1');
  t.match(one.stderr, /error: Export zip entry "annotations\.json" inflates \d+ times \([\d.]+ KiB to 32\.0 MiB\), past the 200 times allowed\nhint: The zip is not a dataset export's \(a zip bomb, or damaged\); nothing was extracted\.\n/);
  t.notOk(fs.existsSync(extract), 'the folder was not made');
  t.same(fs.readdirSync(dir).sort(), ['one.zip'], 'no staging folder left; the zip is kept');

  const many = await exportCli(['class:cat', '--store', `${store}/many`, '-o', path.join(dir, 'many.zip'), '--extract', extract]);
  t.equal(many.code, 1);
  t.match(many.stderr, /error: Export zip inflates \d+ times as a whole \([\d.]+ KiB to 32\.0 MiB\), past the 200 times allowed/, 'entries each under 1 MiB, together a bomb');
  t.notOk(fs.existsSync(extract));
});

t.test('--extract refuses a zip whose entries would not fit in the free space (a 16 MiB tmpfs)', async (t) => {
  t.ok(fs.existsSync(cliPath), `${cliPath} is built (npm run build)`);
  // 10 MiB stored, not compressed: it downloads onto 16 MiB, but cannot be extracted beside itself.
  const bulky = await zipOf([['images/a.jpg', Buffer.alloc(5 * MiB, 1)], ['images/b.jpg', Buffer.alloc(5 * MiB, 2)]], true);
  const store = await fakeServer(t, { '/v2/export': { body: bulky, headers: { 'content-length': String(bulky.length) } } });
  const dir = tempDir(t);
  const script = 'mount -t tmpfs -o size=16m tmpfs "$0" && "$@"; code=$?; echo "left:$(ls -A "$0" | tr "\\n" " ")"; exit $code';
  const args = ['--mount', '--map-root-user', 'sh', '-c', script, dir, process.execPath, cliPath, 'export', 'class:cat', '--store', store, '-o', path.join(dir, 'd.zip'), '--extract', path.join(dir, 'dataset')];
  const run = await promisify(execFile)('unshare', args, { timeout: 60_000 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
  );
  t.equal(run.code, 1, run.stderr);
  t.match(run.stdout, /^Saved .*d\.zip/m, 'the zip downloaded');
  t.match(run.stderr, new RegExp(`error: Export zip needs 10\\.0 MiB extracted, but only [\\d.]+ MiB is free where ${path.join(dir, 'dataset')} goes\\nhint: Free space there or extract elsewhere`), run.stderr);
  t.notMatch(run.stderr, /ENOSPC/);
  t.match(run.stdout, /left:d\.zip \n/, 'the zip is kept, nothing extracted');
});

t.test('search --export: a zip bomb and a body past its Content-Length are refused too', async (t) => {
  const bomb = await zipOf([['annotations.json', Buffer.alloc(32 * MiB)]]);
  const zeros = zlib.gzipSync(Buffer.alloc(8 * MiB));
  const status = (link: string) => ({ headers: { 'content-type': 'application/json' }, body: Buffer.from(JSON.stringify({ ready: true, link })) });
  const hosted = await fakeServer(t, {
    '/acme/search/export': { status: 202, headers: { 'content-type': 'application/json' }, body: Buffer.from('{"link":"exp-1"}') },
    '/acme/search/export/exp-1': status('/exports/bomb.zip'),
    '/exports/bomb.zip': { body: bomb },
  });
  const cutting = await fakeServer(t, {
    '/acme/search/export': { status: 202, headers: { 'content-type': 'application/json' }, body: Buffer.from('{"link":"exp-2"}') },
    '/acme/search/export/exp-2': status('/exports/grown.zip'),
    '/exports/grown.zip': { headers: { 'content-encoding': 'gzip', 'content-length': String(zeros.length) }, body: zeros },
  });
  const dir = tempDir(t);
  const search = async (base: string): Promise<Output> => {
    const out = { stdout: '', stderr: '' };
    const code = await runSearchCli(['tag:night', '--export', '--location', path.join(dir, 'export')], {
      stdout: { write: (text: string) => (out.stdout += text) },
      stderr: { write: (text: string) => (out.stderr += text), isTTY: false },
      env: { SEARCH_BASE_URL: base, SEARCH_API_KEY: 'k', SEARCH_WORKSPACE: 'acme' },
      client: { sleep: async () => {}, retry: { retries: 0 } },
    });
    return { code, ...out };
  };
  const bombed = await search(hosted);
  t.equal(bombed.code, 1);
  t.match(bombed.stderr, /error: Export zip entry "annotations\.json" inflates \d+ times .*past the 200 times allowed\nhint: The zip is not a dataset export's/);
  t.same(fs.readdirSync(path.join(dir, 'export')).filter((name) => !name.endsWith('.zip')), [], 'nothing extracted');

  const grown = await search(cutting);
  t.equal(grown.code, 1);
  t.match(grown.stderr, `error: The export download sent more than the ${zeros.length} bytes its Content-Length declared; stopped`);
  t.same(fs.readdirSync(path.join(dir, 'export')).filter((name) => name.endsWith('.part')), [], 'no .part file');
});
