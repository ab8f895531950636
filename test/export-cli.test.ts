/**
 * `edge-events export` (docs/API.md, "Dataset export", "CLI") against a real store over HTTP:
 * the zip at `-o` (atomic), the summary and progress line, `--extract` (one export per folder,
 * `--force`), the environment, the key, a malformed query and refused output paths before anything
 * is sent (permissions with the built binary run as another user). One behaviour the real store
 * cannot be made to show on demand, a body cut short mid-zip, is served by a throwaway node:http
 * server. Interrupted exports: export-interrupt.test.ts.
 */
import t from 'tap';
import type { Test } from 'tap';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { runExportCli } from '../src/export/export-command.js';
import { ZipEntryCounter } from '../src/export/zip-entry-counter.js';
import { fixture, imageEvent, postJson } from './support/events.js';
import { readZip } from './support/export-data.js';
import { startStore, type TestStore } from './support/store-server.js';
import { runCli, unprivileged } from './support/cli-process.js';
import { freePort } from './support/waiting.js';

const API_KEY = 'key-123';
const PHOTOS = ['cat.jpg', 'rocket.jpg', 'camera.jpg'];
const thing = { class: 'thing', x: 100, y: 100, width: 50, height: 40, confidence: 0.9 };

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

/** A store with API_KEY and one event per photo on cam-1 (a `thing` on each), one on cam-2. */
async function seededStore(t: Test): Promise<{ store: TestStore; fileIds: string[] }> {
  const store = await startStore({ API_KEY });
  t.teardown(store.stop);
  const fileIds: string[] = [];
  for (const [i, photo] of [...PHOTOS, 'cat.jpg'].entries()) {
    const body = imageEvent({ deviceId: i < 3 ? 'cam-1' : 'cam-2', images: [{ base64Image: fixture(photo).toString('base64'), objectDetections: [thing] }] });
    const res = await postJson(`${store.url}/v2/events`, body, { 'X-API-Key': API_KEY });
    if (res.status !== 201) throw new Error(JSON.stringify(res.body));
    fileIds.push(res.body.image_ids[0]);
  }
  return { store, fileIds };
}

t.test('downloads the zip to -o, prints a summary and draws progress on a TTY', async (t) => {
  const { store, fileIds } = await seededStore(t);
  const dir = workDir(t);
  const output = path.join(dir, 'dataset.zip');
  const result = await run(['device:cam-1 AND class:thing', '-f', 'yolo', '-o', output, '--store', store.url, '--api-key', API_KEY], {}, true);
  t.equal(result.code, 0, result.stderr);
  const entries = await readZip(output);
  // Newest event first: the camera, the rocket, the cat; cam-2's event is not asked for.
  t.same(entries.map((e) => e.name), [2, 1, 0].flatMap((i) => [`images/${fileIds[i]}.jpg`, `labels/${fileIds[i]}.txt`]).concat('data.yaml'));
  for (const i of [2, 1, 0]) {
    t.ok(entries.find((e) => e.name === `images/${fileIds[i]}.jpg`)!.bytes.equals(fixture(PHOTOS[i])), `${PHOTOS[i]} arrives byte-identical`);
  }
  t.match(result.stdout, new RegExp(`^Saved ${output.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} \\(yolo\\): 7 entries, 3 images, \\d+\\.\\d KiB\\n$`));
  t.match(result.stderr, /Export \(yolo\) 3 images, \d+\.\d KiB at [\d.]+ (B|KiB|MiB|GiB)\/s/, 'the progress line shows images, bytes and rate');
  // The count comes from the local headers as the bytes stream past, however they are cut.
  const zip = readFileSync(output);
  for (const size of [1, 13, 30, 4096, zip.length]) {
    const counter = new ZipEntryCounter();
    for (let at = 0; at < zip.length; at += size) counter.push(zip.subarray(at, at + size));
    t.same({ entries: counter.entries, images: counter.images }, { entries: 7, images: 3 }, `chunks of ${size} bytes: the 7 entries (all stored), 3 images`);
  }
  t.same(readdirSync(dir), ['dataset.zip'], 'no temporary file left');
});

t.test('without a TTY no progress is drawn; API_KEY and STORE_URL come from the environment; --extract', async (t) => {
  const { store } = await seededStore(t);
  const dir = workDir(t);
  const output = path.join(dir, 'd.zip');
  const coco = await run(['class:thing', '-o', output], { API_KEY, STORE_URL: store.url });
  t.equal(coco.code, 0, coco.stderr);
  t.equal(coco.stderr, '');
  t.ok((await readZip(output)).some((e) => e.name === 'annotations.coco.json'), 'coco by default');

  const target = path.join(dir, 'dataset');
  const result = await run(['device:cam-1', '-f', 'labelstudio', '-o', output, '--store', store.url, '-k', API_KEY, '--extract', target]);
  t.equal(result.code, 0, result.stderr);
  t.match(result.stdout, `Extracted 5 files to ${target}\n`);
  t.same(readdirSync(target).sort(), ['images', 'labeling-config.xml', 'tasks.json']);
  t.equal(JSON.parse(readFileSync(path.join(target, 'tasks.json'), 'utf8')).length, 3);
  t.ok(existsSync(output), 'the zip is kept');
});

/** Every file under `dir`, relative with `/`, sorted. */
function filesUnder(dir: string): string[] {
  return (readdirSync(dir, { recursive: true, withFileTypes: true }) as import('node:fs').Dirent[])
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)).split(path.sep).join('/'))
    .sort();
}

t.test('--extract: a non-empty folder is refused before any download; --force replaces it whole; an empty one is filled', async (t) => {
  const { store, fileIds } = await seededStore(t);
  const dir = workDir(t);
  const target = path.join(dir, 'ds');
  const first = await run(['*', '-f', 'yolo', '-o', path.join(dir, 'all.zip'), '--store', store.url, '-k', API_KEY, '--extract', target]);
  t.equal(first.code, 0, first.stderr);
  const yolo = filesUnder(target);
  t.equal(yolo.length, 9, 'four images, four label files, data.yaml');

  // A second export into the same folder would mix two datasets: refused before any request.
  const refused = await run(['device:cam-2', '-o', path.join(dir, 'cam2.zip'), '--store', `http://127.0.0.1:${await freePort()}`, '--extract', target]);
  t.equal(refused.code, 1);
  t.match(refused.stderr, new RegExp(`^error: --extract ${target.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} is not empty \\(3 entries: data\\.yaml, images, labels\\)`), 'names the folder and what it holds');
  t.match(refused.stderr, /\nhint: .*--force to replace .* whole/, 'the hint names --force');
  t.notOk(existsSync(path.join(dir, 'cam2.zip')), 'nothing downloaded (no store listens there either)');
  t.same(filesUnder(target), yolo, 'the folder untouched');

  // --force: the folder ends up holding exactly the new export.
  const forced = await run(['device:cam-2', '-o', path.join(dir, 'cam2.zip'), '--store', store.url, '-k', API_KEY, '--extract', target, '--force']);
  t.equal(forced.code, 0, forced.stderr);
  t.match(forced.stdout, `Extracted 2 files to ${target} (replacing what it held)\n`);
  t.same(filesUnder(target), ['annotations.coco.json', `images/${fileIds[3]}.jpg`]);
  t.equal(JSON.parse(readFileSync(path.join(target, 'annotations.coco.json'), 'utf8')).images.length, 1);
  t.same(readdirSync(dir).sort(), ['all.zip', 'cam2.zip', 'ds'], 'no staging folder or old copy left beside it');

  // An empty existing folder is filled; it stays the same folder.
  const empty = path.join(dir, 'empty');
  mkdirSync(empty);
  const filled = await run(['device:cam-2', '-f', 'labelstudio', '-o', path.join(dir, 'ls.zip'), '--store', store.url, '-k', API_KEY, '--extract', empty]);
  t.equal(filled.code, 0, filled.stderr);
  t.same(filesUnder(empty), [`images/${fileIds[3]}.jpg`, 'labeling-config.xml', 'tasks.json']);

  // The zip inside the folder would make it non-empty (or, replaced, vanish): refused too.
  const inside = await run(['*', '-o', path.join(target, 'd.zip'), '--store', store.url, '-k', API_KEY, '--extract', target, '--force']);
  t.equal(inside.code, 1);
  t.match(inside.stderr, /^error: -o .*d\.zip lies inside --extract .*ds, which must hold the export alone\nhint: Write the zip beside the folder/);
  const file = path.join(dir, 'all.zip');
  const onFile = await run(['*', '-o', path.join(dir, 'x.zip'), '--store', store.url, '-k', API_KEY, '--extract', file]);
  t.equal(onFile.code, 1);
  t.match(onFile.stderr, /is a file, not a folder/);
  t.notOk(existsSync(path.join(dir, 'x.zip')));
});

t.test('output paths are checked before any request: -o a folder, a missing or file parent, no permission', async (t) => {
  const dir = workDir(t);
  // No store listens here: each refusal comes before any request.
  const store = `http://127.0.0.1:${await freePort()}`;
  const file = path.join(dir, 'file');
  writeFileSync(file, 'not a folder');

  const folder = await run(['*', '-o', dir, '--store', store]);
  t.equal(folder.code, 1);
  t.equal(folder.stderr, `error: -o ${dir} is a folder, not a file\nhint: Name the zip to write, e.g. -o ${path.join(dir, 'dataset.zip')}.\n`);

  const missing = path.join(dir, 'exports', 'today');
  const noParent = await run(['*', '-o', path.join(missing, 'd.zip'), '--store', store]);
  t.equal(noParent.code, 1);
  t.equal(noParent.stderr, `error: -o ${path.join(missing, 'd.zip')}: the folder ${missing} does not exist\nhint: Create it first (mkdir -p ${missing}), or choose another path.\n`);

  const fileParent = await run(['*', '-o', path.join(file, 'd.zip'), '--store', store]);
  t.equal(fileParent.code, 1);
  t.match(fileParent.stderr, `error: -o ${path.join(file, 'd.zip')}: ${file} is not a folder\nhint: Choose a path inside an existing folder.`);

  const extractNoParent = await run(['*', '-o', path.join(dir, 'd.zip'), '--store', store, '--extract', path.join(missing, 'ds')]);
  t.equal(extractNoParent.code, 1);
  t.equal(extractNoParent.stderr, `error: --extract ${path.join(missing, 'ds')}: the folder ${missing} does not exist\nhint: Create it first (mkdir -p ${missing}), or choose another path.\n`);
  t.same(readdirSync(dir), ['file'], 'nothing written, no hidden .partial');

  // Permissions: the binary without privileges (root's included), so it cannot write in `locked`.
  const locked = path.join(dir, 'locked');
  mkdirSync(locked);
  mkdirSync(path.join(locked, 'empty'));
  chmodSync(dir, 0o755);
  chmodSync(locked, 0o555);
  chmodSync(path.join(locked, 'empty'), 0o555);
  t.teardown(() => chmodSync(locked, 0o755));
  const asUser = { prefix: unprivileged() };
  const zip = await runCli(['export', '*', '-o', path.join(locked, 'd.zip'), '--store', store], asUser);
  t.equal(zip.code, 1, zip.stderr);
  t.equal(zip.stderr, `error: -o ${path.join(locked, 'd.zip')}: no permission to write in ${locked}\nhint: Choose a folder you can write to, or ask its owner for write access.\n`);
  const extractNew = await runCli(['export', '*', '--store', store, '-o', path.join(os.tmpdir(), `unused-${process.pid}.zip`), '--extract', path.join(locked, 'ds')], asUser);
  t.equal(extractNew.code, 1, extractNew.stderr);
  t.match(extractNew.stderr, `error: --extract ${path.join(locked, 'ds')}: no permission to write in ${locked}\n`);
  const extractEmpty = await runCli(['export', '*', '--store', store, '-o', path.join(os.tmpdir(), `unused-${process.pid}.zip`), '--extract', path.join(locked, 'empty')], asUser);
  t.equal(extractEmpty.code, 1, extractEmpty.stderr);
  t.match(extractEmpty.stderr, `error: --extract ${path.join(locked, 'empty')}: no permission to write in ${path.join(locked, 'empty')}\n`);
});

t.test('a malformed query exits 1 with its caret before any request; a refused key exits 2', async (t) => {
  const { store } = await seededStore(t);
  const dir = workDir(t);
  const output = path.join(dir, 'd.zip');
  writeFileSync(output, 'previous export');
  const bad = await run(['class colour:red', '-o', output, '--store', `http://127.0.0.1:${await freePort()}`]);
  t.equal(bad.code, 1);
  t.equal(bad.stdout, '');
  t.match(bad.stderr, /^error: Invalid query at column 7: Unknown filter "colour:"; events take: .*\n {2}class colour:red\n {8}\^\nhint: Fix the query at the caret/);
  t.equal(readFileSync(output, 'utf8'), 'previous export', '-o untouched');

  const denied = await run(['class:thing', '-o', output, '--store', store.url, '-k', 'wrong']);
  t.equal(denied.code, 2);
  t.match(denied.stderr, /^error: The store answered 401: Missing or invalid X-API-Key\nhint: .*API_KEY/);
  t.same(readdirSync(dir), ['d.zip']);
});

t.test('a body cut short fails with exit 1 and leaves -o as it was', async (t) => {
  // Answers 200 and the start of a zip (a local file header), then closes the connection.
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/zip' });
    res.write(Buffer.concat([Buffer.from('PK\x03\x04', 'latin1'), Buffer.alloc(40_000)]));
    setImmediate(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const dir = workDir(t);
  const output = path.join(dir, 'd.zip');
  writeFileSync(output, 'previous export');
  const result = await run(['class:thing', '-o', output, '--store', `http://127.0.0.1:${(server.address() as AddressInfo).port}`]);
  t.equal(result.code, 1);
  t.match(result.stderr, /^error: (Export download failed|The export is not a complete zip)/);
  t.equal(readFileSync(output, 'utf8'), 'previous export');
  t.same(readdirSync(dir), ['d.zip'], 'the temporary file is removed');
});

t.test('an unreachable store and an unknown format exit 1', async (t) => {
  const dir = workDir(t);
  const unreachable = await run(['class:thing', '-o', path.join(dir, 'd.zip'), '--store', `http://127.0.0.1:${await freePort()}`]);
  t.equal(unreachable.code, 1);
  t.match(unreachable.stderr, /^error: No answer from the store at http:\/\/127\.0\.0\.1:\d+/);
  const format = await run(['x', '-f', 'voc']);
  t.equal(format.code, 1);
  t.match(format.stderr, /error: option '-f, --format <format>' argument 'voc' is invalid/);
});
