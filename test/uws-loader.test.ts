/**
 * The choice of a native uWebSockets.js build: the pure decision over a table of hosts (Node ABI,
 * glibc, platform) and installed packages; the declared table checked against the installed
 * packages and package.json's pins; the loader on this machine, which looks for builds in its own
 * install only; the fallback notice.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { fallbackNotice, uwsNeeds } from '../src/http/engine-choice.js';
import { chooseUwsBuilds, compareVersions, UWS_BUILDS, type InstalledBuilds, type UwsBuildId, type UwsHost } from '../src/http/uws/uws-builds.js';
import { currentHost, installedBuilds, loadUws, type UwsLoadReport } from '../src/http/uws/uws-loader.js';
import { packageRoot } from '../src/paths.js';

const PINNED: InstalledBuilds = { 'btc-vision': '20.57.0', trufflesuite: '20.30.0-unofficial.0' };
const WITH_OFFICIAL: InstalledBuilds = { ...PINNED, official: '20.56.0' };
const linux = (abi: number, glibc: string | null, arch = 'x64'): UwsHost => ({ platform: 'linux', arch, abi, glibc });

interface Row {
  case: string;
  host: UwsHost;
  installed: InstalledBuilds;
  /** Builds to try, in order. */
  tries: UwsBuildId[];
  /** Reasons expected among the builds passed over. */
  why?: Partial<Record<UwsBuildId, RegExp>>;
}

const TABLE: Row[] = [
  { case: 'Node 20, Debian 12 (glibc 2.36)', host: linux(115, '2.36'), installed: PINNED, tries: ['trufflesuite'],
    why: { 'btc-vision': /need glibc >= 2\.38; this machine has 2\.36/, official: /not installed \(npm install uNetworking\/uWebSockets\.js#v20\.x\)/ } },
  { case: 'Node 20, Ubuntu 24.04 (glibc 2.39)', host: linux(115, '2.39'), installed: PINNED, tries: ['trufflesuite', 'btc-vision'] },
  { case: 'Node 18, glibc 2.31', host: linux(108, '2.31'), installed: PINNED, tries: ['trufflesuite'], why: { 'btc-vision': /no binary for Node 18 \(ABI 108\)/ } },
  { case: 'Node 20, glibc 2.26 (older than the build needs)', host: linux(115, '2.26'), installed: PINNED, tries: [], why: { trufflesuite: /need glibc >= 2\.27; this machine has 2\.26/ } },
  { case: 'Node 22, Debian 12', host: linux(127, '2.36'), installed: PINNED, tries: [],
    why: { 'btc-vision': /glibc >= 2\.38/, trufflesuite: /no binary for Node 22 \(ABI 127\); has Node 16 \(93\), Node 18 \(108\), Node 20 \(115\)/ } },
  { case: 'Node 22, Ubuntu 24.04', host: linux(127, '2.39'), installed: PINNED, tries: ['btc-vision'] },
  { case: 'Node 24, Debian 12', host: linux(137, '2.36'), installed: PINNED, tries: [], why: { trufflesuite: /no binary for Node 24 \(ABI 137\)/ } },
  { case: 'Node 24, Ubuntu 22.04 (glibc 2.35)', host: linux(137, '2.35'), installed: PINNED, tries: [] },
  { case: 'Node 24, Jetson L4T (arm64, glibc 2.35)', host: linux(137, '2.35', 'arm64'), installed: PINNED, tries: [], why: { 'btc-vision': /glibc >= 2\.38; this machine has 2\.35/ } },
  { case: 'Node 24, glibc 2.38 exactly', host: linux(137, '2.38'), installed: PINNED, tries: ['btc-vision'] },
  { case: 'Node 24, Debian 12, official package installed', host: linux(137, '2.36'), installed: WITH_OFFICIAL, tries: ['official'] },
  { case: 'Node 24, Ubuntu 24.04, official package installed', host: linux(137, '2.39'), installed: WITH_OFFICIAL, tries: ['official', 'btc-vision'] },
  { case: 'Node 20, Debian 12, official package installed', host: linux(115, '2.36'), installed: WITH_OFFICIAL, tries: ['official', 'trufflesuite'] },
  { case: 'Node 25, glibc 2.40', host: linux(141, '2.40'), installed: PINNED, tries: ['btc-vision'] },
  { case: 'a Node ABI no build has', host: linux(999, '2.40'), installed: PINNED, tries: [], why: { 'btc-vision': /no binary for Node ABI 999/ } },
  { case: 'Node 20 on musl (Alpine)', host: linux(115, null), installed: PINNED, tries: [], why: { trufflesuite: /this Linux has another libc/ } },
  { case: 'Node 20, 32-bit ARM, glibc 2.27', host: linux(115, '2.27', 'arm'), installed: PINNED, tries: [], why: { trufflesuite: /glibc >= 2\.28/, 'btc-vision': /no binary for linux-arm/ } },
  { case: 'Node 20, 32-bit ARM, glibc 2.28', host: linux(115, '2.28', 'arm'), installed: PINNED, tries: ['trufflesuite'] },
  { case: 'Node 24, macOS arm64 (no glibc)', host: { platform: 'darwin', arch: 'arm64', abi: 137, glibc: null }, installed: PINNED, tries: ['btc-vision'] },
  { case: 'Node 20, Windows x64', host: { platform: 'win32', arch: 'x64', abi: 115, glibc: null }, installed: PINNED, tries: ['trufflesuite', 'btc-vision'] },
  { case: 'Node 20, FreeBSD', host: { platform: 'freebsd', arch: 'x64', abi: 115, glibc: null }, installed: PINNED, tries: [], why: { trufflesuite: /no binary for freebsd-x64/ } },
  { case: 'another trufflesuite version installed', host: linux(115, '2.36'), installed: { ...PINNED, trufflesuite: '20.31.0' }, tries: [],
    why: { trufflesuite: /version 20\.31\.0 installed, 20\.30\.0-unofficial\.0 pinned/ } },
  { case: 'optional dependencies left out (npm install --omit=optional)', host: linux(115, '2.36'), installed: {}, tries: [],
    why: { trufflesuite: /not installed/, 'btc-vision': /not installed/ } },
];

t.test('the builds tried, in order, for each host and set of installed packages', async (t) => {
  for (const row of TABLE) {
    const choice = chooseUwsBuilds(row.host, row.installed);
    t.same(choice.candidates.map((c) => c.build.id), row.tries, row.case);
    const considered = [...choice.candidates.map((c) => c.build.id), ...choice.passedOver.map((p) => p.build.id)].sort();
    t.same(considered, ['btc-vision', 'official', 'trufflesuite'], `${row.case}: every build tried or passed over with a reason`);
    for (const [id, pattern] of Object.entries(row.why ?? {})) {
      t.match(choice.passedOver.find((p) => p.build.id === id)?.reason, pattern, `${row.case}: ${id}`);
    }
  }
});

t.test('what is loaded: the package main, or the trufflesuite binary itself', async (t) => {
  const entries = (host: UwsHost) => chooseUwsBuilds(host, WITH_OFFICIAL).candidates.map((c) => [c.build.id, c.entry]);
  t.same(entries(linux(115, '2.39')), [['official', ''], ['trufflesuite', 'binaries/uws_linux_x64_115.node'], ['btc-vision', '']]);
  t.same(entries(linux(108, '2.36', 'arm64')), [['official', ''], ['trufflesuite', 'binaries/uws_linux_arm64_108.node']]);
});

t.test('glibc versions compare numerically', async (t) => {
  t.ok(compareVersions('2.36', '2.38') < 0);
  t.ok(compareVersions('2.4', '2.38') < 0, '2.4 is older than 2.38');
  t.equal(compareVersions('2.38', '2.38.0'), 0);
  t.ok(compareVersions('2.40', '2.38') > 0);
});

t.test("the declared table matches the installed packages and package.json's exact pins", async (t) => {
  const manifest = JSON.parse(fs.readFileSync(path.join(packageRoot, 'package.json'), 'utf8'));
  const lock = JSON.parse(fs.readFileSync(path.join(packageRoot, 'package-lock.json'), 'utf8'));
  for (const build of [UWS_BUILDS['btc-vision'], UWS_BUILDS.trufflesuite]) {
    t.equal(manifest.optionalDependencies[build.packageName], build.pinnedVersion, `${build.packageName} pinned exactly, as an optional dependency`);
    const locked = lock.packages[`node_modules/${build.packageName}`];
    t.same([locked.version, locked.optional, /^sha512-/.test(locked.integrity)], [build.pinnedVersion, true, true], `${build.packageName} locked with its integrity hash`);
    const dir = path.join(packageRoot, 'node_modules', build.packageName);
    t.equal(JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).version, build.pinnedVersion, `${build.packageName} installed at the pin`);
    const binaries = fs.readdirSync(path.join(dir, path.dirname(build.entry) || '.')).filter((name) => name.endsWith('.node'));
    const found = binaries.map((name) => /^uws_([a-z0-9]+)_([a-z0-9]+)_(\d+)\.node$/.exec(name)!).filter(Boolean);
    t.same([...new Set(found.map((m) => Number(m[3])))].sort((a, b) => a - b), build.abis, `${build.packageName}: its binaries cover the ABIs declared`);
    t.same([...new Set(found.map((m) => `${m[1]}-${m[2]}`))].sort(), [...build.targets!].sort(), `${build.packageName}: and the platforms declared`);
  }
  t.notOk(manifest.dependencies['uWebSockets.js'], 'the name uWebSockets.js is left free for the official package');
});

t.test('on this machine the loader takes the first build that loads natively', async (t) => {
  const report = loadUws();
  const host = currentHost();
  t.same(report.host, host);
  t.equal(report.loaded?.build.id, report.choice.candidates[0]?.build.id, 'the first candidate loads');
  if (host.platform === 'linux' && host.arch === 'x64' && host.abi === 115 && host.glibc && compareVersions(host.glibc, '2.27') >= 0) {
    t.equal(report.loaded?.label, '@trufflesuite/uws-js-unofficial@20.30.0-unofficial.0', 'Node 20 on glibc Linux: the trufflesuite build');
    t.equal(typeof report.loaded?.uws.App, 'function');
  }
});

t.test("builds are looked for in the package's own install only, never in an ancestor's or the home folder's node_modules", async (t) => {
  // home/node_modules holds a build (planted, or another install's); home/app is the store, installed
  // without one. Under the OS's temp folder: no ancestor of it is a project.
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'ees-home-'));
  t.teardown(() => fs.rmSync(home, { recursive: true, force: true }));
  const planted = path.join(home, 'node_modules', '@trufflesuite', 'uws-js-unofficial');
  fs.mkdirSync(planted, { recursive: true });
  fs.writeFileSync(path.join(planted, 'package.json'), JSON.stringify({ name: '@trufflesuite/uws-js-unofficial', version: '20.30.0-unofficial.0' }));
  fs.mkdirSync(path.join(home, 'app', 'node_modules'), { recursive: true });
  fs.writeFileSync(path.join(home, 'app', 'package.json'), JSON.stringify({ name: 'edge-event-store' }));
  t.same(installedBuilds(path.join(home, 'app')), { versions: {}, dirs: {} }, 'nothing found: Node\'s own lookup would have climbed to it');
  const own = installedBuilds();
  t.equal(own.dirs.trufflesuite, path.join(packageRoot, 'node_modules', '@trufflesuite', 'uws-js-unofficial'), "this checkout's own build is found");
});

t.test('the fallback notice names the engine, the Node ABI, the glibc, what uWS needs and the cost', async (t) => {
  const host = linux(137, '2.36');
  const report: UwsLoadReport = {
    host,
    choice: chooseUwsBuilds(host, PINNED),
    failures: [{ build: UWS_BUILDS.official, error: 'Cannot find module ./uws_linux_x64_137.node' }],
    loaded: undefined,
  };
  const notice = fallbackNotice(report, 'v24.11.1');
  t.match(notice, /^HTTP engine: node:http FALLBACK\. No native uWebSockets\.js loads on Node v24\.11\.1 \(ABI 137\), linux-x64, glibc 2\.36\./);
  t.match(notice, '@btc-vision/uwebsockets.js@20.57.0: its Linux binaries need glibc >= 2.38; this machine has 2.36');
  t.match(notice, '@trufflesuite/uws-js-unofficial@20.30.0-unofficial.0: no binary for Node 24 (ABI 137)');
  t.match(notice, 'uWebSockets.js: did not load (Cannot find module ./uws_linux_x64_137.node)');
  t.match(notice, 'native-bench/RESULTS.md');
  t.equal(uwsNeeds(report).length, 4, 'every build accounted for');
});
