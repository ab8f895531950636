/**
 * Which native binaries an install keeps (docs/OPERATIONS.md, "Footprint"): the rule over a table
 * of hosts, the Node ABIs taken from package.json's engines, the prune of a tree holding the
 * pinned uWebSockets.js packages' real file names (empty files) and node-gyp-build prebuilds, and
 * the loader's answer when the binary it would load was removed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { fallbackNotice } from '../src/http/engine-choice.js';
import { uwsBinariesToKeep, UWS_BUILDS, type InstalledBuilds, type UwsHost } from '../src/http/uws/uws-builds.js';
import { loadUws } from '../src/http/uws/uws-loader.js';
import { nodeAbisToKeep, pruneHostBinaries } from '../src/install/host-binaries.js';
import { packageRoot } from '../src/paths.js';

const PINNED: InstalledBuilds = { 'btc-vision': '20.57.0', trufflesuite: '20.30.0-unofficial.0' };
const ENGINES = JSON.parse(fs.readFileSync(path.join(packageRoot, 'package.json'), 'utf8')).engines.node as string;
const linux = (glibc: string | null, arch = 'x64'): Omit<UwsHost, 'abi'> => ({ platform: 'linux', arch, glibc });
const kept = (host: Omit<UwsHost, 'abi'>, abis: number[], installed = PINNED) =>
  uwsBinariesToKeep(host, abis, installed).map((binary) => `${binary.build.id}:${binary.file}`);

t.test('the Node ABIs kept: those of the engines, and the installing Node', async (t) => {
  t.equal(ENGINES, '^20.0.0 || ^22.0.0 || ^24.0.0 || ^26.0.0', 'package.json\'s engines, as the table below assumes');
  t.same(nodeAbisToKeep(ENGINES, 137), [115, 127, 137, 147]);
  t.same(nodeAbisToKeep(ENGINES, 141), [115, 127, 137, 141, 147], 'Node 25 installing: its own ABI too');
  t.same(nodeAbisToKeep('>=20 <21 || 22.x', 115), [115, 127]);
  t.same(nodeAbisToKeep('', 115), [115], 'no engines: the installing Node only');
});

t.test('one binary per ABI, the loader\'s pick on this platform, arch and libc', async (t) => {
  const all = [115, 127, 137, 147];
  t.same(kept(linux('2.36'), all), ['trufflesuite:binaries/uws_linux_x64_115.node'], 'Debian 12: Node 20 only (the redistribution needs glibc 2.38)');
  t.same(kept(linux('2.39'), all), ['trufflesuite:binaries/uws_linux_x64_115.node', 'btc-vision:uws_linux_x64_127.node', 'btc-vision:uws_linux_x64_137.node'],
    'Ubuntu 24.04: trufflesuite for Node 20 (the loader tries it first there), the redistribution for 22 and 24');
  t.same(kept(linux('2.39'), [...all, 141]), ['trufflesuite:binaries/uws_linux_x64_115.node', 'btc-vision:uws_linux_x64_127.node', 'btc-vision:uws_linux_x64_137.node', 'btc-vision:uws_linux_x64_141.node'],
    'installed by Node 25');
  t.same(kept(linux('2.35', 'arm64'), all), ['trufflesuite:binaries/uws_linux_arm64_115.node'], 'Jetson L4T, arm64');
  t.same(kept(linux(null), all), [], 'musl: none');
  t.same(kept({ platform: 'darwin', arch: 'arm64', glibc: null }, all), ['trufflesuite:binaries/uws_darwin_arm64_115.node', 'btc-vision:uws_darwin_arm64_127.node', 'btc-vision:uws_darwin_arm64_137.node']);
  t.same(kept(linux('2.36'), all, { ...PINNED, official: '20.56.0' }), ['trufflesuite:binaries/uws_linux_x64_115.node'], 'the official package changes nothing: it is never pruned');
  t.same(kept(linux('2.36'), all, { trufflesuite: '20.31.0' }), [], 'a build at another version than pinned: none');
});

/** A package tree with the pinned packages' real file names as empty files, and prebuilds of three platforms. */
function fixtureTree(): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ees-host-binaries-'));
  fs.writeFileSync(path.join(root, 'package.json'), JSON.stringify({ name: 'edge-event-store', engines: { node: ENGINES } }));
  for (const build of [UWS_BUILDS['btc-vision'], UWS_BUILDS.trufflesuite]) {
    const real = path.join(packageRoot, 'node_modules', build.packageName);
    const copy = path.join(root, 'node_modules', build.packageName);
    fs.mkdirSync(copy, { recursive: true });
    fs.copyFileSync(path.join(real, 'package.json'), path.join(copy, 'package.json'));
    for (const file of filesUnder(real).filter((name) => name.endsWith('.node'))) {
      fs.mkdirSync(path.dirname(path.join(copy, file)), { recursive: true });
      fs.writeFileSync(path.join(copy, file), 'x');
    }
  }
  for (const pkg of ['bufferutil', 'utf-8-validate']) {
    for (const target of ['linux-x64', 'darwin-x64+arm64', 'win32-ia32']) {
      fs.mkdirSync(path.join(root, 'node_modules', pkg, 'prebuilds', target), { recursive: true });
      fs.writeFileSync(path.join(root, 'node_modules', pkg, 'prebuilds', target, 'node.napi.node'), 'x');
    }
  }
  return root;
}

/** Every file under `dir`, relative to it, sorted. */
function filesUnder(dir: string): string[] {
  return (fs.readdirSync(dir, { recursive: true, withFileTypes: true }) as fs.Dirent[])
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)))
    .sort();
}

t.test('the prune leaves exactly the host\'s binaries, and is idempotent', async (t) => {
  const cases: { host: UwsHost; left: string[] }[] = [
    { host: { ...linux('2.36'), abi: 137 }, left: ['@trufflesuite/uws-js-unofficial/binaries/uws_linux_x64_115.node'] },
    { host: { ...linux('2.39'), abi: 115 }, left: ['@btc-vision/uwebsockets.js/uws_linux_x64_127.node', '@btc-vision/uwebsockets.js/uws_linux_x64_137.node', '@trufflesuite/uws-js-unofficial/binaries/uws_linux_x64_115.node'] },
  ];
  for (const { host, left } of cases) {
    const root = fixtureTree();
    t.teardown(() => fs.rmSync(root, { recursive: true, force: true }));
    const before = filesUnder(root).filter((file) => file.endsWith('.node')).length;
    const report = pruneHostBinaries(root, host);
    const nodeModules = path.join(root, 'node_modules');
    t.same(filesUnder(nodeModules).filter((file) => file.endsWith('.node')),
      [...left, 'bufferutil/prebuilds/linux-x64/node.napi.node', 'utf-8-validate/prebuilds/linux-x64/node.napi.node'].sort(), `glibc ${host.glibc}: exactly these left`);
    t.same(report.keptUws.sort(), left.map((file) => `node_modules/${file}`).sort(), 'reported as kept');
    t.equal(report.removed.length, before - left.length - 6 + 4, 'every other binary and prebuild folder reported removed');
    t.same(report.failed, []);
    t.same(pruneHostBinaries(root, host).removed, [], 'a second run removes nothing');
    t.ok(filesUnder(nodeModules).includes('@trufflesuite/uws-js-unofficial/package.json'), 'the packages themselves stay');
  }
});

t.test('a binary the install removed: the loader says so and the store would fall back to node:http', async (t) => {
  const root = fixtureTree();
  t.teardown(() => fs.rmSync(root, { recursive: true, force: true }));
  pruneHostBinaries(root, { ...linux('2.36'), abi: 137 });
  const dirs = {
    'btc-vision': path.join(root, 'node_modules', '@btc-vision/uwebsockets.js'),
    trufflesuite: path.join(root, 'node_modules', '@trufflesuite/uws-js-unofficial'),
  };
  // Debian 12 upgraded to glibc 2.39 after the install: Node 24's redistribution binary was never kept.
  const report = loadUws({ ...linux('2.39'), abi: 137 }, { versions: PINNED, dirs });
  t.equal(report.loaded, undefined, 'nothing loads');
  t.same(report.failures.map((failure) => failure.build.id), ['btc-vision'], 'the one candidate for Node 24 there');
  t.match(report.failures[0]?.error, /^its binary uws_linux_x64_137\.node is not installed: .*reinstall the package under this Node \(docs\/OPERATIONS\.md, "Footprint"\)$/);
  t.match(fallbackNotice(report, 'v24.11.1'), '@btc-vision/uwebsockets.js@20.57.0: did not load (its binary uws_linux_x64_137.node is not installed');
});
