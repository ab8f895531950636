/**
 * The release artifact (docs/OPERATIONS.md, "Install on a device"): `npm pack` on a copy of the
 * sources (its prepack builds dist/), then `npm install -g` of the tarball into a temporary prefix
 * with the registry's packages (from npm's cache when there), as a user installs it. The installed
 * `edge-events` serves from another working directory on a temporary DATA_DIR: /health, the
 * operator page, /docs with Swagger UI's assets, a create read back, and `edge-events events`.
 * Nothing of TypeScript nor any other dev dependency is installed, and the postinstall left
 * exactly the host's native binaries (docs/OPERATIONS.md, "Footprint"): one uWebSockets.js
 * binary per Node version served here, no other platform's prebuilds, no addon of the other libc,
 * and none of the dependencies' source maps and TypeScript sources. The store runs on the kept
 * binary, and on node:http, saying why, once it is gone. `systemd-analyze verify` passes on the
 * shipped unit.
 *
 * Slow (a whole build and an install, about a minute): not part of `npm test`; `npm run
 * test:release` runs it, and .ci/run runs that.
 */
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { spawnStore } from '../../scripts/lib/spawned-store.js';
import { npmFreeEnv, packRelease } from '../../scripts/lib/release-tarball.js';
import { NODE_OF_ABI, uwsBinariesToKeep, UWS_BUILDS } from '../../src/http/uws/uws-builds.js';
import { currentHost, installedBuilds } from '../../src/http/uws/uws-loader.js';
import { dependencyDevFolders, devFileKind } from '../../src/install/dependency-dev-files.js';
import { nodeAbisToKeep, otherLibcBinaries } from '../../src/install/host-binaries.js';
import { getJson, imageEvent, postJson } from '../support/events.js';
import { nodeRelease } from '../support/node-release.js';

const run = promisify(execFile);

/** This process's environment for a child npm: without npm's own variables, this test's Node line first on PATH (the bin's `#!/usr/bin/env node`). */
function cleanEnv(): Record<string, string> {
  const env = npmFreeEnv();
  env.PATH = `${path.dirname(process.execPath)}${path.delimiter}${env.PATH ?? ''}`;
  return env;
}

/** Every file under `dir`, relative to it. */
function filesUnder(dir: string): string[] {
  return (fs.readdirSync(dir, { recursive: true, withFileTypes: true }) as fs.Dirent[])
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)));
}

t.test('the packed tarball installs globally and serves without TypeScript', async (t) => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'ees-release-'));
  t.teardown(() => fs.rmSync(work, { recursive: true, force: true }));
  const env = cleanEnv();
  const { tarball, version, files: packedFiles } = await packRelease(work, env);
  for (const needed of ['dist/src/cli.js', 'dist/src/lifecycle/worker.js', 'dist/page/main.js', 'page/index.html', 'page/page.css', 'schemas/create-event.json', 'systemd/edge-events.service', 'systemd/edge-events.env.example', 'scripts/prune-host-binaries.mjs', 'dist/src/install/host-binaries.js']) {
    t.ok(packedFiles.includes(needed), `the tarball holds ${needed}`);
  }
  t.same(packedFiles.filter((file) => file.endsWith('.ts') || file.startsWith('test/') || file.startsWith('src/')), [], 'no TypeScript source, no test');

  const prefix = path.join(work, 'prefix');
  await run('npm', ['install', '--global', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', tarball], { cwd: work, env, maxBuffer: 64 << 20 });
  const bin = path.join(prefix, 'bin', 'edge-events');
  const installed = path.join(prefix, 'lib', 'node_modules', 'edge-event-store');
  t.ok(fs.existsSync(bin), 'edge-events is in the prefix\'s bin/');
  for (const devDependency of ['typescript', 'tap', '@types/busboy', 'fast-check', 'playwright-core']) {
    t.notOk(fs.existsSync(path.join(installed, 'node_modules', devDependency)), `${devDependency} is not installed`);
  }
  // The host's native binaries only: the uWebSockets.js binary the loader picks for each Node
  // version of package.json's engines (and this one) on this machine, nothing else of the two
  // packages; node-gyp-build's prebuilds of this platform only.
  const host = currentHost();
  const engines = (JSON.parse(fs.readFileSync(path.join(installed, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;
  const expected = uwsBinariesToKeep(host, nodeAbisToKeep(engines, host.abi), installedBuilds().versions);
  const pinned = [UWS_BUILDS['btc-vision'], UWS_BUILDS.trufflesuite];
  const uwsLeft = pinned.flatMap((build) => {
    const dir = path.join(installed, 'node_modules', build.packageName);
    return fs.existsSync(dir) ? filesUnder(dir).filter((file) => file.endsWith('.node')).map((file) => `${build.id}:${file}`) : [];
  });
  t.same(uwsLeft.sort(), expected.map((binary) => `${binary.build.id}:${binary.file}`).sort(), `uWebSockets.js: only ${expected.map((binary) => binary.file).join(', ') || 'nothing'} left`);
  if (host.platform === 'linux' && host.glibc) t.ok(expected.length > 0, 'a glibc Linux keeps a binary');
  const prebuilds = filesUnder(path.join(installed, 'node_modules')).filter((file) => file.endsWith('.node') && file.split(path.sep).includes('prebuilds'));
  t.ok(prebuilds.length > 0, 'node-gyp-build prebuilds are installed');
  t.same(prebuilds.filter((file) => !file.split(path.sep).includes(`${process.platform}-${process.arch}`)), [], `only prebuilds/${process.platform}-${process.arch}`);
  t.same(otherLibcBinaries(installed, host), [], 'no addon tagged for the other libc');
  const dependencyFiles = filesUnder(path.join(installed, 'node_modules'));
  t.same(dependencyFiles.filter((file) => file.endsWith('.map')), [], 'no source map of a dependency');
  t.same(dependencyFiles.filter((file) => devFileKind(path.basename(file)) === 'TypeScript source'), [], 'no TypeScript source of a dependency');
  t.same(dependencyDevFolders(path.join(installed, 'node_modules')), [], 'no test, benchmark or CI folder of a dependency');
  t.comment(`du -sk of the prefix: ${(await run('du', ['-sk', prefix])).stdout.split('\t')[0]} KiB, ${dependencyFiles.length} files under node_modules`);

  // Served from elsewhere: the assets are found from the installed files, not the working directory.
  const elsewhere = fs.mkdtempSync(path.join(work, 'cwd-'));
  const store = await spawnStore({ PORT: '0', DATA_DIR: path.join(work, 'data'), PATH: env.PATH }, process.execPath, { command: [bin], cwd: elsewhere });
  t.teardown(() => store.child.kill('SIGKILL'));

  t.equal((await getJson(`${store.url}/health`)).status, 200, '/health');
  const page = await fetch(`${store.url}/`);
  t.equal(page.status, 200, 'the operator page');
  t.match(await page.text(), '/operator/main.js');
  for (const file of ['main.js', 'page.css']) t.equal((await fetch(`${store.url}/operator/${file}`)).status, 200, `/operator/${file}`);
  const docs = await fetch(`${store.url}/docs`);
  t.equal(docs.status, 200, '/docs');
  await docs.arrayBuffer();
  const bundle = await fetch(`${store.url}/docs/swagger-ui-bundle.js`);
  t.equal(bundle.status, 200, 'Swagger UI\'s bundle');
  t.ok((await bundle.arrayBuffer()).byteLength > 100_000, 'the whole bundle');
  t.equal((await getJson(`${store.url}/openapi.json`)).body.info.version, version, '/openapi.json names the package\'s version');

  const created = await postJson(`${store.url}/v2/events`, imageEvent({ deviceId: 'cam-release' }));
  t.equal(created.status, 201, 'a create');
  t.equal((await getJson(`${store.url}/v2/events/${created.body.id}`)).body.id, created.body.id, 'read back');
  const listed = await run(bin, ['events', 'device:cam-release', '--store', store.url, '--json'], { cwd: elsewhere, env });
  t.same((JSON.parse(listed.stdout) as { events: { id: string }[] }).events.map((event) => event.id), [created.body.id], 'edge-events events finds it');

  store.child.kill('SIGTERM');
  const [code] = (await once(store.child, 'exit')) as [number | null];
  t.equal(code, 0, 'a graceful stop');

  // The kept binary serves its Node; removed (this machine's libc upgraded under an install made
  // before, say), the store falls back to node:http and its log line says why.
  if (expected.length > 0) {
    const binary = expected[0]!;
    const node = binary.abi === host.abi ? process.execPath : await nodeRelease(NODE_OF_ABI[binary.abi]!);
    const engineWith = async (name: string) => {
      const served = await spawnStore({ PORT: '0', DATA_DIR: path.join(work, `data-${name}`), PATH: env.PATH }, node, { command: [node, bin], cwd: elsewhere });
      const { runtime } = (await getJson(`${served.url}/stats`)).body as { runtime: { http_engine: string; uws_build: string | null } };
      served.child.kill('SIGTERM');
      await once(served.child, 'exit');
      return { runtime, output: served.output() };
    };
    const before = await engineWith('kept');
    t.same(before.runtime.http_engine, 'uws', `Node ${NODE_OF_ABI[binary.abi]} serves on the kept ${binary.file}`);
    fs.rmSync(path.join(installed, 'node_modules', binary.build.packageName, binary.file));
    const after = await engineWith('removed');
    t.match(after.runtime, { http_engine: 'node', uws_build: null }, 'without it: node:http');
    t.match(after.output, `HTTP engine: node:http FALLBACK`, 'the start-up warning');
    t.match(after.output, `${binary.build.packageName}@${binary.build.pinnedVersion}: did not load (its binary ${binary.file} is not installed`, 'naming the missing binary');
  }

  // The shipped unit, with the installed command where systemd's search path would find it.
  const unit = fs.readFileSync(path.join(installed, 'systemd', 'edge-events.service'), 'utf8');
  t.match(unit, /^ExecStart=edge-events serve$/m, 'the unit runs edge-events from the search path');
  const unitFile = path.join(work, 'edge-events.service');
  fs.writeFileSync(unitFile, unit.replace(/^ExecStart=edge-events /m, `ExecStart=${bin} `));
  const verified = await run('systemd-analyze', ['verify', unitFile], { env }).then(({ stderr }) => ({ code: 0, stderr }), (err: { code: number; stderr: string }) => err);
  t.same({ code: verified.code, stderr: verified.stderr }, { code: 0, stderr: '' }, 'systemd-analyze verify passes');
});
