/**
 * The release tarball on arm64 (docs/OPERATIONS.md, "Platforms"): a Debian 12 arm64 root with the
 * official Node 24 arm64 build (scripts/platform-root.sh), run under qemu-user-static, as a
 * Raspberry Pi or a Jetson runs it. The tarball is installed into the root from this machine, as
 * for arm64 (`npm install --cpu=arm64`, `--ignore-scripts` so that no host build step lands in
 * the tree), and its postinstall is then run on arm64, as the box's npm would. The installed
 * `edge-events serve` must find every native binding it needs for arm64, start, acknowledge an
 * image event, list it, search it, serve its image byte-exact with Range and its thumbnail, take
 * an upload into a draft and its finalize, and after a kill -9 start again with every
 * acknowledged event and file. The arm64 Debian package, built on this machine (`npm run
 * package:deb -- --arch arm64`), holds arm64 binaries only and serves from the root too (its files
 * unpacked; the maintainer scripts, plain shell, are tested on amd64 by `npm run test:deb`).
 *
 * Slow: emulation runs the store 10 to 20 times slower, and the first run makes the root (a few
 * minutes). Not part of `npm test`; `npm run test:arm64` runs it, and .ci/run runs that.
 */
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { residentBytes } from '../../scripts/lib/proc-stats.js';
import { npmFreeEnv } from '../../scripts/lib/release-tarball.js';
import { spawnStore, type SpawnedStore } from '../../scripts/lib/spawned-store.js';
import { packageRoot } from '../../src/paths.js';
import { fixture, getJson, imageEvent, postJson } from '../support/events.js';
import { postFile } from '../support/multipart.js';
import { PLATFORM_EXEC, rootWithTarball } from '../support/platform-root.js';

const run = promisify(execFile);

/** Where the .deb is unpacked in the root, and the data folders, as the root sees them. */
const DEB_ROOT = '/opt/edge-events-deb';
const DATA_DIR = '/var/lib/edge-events-test';

/** Native addons the store loads, by the arm64 package that must be installed for it. */
const ARM64_BINDINGS = [
  'node_modules/@lmdb/lmdb-linux-arm64',
  'node_modules/@msgpackr-extract/msgpackr-extract-linux-arm64',
  'node_modules/@img/sharp-linux-arm64',
  'node_modules/@node-rs/crc32-linux-arm64-gnu',
];

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'ees-arm64-'));
t.teardown(() => fs.rmSync(work, { recursive: true, force: true }));
/** The arm64 root (made on the first run, then from the cache), the tarball installed in it. */
const platform = await rootWithTarball('bookworm', 'arm64', 24, work);
const { root } = platform;

t.test('the release tarball installs on arm64 and keeps its promises there', async (t) => {
  t.match((await platform.exec('node', '-p', 'process.arch')).stdout, 'arm64', 'the root runs arm64 code');
  t.match(platform.postinstall, /uWebSockets\.js kept for linux-arm64, glibc 2\.\d+/, `the postinstall, run on arm64: ${platform.postinstall}`);
  for (const binding of ARM64_BINDINGS) t.ok(fs.existsSync(path.join(root, platform.installed, binding)), `${binding} is installed`);

  fs.rmSync(path.join(root, DATA_DIR), { recursive: true, force: true });
  const serve = () => platform.serve(DATA_DIR);
  const starting = performance.now();
  let store: SpawnedStore = await serve();
  t.teardown(() => store.child.kill('SIGKILL'));
  t.comment(`listening ${((performance.now() - starting) / 1000).toFixed(1)} s after its start, emulated`);
  const { runtime } = (await getJson(`${store.url}/stats`)).body as { runtime: { http_engine: string; node_version: string } };
  t.comment(`served on ${runtime.http_engine}, Node ${runtime.node_version}`);

  const photo = fixture('cat.jpg');
  const created = await postJson(`${store.url}/v2/events`, imageEvent({ deviceId: 'pi-5' }));
  t.equal(created.status, 201, 'an image event is acknowledged');
  const [imageId] = created.body.image_ids as string[];
  t.same((await getJson(`${store.url}/v2/events?device_id=pi-5`)).body.events.map((e: { id: string }) => e.id), [created.body.id], 'listed by device');
  t.same((await getJson(`${store.url}/v2/events/search?q=${encodeURIComponent('class:cat device:pi-5')}`)).body.events.map((e: { id: string }) => e.id), [created.body.id], 'found by a search');

  const rangeOf = async (from: number, to: number) => {
    const res = await fetch(`${store.url}/images/${imageId}`, { headers: { range: `bytes=${from}-${to}` } });
    return { status: res.status, range: res.headers.get('content-range'), bytes: Buffer.from(await res.arrayBuffer()) };
  };
  const part = await rangeOf(100, 4195);
  t.equal(part.status, 206);
  t.equal(part.range, `bytes 100-4195/${photo.length}`);
  t.ok(part.bytes.equals(photo.subarray(100, 4196)), 'a Range read is byte-exact');
  const thumbnail = await fetch(`${store.url}/images/${imageId}/thumbnail`);
  t.equal(thumbnail.status, 200, 'a thumbnail, made by sharp on arm64');
  t.equal(thumbnail.headers.get('content-type'), 'image/webp');
  await thumbnail.arrayBuffer();

  const draft = await postJson(`${store.url}/v2/events`, imageEvent({ deviceId: 'pi-5', draft: true }));
  t.equal(draft.status, 201, 'a draft');
  const clip = fixture('cat-zoom.mp4');
  const attached = await postFile(`${store.url}/v2/events/${draft.body.id}/videos`, clip, { label: 'clip' });
  t.equal(attached.status, 201, 'a video streamed into the draft');
  const finalized = await postJson(`${store.url}/v2/events/${draft.body.id}/finalize`, {});
  t.equal(finalized.status, 200, 'the draft finalized');

  store.child.kill('SIGKILL');
  await once(store.child, 'exit');
  const recovering = performance.now();
  store = await serve();
  t.comment(`listening ${((performance.now() - recovering) / 1000).toFixed(1)} s after a restart from the kill -9, emulated`);
  t.same((await getJson(`${store.url}/v2/events?device_id=pi-5`)).body.events.map((e: { id: string }) => e.id).sort(), [created.body.id, draft.body.id].sort(), 'both events after a kill -9');
  const video = (await getJson(`${store.url}/v2/events/${draft.body.id}`)).body.videos[0] as { file_id: string };
  const videoBytes = Buffer.from(await (await fetch(`${store.url}/videos/${video.file_id}`)).arrayBuffer());
  t.ok(videoBytes.equals(clip), 'the video, byte for byte');
  t.ok((await rangeOf(0, photo.length - 1)).bytes.equals(photo), 'the image, byte for byte');
  t.comment(`resident memory: ${(residentBytes(store.child.pid!) / 2 ** 20).toFixed(0)} MiB, qemu's own included; installed: ${(await platform.exec('du', '-sm', '/opt/edge-events')).stdout.split('\t')[0]} MiB`);
  store.child.kill('SIGTERM');
  const [code] = (await once(store.child, 'exit')) as [number | null];
  t.equal(code, 0, 'a graceful stop');
});

t.test('the arm64 Debian package, built on this machine, serves on arm64', async (t) => {
  const out = fs.mkdtempSync(path.join(work, 'deb-'));
  const built = await run(process.execPath, [path.join(packageRoot, 'dist', 'scripts', 'package-deb.js'), '--arch', 'arm64', '--out', out], { env: npmFreeEnv(), maxBuffer: 64 << 20 });
  t.comment(built.stdout.trim());
  const [deb] = fs.readdirSync(out).filter((name) => name.endsWith('_arm64.deb'));
  t.ok(deb, `edge-events_<version>_arm64.deb: ${fs.readdirSync(out).join(', ')}`);
  t.match((await run('dpkg-deb', ['--field', path.join(out, deb!), 'Architecture'])).stdout, /^arm64$/m);
  const unpacked = path.join(root, DEB_ROOT);
  fs.rmSync(unpacked, { recursive: true, force: true });
  await run('dpkg-deb', ['-x', path.join(out, deb!), unpacked]);
  for (const binding of ARM64_BINDINGS) t.ok(fs.existsSync(path.join(unpacked, 'usr/lib/edge-events', binding)), `${binding} is in the package`);

  const dataDir = `${DATA_DIR}-deb`;
  fs.rmSync(path.join(root, dataDir), { recursive: true, force: true });
  const store = await spawnStore({ PORT: '0', DATA_DIR: dataDir }, undefined, { command: ['sh', PLATFORM_EXEC, root, 'node', `${DEB_ROOT}/usr/lib/edge-events/dist/src/cli.js`] });
  t.teardown(() => store.child.kill('SIGKILL'));
  const created = await postJson(`${store.url}/v2/events`, imageEvent({ deviceId: 'jetson' }));
  t.equal(created.status, 201, 'an image event');
  const image = await fetch(`${store.url}/images/${created.body.image_ids[0]}`);
  t.ok(Buffer.from(await image.arrayBuffer()).equals(fixture('cat.jpg')), 'its image, byte for byte');
});
