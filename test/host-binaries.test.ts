/**
 * Which native binaries an install keeps (docs/OPERATIONS.md, "Footprint"): the rule over a table
 * of hosts, the Node ABIs taken from package.json's engines, the prune of a tree holding the
 * pinned uWebSockets.js packages' real file names (empty files) and node-gyp-build prebuilds, and
 * the loader's answer when the binary it would load was removed; fs-native-extensions' real
 * prebuilds pruned for each architecture, and its loader on the tree pruned for this one. Then
 * the dependencies' files Node never loads: the addons of the other libc (lmdb's, msgpackr-extract's and utf-8-validate's
 * real names), with their own loaders run in a child process as glibc and as musl to show that
 * what they pick stays; source maps and TypeScript sources, never the store's own files.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { fallbackNotice } from '../src/http/engine-choice.js';
import { uwsBinariesToKeep, UWS_BUILDS, type InstalledBuilds, type UwsHost } from '../src/http/uws/uws-builds.js';
import { loadUws } from '../src/http/uws/uws-loader.js';
import { devFileKind } from '../src/install/dependency-dev-files.js';
import { installTreeNodeModules } from '../src/install-tree.js';
import { nodeAbisToKeep, otherLibcBinaries, pruneHostBinaries } from '../src/install/host-binaries.js';
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
  addUwsPackages(path.join(root, 'node_modules'));
  for (const pkg of ['bufferutil', 'utf-8-validate']) {
    for (const target of ['linux-x64', 'darwin-x64+arm64', 'win32-ia32']) {
      fs.mkdirSync(path.join(root, 'node_modules', pkg, 'prebuilds', target), { recursive: true });
      fs.writeFileSync(path.join(root, 'node_modules', pkg, 'prebuilds', target, 'node.napi.node'), 'x');
    }
  }
  return root;
}

/** The two pinned uWebSockets.js packages under `nodeModules`: their package.json and their binaries' real names as empty files. */
function addUwsPackages(nodeModules: string, builds = [UWS_BUILDS['btc-vision'], UWS_BUILDS.trufflesuite]): void {
  for (const build of builds) {
    const real = path.join(packageRoot, 'node_modules', build.packageName);
    const copy = path.join(nodeModules, build.packageName);
    fs.mkdirSync(copy, { recursive: true });
    fs.copyFileSync(path.join(real, 'package.json'), path.join(copy, 'package.json'));
    for (const file of filesUnder(real).filter((name) => name.endsWith('.node'))) {
      fs.mkdirSync(path.dirname(path.join(copy, file)), { recursive: true });
      fs.writeFileSync(path.join(copy, file), 'x');
    }
  }
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

/** The `*.node` files under `dir`, relative to it, sorted. */
const binariesUnder = (dir: string) => filesUnder(dir).filter((file) => file.endsWith('.node'));

t.test('the prune touches only its install\'s tree: never a parent folder\'s node_modules, nor another global package', async (t) => {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'ees-prune-tree-'));
  t.teardown(() => fs.rmSync(base, { recursive: true, force: true }));
  const host: UwsHost = { ...linux('2.39'), abi: 137 };
  const manifest = JSON.stringify({ name: 'edge-event-store', engines: { node: ENGINES } });

  // A project installed the tarball; an unrelated project one folder up has its own uWebSockets.js.
  const unrelated = path.join(base, 'node_modules');
  addUwsPackages(unrelated);
  const unrelatedBefore = binariesUnder(unrelated);
  const project = path.join(base, 'project');
  const root = path.join(project, 'node_modules', 'edge-event-store');
  fs.mkdirSync(root, { recursive: true });
  fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ dependencies: { 'edge-event-store': '*' } }));
  fs.writeFileSync(path.join(root, 'package.json'), manifest);
  // npm hoisted trufflesuite's package to the project's node_modules; btc-vision's was not installed (an optional dependency left out).
  addUwsPackages(path.join(project, 'node_modules'), [UWS_BUILDS.trufflesuite]);

  t.same(installTreeNodeModules(root), [path.join(root, 'node_modules'), path.join(project, 'node_modules')], 'the tree: its own node_modules, the project\'s it was hoisted into');
  const report = pruneHostBinaries(root, host);
  t.same(binariesUnder(unrelated), unrelatedBefore, `the parent folder's ${unrelatedBefore.length} binaries all stay`);
  t.same(report.keptUws, ['../@trufflesuite/uws-js-unofficial/binaries/uws_linux_x64_115.node'], 'the hoisted dependency npm installed for it is pruned to the one binary kept');
  t.same(binariesUnder(path.join(project, 'node_modules')), ['@trufflesuite/uws-js-unofficial/binaries/uws_linux_x64_115.node']);
  t.ok(report.removed.every((file) => file.startsWith('../@trufflesuite/')), 'nothing removed outside the install\'s tree');

  // npm install -g: every global package keeps its dependencies in its own node_modules, so a sibling's are another install's.
  const globalModules = path.join(base, 'prefix', 'lib', 'node_modules');
  const globalRoot = path.join(globalModules, 'edge-event-store');
  fs.mkdirSync(path.join(globalRoot, 'node_modules'), { recursive: true });
  fs.writeFileSync(path.join(globalRoot, 'package.json'), manifest);
  addUwsPackages(globalModules);
  const siblingsBefore = binariesUnder(globalModules);
  t.same(installTreeNodeModules(globalRoot), [path.join(globalRoot, 'node_modules')], 'global: its own node_modules only');
  t.same(pruneHostBinaries(globalRoot, host).removed, [], 'global: nothing removed');
  t.same(binariesUnder(globalModules), siblingsBefore, 'global: the other global package\'s binaries all stay');
});

t.test('the postinstall, run as npm runs it, leaves the home folder\'s uWebSockets.js alone and prunes its own', async (t) => {
  t.ok(fs.existsSync(path.join(packageRoot, 'dist', 'src', 'install', 'host-binaries.js')), 'dist/ is built (npm run build)');
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'ees-postinstall-'));
  t.teardown(() => fs.rmSync(base, { recursive: true, force: true }));
  const home = path.join(base, 'home');
  addUwsPackages(path.join(home, '.node_modules'));
  addUwsPackages(path.join(home, 'node_modules'));
  const homeBefore = binariesUnder(home);
  // A global install under the home folder: ~/.local/lib/node_modules/edge-event-store, as docs/OPERATIONS.md's `--prefix ~/.local`.
  const root = path.join(home, '.local', 'lib', 'node_modules', 'edge-event-store');
  fs.mkdirSync(path.join(root, 'scripts'), { recursive: true });
  fs.writeFileSync(path.join(root, 'package.json'), JSON.stringify({ name: 'edge-event-store', engines: { node: ENGINES } }));
  fs.copyFileSync(path.join(packageRoot, 'scripts', 'prune-host-binaries.mjs'), path.join(root, 'scripts', 'prune-host-binaries.mjs'));
  fs.symlinkSync(path.join(packageRoot, 'dist'), path.join(root, 'dist'));
  addUwsPackages(path.join(root, 'node_modules'), [UWS_BUILDS.trufflesuite]);
  const ownBefore = binariesUnder(path.join(root, 'node_modules'));

  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, npm_config_global: 'true' };
  delete env.EDGE_EVENTS_KEEP_ALL_BINARIES;
  const { stdout, stderr } = await promisify(execFile)(process.execPath, [path.join(root, 'scripts', 'prune-host-binaries.mjs')], { cwd: root, env });
  t.equal(stderr, '', 'no warning');
  t.match(stdout, /^edge-event-store: removed /, stdout.trim());
  t.ok(binariesUnder(path.join(root, 'node_modules')).length < ownBefore.length, 'its own uWebSockets.js package was pruned');
  t.same(binariesUnder(home).filter((file) => !file.startsWith('.local/')), homeBefore, 'the home folder\'s node_modules and .node_modules keep every binary');
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

t.test('fs-native-extensions, the data folder\'s lock: the prune keeps the prebuild of the host\'s architecture, and its loader loads it from the pruned tree', async (t) => {
  // Its real files: prebuilds/<platform>-<arch>/ of 13 platforms, each an N-API `.node` and a
  // `.bare` (the Bare runtime's), found by require-addon, which looks in no other folder on Linux glibc.
  const real = path.join(packageRoot, 'node_modules', 'fs-native-extensions');
  const requireAddon = createRequire(path.join(real, 'package.json'))('require-addon') as (specifier: string, parent: string) => { tryLock: unknown };
  const other = process.arch === 'x64' ? 'arm64' : 'x64';
  const pruned: Record<string, string> = {};
  for (const arch of [process.arch, other]) {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ees-lock-addon-'));
    t.teardown(() => fs.rmSync(root, { recursive: true, force: true }));
    fs.writeFileSync(path.join(root, 'package.json'), JSON.stringify({ name: 'edge-event-store', engines: { node: ENGINES } }));
    const copy = path.join(root, 'node_modules', 'fs-native-extensions');
    fs.cpSync(real, copy, { recursive: true });
    const report = pruneHostBinaries(root, { ...linux('2.36', arch), abi: Number(process.versions.modules) });
    t.same(report.failed, []);
    t.same(binariesUnder(copy), [`prebuilds/linux-${arch}/fs-native-extensions.node`], `pruned for linux-${arch}: its prebuild alone is left`);
    pruned[arch] = copy;
  }
  t.type(requireAddon('.', path.join(pruned[process.arch], 'binding.js')).tryLock, 'function', `the tree pruned for this host (linux-${process.arch}) loads the lock`);
  t.throws(() => requireAddon('.', path.join(pruned[other], 'binding.js')), { code: 'ADDON_NOT_FOUND' }, `the tree pruned for linux-${other} has none for this host: the loader read the pruned tree`);
});

/**
 * Dependencies' files in the tree at `root`, each as `[path under root, content]`: lmdb's and
 * msgpackr-extract's platform packages and utf-8-validate's linux-x64 prebuilds with the addon
 * names they ship (lmdb 3.5.6, msgpackr-extract 3.0.7, utf-8-validate 6.0.3; empty files), the
 * package.json files their loaders read, source maps of every kind, TypeScript sources and
 * declarations, a data file that merely ends in `.map`, and the store's own dist/.
 */
const DEPENDENCY_FILES: Record<string, string> = {
  'node_modules/lmdb/package.json': JSON.stringify({ name: 'lmdb', version: '3.5.6', main: 'dist/index.cjs' }),
  'node_modules/lmdb/dist/index.cjs': '',
  'node_modules/lmdb/dist/index.cjs.map': '{}',
  'node_modules/@lmdb/lmdb-linux-x64/package.json': JSON.stringify({ name: '@lmdb/lmdb-linux-x64', version: '3.5.6', os: ['linux'], cpu: ['x64'] }),
  'node_modules/@lmdb/lmdb-linux-x64/index.js': '',
  'node_modules/@lmdb/lmdb-linux-x64/node.abi115.glibc.node': 'x',
  'node_modules/@lmdb/lmdb-linux-x64/node.abi127.glibc.node': 'x',
  'node_modules/@lmdb/lmdb-linux-x64/node.napi.glibc.node': 'x',
  'node_modules/@lmdb/lmdb-linux-x64/node.napi.musl.node': 'x',
  'node_modules/msgpackr-extract/package.json': JSON.stringify({ name: 'msgpackr-extract', version: '3.0.7' }),
  'node_modules/@msgpackr-extract/msgpackr-extract-linux-x64/package.json': JSON.stringify({ name: '@msgpackr-extract/msgpackr-extract-linux-x64', version: '3.0.7' }),
  'node_modules/@msgpackr-extract/msgpackr-extract-linux-x64/index.js': '',
  'node_modules/@msgpackr-extract/msgpackr-extract-linux-x64/node.abi115.glibc.node': 'x',
  'node_modules/@msgpackr-extract/msgpackr-extract-linux-x64/node.abi115.musl.node': 'x',
  'node_modules/@msgpackr-extract/msgpackr-extract-linux-x64/node.napi.glibc.node': 'x',
  'node_modules/@msgpackr-extract/msgpackr-extract-linux-x64/node.napi.musl.node': 'x',
  'node_modules/utf-8-validate/package.json': JSON.stringify({ name: 'utf-8-validate', version: '6.0.3' }),
  'node_modules/utf-8-validate/prebuilds/linux-x64/node.napi.musl.node': 'x',
  'node_modules/@node-rs/crc32-linux-x64-gnu/crc32.linux-x64-gnu.node': 'x',
  'node_modules/@img/sharp-linux-x64/lib/sharp-linux-x64-0.35.5.node': 'x',
  'node_modules/swagger-ui-dist/swagger-ui.css': '',
  'node_modules/swagger-ui-dist/swagger-ui.css.map': '{}',
  'node_modules/swagger-ui-dist/swagger-ui-bundle.js.map': '{}',
  'node_modules/zod/index.js': '',
  'node_modules/zod/index.d.ts': '',
  'node_modules/zod/index.d.cts': '',
  'node_modules/zod/index.d.mts': '',
  'node_modules/zod/styles.d.css.ts': '',
  'node_modules/zod/index.d.ts.map': '{}',
  'node_modules/zod/index.mjs.map': '{}',
  'node_modules/zod/index.cjs.map': '{}',
  'node_modules/zod/src/index.ts': '',
  'node_modules/zod/src/v4.mts': '',
  'node_modules/zod/src/v4.cts': '',
  'node_modules/@modelcontextprotocol/sdk/dist/esm/server/index.js.map': '{}',
  'node_modules/@modelcontextprotocol/sdk/dist/cjs/server/index.d.ts.map': '{}',
  'node_modules/some-ui/Component.tsx': '',
  'node_modules/some-ui/Component.jsx.map': '{}',
  'node_modules/geo-data/regions.map': 'data, not a source map',
  'node_modules/pino/package.json': JSON.stringify({ name: 'pino', version: '10.1.0' }),
  'node_modules/pino/test/basic.test.js': '',
  'node_modules/pino/benchmarks/basic.bench.js': '',
  'node_modules/pino/lib/test/helper.js': 'a folder named test inside lib/ stays',
  'node_modules/ordered-binary/package.json': JSON.stringify({ name: 'ordered-binary', version: '1.6.0' }),
  'node_modules/ordered-binary/.claude/worktrees/a/index.js': '',
  'node_modules/@pinojs/redact/package.json': JSON.stringify({ name: '@pinojs/redact', version: '0.4.0' }),
  'node_modules/@pinojs/redact/.github/workflows/ci.yml': '',
  'node_modules/busboy/package.json': JSON.stringify({ name: 'busboy', version: '1.6.0' }),
  'node_modules/busboy/node_modules/streamsearch/package.json': JSON.stringify({ name: 'streamsearch', version: '1.1.0' }),
  'node_modules/busboy/node_modules/streamsearch/test/test.js': '',
  'node_modules/test/package.json': JSON.stringify({ name: 'test', version: '3.3.0' }),
  'node_modules/test/index.js': 'a package named test stays',
  'test/own.test.js': 'the store\'s own test folder stays',
  'dist/src/cli.js': '',
  'dist/src/cli.js.map': '{}',
  'page/index.ts': '',
};

/** Adds DEPENDENCY_FILES to the tree at `root`. */
function addDependencyFiles(root: string): void {
  for (const [file, content] of Object.entries(DEPENDENCY_FILES)) {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), content);
  }
}

t.test('which dependency files Node never loads', async (t) => {
  const kinds = Object.fromEntries(['a.js.map', 'a.cjs.map', 'a.mjs.map', 'a.css.map', 'a.d.ts.map', 'a.d.mts.map', 'a.jsx.map', 'a.ts', 'a.mts', 'a.cts', 'a.tsx',
    'a.d.ts', 'a.d.mts', 'a.d.cts', 'a.d.css.ts', 'a.js', 'a.map', 'a.json', 'tsconfig.json', 'a.node'].map((name) => [name, devFileKind(name) ?? 'kept']));
  t.same(kinds, {
    'a.js.map': 'source map', 'a.cjs.map': 'source map', 'a.mjs.map': 'source map', 'a.css.map': 'source map', 'a.d.ts.map': 'source map', 'a.d.mts.map': 'source map', 'a.jsx.map': 'source map',
    'a.ts': 'TypeScript source', 'a.mts': 'TypeScript source', 'a.cts': 'TypeScript source', 'a.tsx': 'TypeScript source',
    'a.d.ts': 'kept', 'a.d.mts': 'kept', 'a.d.cts': 'kept', 'a.d.css.ts': 'kept', 'a.js': 'kept', 'a.map': 'kept', 'a.json': 'kept', 'tsconfig.json': 'kept', 'a.node': 'kept',
  });
});

t.test('the other libc\'s addons go, on Linux only, and untagged addons stay', async (t) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'ees-libc-'));
  t.teardown(() => fs.rmSync(root, { recursive: true, force: true }));
  addDependencyFiles(root);
  const nodeModules = path.join(root, 'node_modules');
  const names = (host: Pick<UwsHost, 'platform' | 'glibc'>) => otherLibcBinaries(nodeModules, host).map((file) => path.relative(nodeModules, file)).sort();
  t.same(names(linux('2.36')), ['@lmdb/lmdb-linux-x64/node.napi.musl.node', '@msgpackr-extract/msgpackr-extract-linux-x64/node.abi115.musl.node',
    '@msgpackr-extract/msgpackr-extract-linux-x64/node.napi.musl.node', 'utf-8-validate/prebuilds/linux-x64/node.napi.musl.node'], 'glibc: the musl builds');
  t.same(names(linux(null)), ['@lmdb/lmdb-linux-x64/node.abi115.glibc.node', '@lmdb/lmdb-linux-x64/node.abi127.glibc.node', '@lmdb/lmdb-linux-x64/node.napi.glibc.node',
    '@msgpackr-extract/msgpackr-extract-linux-x64/node.abi115.glibc.node', '@msgpackr-extract/msgpackr-extract-linux-x64/node.napi.glibc.node'], 'musl: the glibc builds');
  t.same(names({ platform: 'darwin', glibc: null }), [], 'not Linux: none');
});

/** The addon each loader picks in the tree at `root` for this Node, as linux-x64 with `libc`, in a child process (the loaders read the libc at their load). */
async function loadersPick(root: string, libc: 'glibc' | 'musl'): Promise<Record<string, string>> {
  const real = (pkg: string, loader: string) => createRequire(path.join(packageRoot, 'node_modules', pkg, 'package.json')).resolve(loader);
  const jobs = {
    lmdb: [real('lmdb', 'node-gyp-build-optional-packages'), path.join(root, 'node_modules', 'lmdb')],
    'msgpackr-extract': [real('msgpackr-extract', 'node-gyp-build-optional-packages'), path.join(root, 'node_modules', 'msgpackr-extract')],
    'utf-8-validate': [real('utf-8-validate', 'node-gyp-build'), path.join(root, 'node_modules', 'utf-8-validate')],
  };
  const code = `const jobs = ${JSON.stringify(jobs)}; const picked = {};
    for (const [name, [loader, dir]] of Object.entries(jobs)) picked[name] = require('node:path').relative(dir, require(loader).resolve(dir));
    console.log(JSON.stringify(picked));`;
  const env = { ...process.env, LIBC: libc, npm_config_platform: 'linux', npm_config_arch: 'x64' };
  return JSON.parse((await promisify(execFile)(process.execPath, ['-e', code], { env })).stdout) as Record<string, string>;
}

t.test('the prune leaves what lmdb\'s, msgpackr-extract\'s and utf-8-validate\'s loaders pick, drops test folders, source maps and TypeScript sources of dependencies only', async (t) => {
  const abi = Number(process.versions.modules);
  const cases: { libc: 'glibc' | 'musl'; host: UwsHost; lmdb: string[]; msgpackr: string[]; utf8: string[] }[] = [
    { libc: 'glibc', host: { ...linux('2.36'), abi }, lmdb: ['node.abi115.glibc.node', 'node.abi127.glibc.node', 'node.napi.glibc.node'], msgpackr: ['node.abi115.glibc.node', 'node.napi.glibc.node'], utf8: ['node.napi.node'] },
    { libc: 'musl', host: { ...linux(null), abi }, lmdb: ['node.napi.musl.node'], msgpackr: ['node.abi115.musl.node', 'node.napi.musl.node'], utf8: ['node.napi.musl.node', 'node.napi.node'] },
  ];
  for (const { libc, host, lmdb, msgpackr, utf8 } of cases) {
    const root = fixtureTree();
    t.teardown(() => fs.rmSync(root, { recursive: true, force: true }));
    addDependencyFiles(root);
    const before = await loadersPick(root, libc);
    const report = pruneHostBinaries(root, host);
    t.same(report.failed, []);
    const addons = (dir: string) => fs.readdirSync(path.join(root, 'node_modules', dir)).filter((name) => name.endsWith('.node')).sort();
    t.same(addons('@lmdb/lmdb-linux-x64'), lmdb, `${libc}: lmdb's ${lmdb.join(', ')}`);
    t.same(addons('@msgpackr-extract/msgpackr-extract-linux-x64'), msgpackr, `${libc}: msgpackr-extract's ${msgpackr.join(', ')}`);
    t.same(addons('utf-8-validate/prebuilds/linux-x64'), utf8, `${libc}: utf-8-validate's ${utf8.join(', ')}`);
    t.same(await loadersPick(root, libc), before, `${libc}: each loader picks the same addon as before the prune (${Object.values(before).join(', ')})`);

    const left = filesUnder(root);
    t.same(left.filter((file) => file.startsWith('node_modules/') && /\.map$/.test(file)), ['node_modules/geo-data/regions.map'], `${libc}: no source map of a dependency left; a data file named .map stays`);
    t.same(left.filter((file) => file.startsWith('node_modules/') && /\.([cm]?ts|tsx)$/.test(file)).sort(),
      ['node_modules/zod/index.d.cts', 'node_modules/zod/index.d.mts', 'node_modules/zod/index.d.ts', 'node_modules/zod/styles.d.css.ts'], `${libc}: declarations stay, TypeScript sources go`);
    t.ok(left.includes('dist/src/cli.js.map') && left.includes('page/index.ts'), `${libc}: the store's own files are never touched`);
    t.ok(['node_modules/@node-rs/crc32-linux-x64-gnu/crc32.linux-x64-gnu.node', 'node_modules/@img/sharp-linux-x64/lib/sharp-linux-x64-0.35.5.node'].every((file) => left.includes(file)),
      `${libc}: napi-rs's and sharp's addons, untagged, stay (npm installs them per libc)`);
    t.same(left.filter((file) => /(^|\/)(tests?|__tests__|bench(marks?)?|\.github|\.claude)\//.test(file)).sort(),
      ['node_modules/pino/lib/test/helper.js', 'node_modules/test/index.js', 'node_modules/test/package.json', 'test/own.test.js'],
      `${libc}: dependencies' test, benchmark and CI folders go; a deeper folder named test, a package named test and the store's own stay`);
    t.match(report.removedByKind, { 'source map': { count: 9 }, 'TypeScript source': { count: 4 }, 'development folder': { count: 5 } }, `${libc}: counted by kind`);
    t.same(pruneHostBinaries(root, host).removed, [], `${libc}: a second run removes nothing`);
  }
});
