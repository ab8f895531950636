/**
 * The Debian package (docs/OPERATIONS.md, "The Debian package"): `scripts/package-deb.ts` builds
 * the .deb, `dpkg-deb -I` and `-c` show its control data and layout, and dpkg installs it into a
 * throwaway root (test/support/throwaway-root.ts: this machine's /usr, /etc and dpkg database
 * under overlays, so `Depends:` is checked against the nodejs package really installed here and
 * the maintainer scripts run chrooted with real adduser and deb-systemd-helper, while nothing of
 * this machine changes). The installed `/usr/bin/edge-events serve` runs in the root as the
 * package's user with the installed env file's settings, on the node of the nodejs package, takes
 * an event (LMDB) and makes its image's thumbnail (sharp). The installed tree is at most 120 MB by
 * `du` (#29 item 4), without the dependencies' source maps, TypeScript sources and addons of the
 * other libc (docs/OPERATIONS.md, "Footprint"). Then the env file is edited, a rebuilt package with a higher version is
 * installed over the first, and the event and the edit survive; remove keeps the data and the
 * env file, purge removes both and keeps the system user.
 *
 * Slow (two builds, each a pack, an install and an xz compression): not part of `npm test`;
 * `npm run test:deb` runs it, and .ci/run runs that. Needs root, overlayfs and dpkg.
 */
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseEnv, promisify } from 'node:util';
import t from 'tap';
import { spawnStore } from '../../scripts/lib/spawned-store.js';
import { foreignBinaries, nativeAddons } from '../../scripts/lib/native-binaries.js';
import { npmFreeEnv } from '../../scripts/lib/release-tarball.js';
import { uwsBinariesToKeep, UWS_BUILDS } from '../../src/http/uws/uws-builds.js';
import { currentHost, installedBuilds } from '../../src/http/uws/uws-loader.js';
import { devFileKind } from '../../src/install/dependency-dev-files.js';
import { nodeAbisToKeep, otherLibcBinaries } from '../../src/install/host-binaries.js';
import { packageRoot } from '../../src/paths.js';
import { getJson, imageEvent, postJson } from '../support/events.js';
import { openThrowawayRoot, SYSTEMD_PATH, type ThrowawayRoot } from '../support/throwaway-root.js';

const run = promisify(execFile);

const PROGRAM = '/usr/lib/edge-events';
const ENV_FILE = '/etc/edge-events/edge-events.env';
const DATA_DIR = '/var/lib/edge-events';
const UNIT = '/lib/systemd/system/edge-events.service';
const WANTS = '/etc/systemd/system/multi-user.target.wants/edge-events.service';
/** The unit's CacheDirectory= (Node's module compile cache). */
const CACHE_DIR = '/var/cache/edge-events';
/** The installed runtime's ceiling, `du -sk` of PROGRAM: 120 MB (#29 item 4) in KiB. */
const MAX_INSTALLED_KIB = Math.floor(120e6 / 1024);

/**
 * Builds the package with the script as `npm run package:deb` runs it.
 * @returns the .deb's path, and the steps the script printed on its way (`package:deb: <step>`)
 */
async function buildDeb(out: string, version?: string): Promise<{ deb: string; steps: string[] }> {
  const env = npmFreeEnv();
  delete env.EDGE_EVENTS_DEB_VERSION;
  delete env.EDGE_EVENTS_DEB_MAINTAINER;
  if (version !== undefined) env.EDGE_EVENTS_DEB_VERSION = version;
  const built = await run(process.execPath, [path.join(packageRoot, 'dist', 'scripts', 'package-deb.js'), '--out', out], { env, maxBuffer: 64 << 20 });
  const deb = /^(\S+\.deb): /m.exec(built.stdout)?.[1];
  if (!deb) throw new Error(`package-deb printed no .deb: ${built.stdout}${built.stderr}`);
  return { deb, steps: [...built.stdout.matchAll(/^package:deb: (.*)$/gm)].map((match) => match[1]) };
}

/** `dpkg-deb -c`'s entries: path (leading `./` kept), mode string, owner, symlink target. */
function contents(listing: string): Map<string, { mode: string; owner: string; target?: string }> {
  const entries = new Map<string, { mode: string; owner: string; target?: string }>();
  for (const line of listing.trim().split('\n')) {
    const match = /^(\S+) (\S+)\s+\d+ \S+ \S+ (.+?)(?: -> (.+))?$/.exec(line);
    if (match) entries.set(match[3], { mode: match[1], owner: match[2], target: match[4] });
  }
  return entries;
}

/** The package's state in the root's dpkg database: `<Status> <Version>`, or '' when dpkg knows it not. */
async function packageState(root: ThrowawayRoot): Promise<string> {
  return root.exec(['dpkg-query', `--admindir=${root.root}/var/lib/dpkg`, '-W', '-f=${Status} ${Version}', 'edge-events']).then(({ stdout }) => stdout, () => '');
}

/** The edge-events entry of the root's /etc/passwd: uid, gid, home, shell. */
function serviceUser(root: ThrowawayRoot): { uid: number; gid: number; home: string; shell: string } | undefined {
  const line = fs.readFileSync(root.file('/etc/passwd'), 'utf8').split('\n').find((entry) => entry.startsWith('edge-events:'));
  if (!line) return undefined;
  const [, , uid, gid, , home, shell] = line.split(':');
  return { uid: Number(uid), gid: Number(gid), home, shell };
}

/** Starts the installed store in the root as the service user with the unit's and the env file's settings only (PORT overridden). */
async function startInstalled(root: ThrowawayRoot, user: { uid: number; gid: number }) {
  const settings = parseEnv(fs.readFileSync(root.file(ENV_FILE), 'utf8'));
  // The unit's Environment= lines, then its EnvironmentFile=; HOST and PORT for the test's client.
  const env = { PATH: SYSTEMD_PATH, NODE_ENV: 'production', DATA_DIR, ...settings, HOST: '127.0.0.1', PORT: '0' } as Record<string, string>;
  return spawnStore({}, undefined, { prefix: root.chrootAs(user.uid, user.gid, env), command: ['/usr/bin/edge-events'] });
}

/** Stops a store with SIGTERM; resolves with its exit code. */
async function stop(child: import('node:child_process').ChildProcess): Promise<number | null> {
  const exited = once(child, 'exit') as Promise<[number | null]>;
  child.kill('SIGTERM');
  return (await exited)[0];
}

t.test('the .deb installs, serves as its user, upgrades keeping data and the edited env file, and purges', async (t) => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'ees-deb-'));
  t.teardown(() => fs.rmSync(work, { recursive: true, force: true }));
  const manifest = JSON.parse(fs.readFileSync(path.join(packageRoot, 'package.json'), 'utf8')) as { version: string; author: string; engines: { node: string } };
  const architecture = (await run('dpkg', ['--print-architecture'])).stdout.trim();
  // Depends: nodejs (>= 20) is checked against this machine's dpkg database: its own Node 20 is
  // the nodejs package (NodeSource's; Debian 12's own is 18, too old), no --force-depends.
  const hostNode = (await run('dpkg-query', ['-W', '-f=${Version}', 'nodejs'])).stdout;
  await run('dpkg', ['--compare-versions', hostNode, 'ge', '20']).catch(() => t.fail(`this machine's nodejs package is ${hostNode}, older than the package's Depends`));
  const hostPasswd = fs.readFileSync('/etc/passwd', 'utf8');

  const { deb: first, steps } = await buildDeb(path.join(work, 'debs'));
  t.same(steps.map((step) => step.split(' ')[0]), ['packing', 'installing', 'dpkg-deb'], `each step named as it begins, a build taking minutes: ${steps.join('; ')}`);
  t.equal(path.basename(first), `edge-events_${manifest.version}_${architecture}.deb`, 'named edge-events_<version>_<arch>.deb');

  // The control data.
  const field = async (name: string) => (await run('dpkg-deb', ['-f', first, name])).stdout.trim();
  t.equal(await field('Package'), 'edge-events');
  t.equal(await field('Version'), manifest.version, 'package.json\'s version');
  t.equal(await field('Maintainer'), manifest.author, 'package.json\'s author');
  t.equal(await field('Architecture'), architecture, 'dpkg --print-architecture\'s');
  t.equal(await field('Depends'), 'nodejs (>= 20), adduser', 'Depends names the Node versions it runs on');
  const installedSize = Number(await field('Installed-Size'));
  t.ok(installedSize > 10_000, `Installed-Size ${installedSize} KiB`);
  t.equal((await run('dpkg-deb', ['-I', first, 'conffiles'])).stdout, `${ENV_FILE}\n`, 'the env file is the one conffile');
  const info = (await run('dpkg-deb', ['-I', first])).stdout;
  for (const script of ['postinst', 'prerm', 'postrm']) t.match(info, new RegExp(`\\d+ lines\\s+\\*\\s+${script}\\s+#!/bin/sh`), `${script}, executable`);

  // The layout.
  const entries = contents((await run('dpkg-deb', ['-c', first], { maxBuffer: 64 << 20 })).stdout);
  t.same(entries.get('./usr/bin/edge-events')?.target, '../lib/edge-events/dist/src/cli.js', '/usr/bin/edge-events links the package\'s cli.js');
  for (const file of [`.${PROGRAM}/dist/src/cli.js`, `.${PROGRAM}/schemas/create-event.json`, `.${PROGRAM}/page/index.html`, `.${UNIT}`, `.${UNIT}.d/service-user.conf`]) {
    t.ok(entries.has(file), `holds ${file}`);
  }
  t.match(entries.get(`.${ENV_FILE}`), { mode: '-rw-r-----', owner: 'root/root' }, 'the env file, root\'s only');
  const names = [...entries.keys()];
  t.same(names.filter((name) => /\/node_modules\/(typescript|tap|fast-check|playwright-core|@types\/busboy)\//.test(name)), [], 'no dev dependency');
  t.same(names.filter((name) => name.startsWith(`.${PROGRAM}/src/`) || name.startsWith(`.${PROGRAM}/test/`)), [], 'no TypeScript source, no test');
  // The build machine's uWebSockets.js binaries (docs/OPERATIONS.md, "Footprint"): the one the
  // loader picks for each Node of package.json's engines and the building Node, on this libc.
  const host = currentHost();
  const expectedUws = uwsBinariesToKeep(host, nodeAbisToKeep(manifest.engines.node, host.abi), installedBuilds().versions)
    .map((binary) => `.${PROGRAM}/node_modules/${binary.build.packageName}/${binary.file}`);
  const uwsShipped = names.filter((name) => [UWS_BUILDS['btc-vision'], UWS_BUILDS.trufflesuite].some((build) => name.includes(`/node_modules/${build.packageName}/`)) && name.endsWith('.node'));
  t.ok(expectedUws.length > 0, 'a uWebSockets.js binary serves here');
  t.same(uwsShipped.sort(), expectedUws.sort(), `uWebSockets.js: only ${expectedUws.map((name) => path.basename(name)).join(', ')}`);
  t.same(names.filter((name) => /\/prebuilds\/[^/]+\/$/.test(name) && !name.endsWith(`/prebuilds/${process.platform}-${process.arch}/`)), [], 'node-gyp-build prebuilds of this platform only');
  const dependencyFiles = names.filter((name) => name.startsWith(`.${PROGRAM}/node_modules/`));
  t.same(dependencyFiles.filter((name) => name.endsWith('.map')), [], 'no .map of a dependency (source maps: there is no other)');
  t.same(dependencyFiles.filter((name) => devFileKind(path.basename(name)) === 'TypeScript source'), [], 'no TypeScript source of a dependency');
  t.ok(dependencyFiles.some((name) => name.endsWith('.d.ts')), 'the dependencies\' declarations stay');
  t.notOk(names.some((name) => name.startsWith(`.${DATA_DIR}`)), 'no data directory in the archive: the postinst makes it');

  const root = await openThrowawayRoot(path.join(work, 'throwaway'));
  t.teardown(() => root.close());
  const dpkg = (...args: string[]) => root.exec(['dpkg', `--root=${root.root}`, ...args]);

  // Install.
  const installed = await dpkg('-i', first);
  t.equal(await packageState(root), `install ok installed ${manifest.version}`, 'installed, Depends met by this machine\'s nodejs');
  // The root has no running systemd: the postinst says that it started nothing, and how to start it.
  t.match(installed.stdout, 'edge-events: systemd is not running here, so the store was not started. Start it by hand, as root, with the env file\'s settings: '
    + 'sh -c \'set -a; . /etc/edge-events/edge-events.env; exec runuser -u edge-events -- edge-events serve\'', 'dpkg -i says the store was not started, and how to start it');
  const user = serviceUser(root);
  t.ok(user && user.uid > 0 && user.uid < 1000, `the postinst made a system user edge-events (uid ${user?.uid})`);
  t.match(user, { home: DATA_DIR, shell: '/usr/sbin/nologin' });
  const dataDir = fs.statSync(root.file(DATA_DIR));
  t.same({ uid: dataDir.uid, gid: dataDir.gid, mode: dataDir.mode & 0o7777 }, { uid: user!.uid, gid: user!.gid, mode: 0o750 }, `${DATA_DIR} is the user's, 0750`);
  t.equal(fs.readlinkSync(root.file(WANTS)), UNIT, 'the unit is enabled (multi-user.target.wants)');
  const verified = await root.exec(['systemd-analyze', 'verify', `--root=${root.root}`, 'edge-events.service']).then(({ stderr }) => ({ code: 0, stderr }), (err: { code: number; stderr: string }) => err);
  t.same({ code: verified.code, stderr: verified.stderr }, { code: 0, stderr: '' }, 'systemd-analyze verify passes on the installed unit and drop-in');
  const program = root.file(PROGRAM);
  t.ok(nativeAddons(program).length > 0, 'native addons are installed');
  t.same(foreignBinaries(program), [], `every native addon is built for ${process.arch}`);
  t.same(otherLibcBinaries(program, host), [], `no addon tagged for the other libc than this ${host.glibc ? `glibc ${host.glibc}` : 'libc'}`);
  t.match(fs.readFileSync(root.file(ENV_FILE), 'utf8'), /^DATA_DIR=\/var\/lib\/edge-events$/m, 'the env file sets DATA_DIR');
  const du = Number((await root.exec(['du', '-sk', path.join(root.root, PROGRAM)])).stdout.split('\t')[0]);
  t.comment(`${path.basename(first)}: ${fs.statSync(first).size} bytes; Installed-Size ${installedSize} KiB; du -sk ${PROGRAM}: ${du} KiB`);
  t.ok(du > 10_000 && du <= MAX_INSTALLED_KIB, `du -sk ${PROGRAM}: ${du} KiB, at most 120 MB (${MAX_INSTALLED_KIB} KiB)`);

  // Serve as the package's user.
  const store = await startInstalled(root, user!);
  t.teardown(() => store.child.kill('SIGKILL'));
  t.match(fs.readFileSync(`/proc/${store.child.pid}/status`, 'utf8'), new RegExp(`^Uid:\\t${user!.uid}\\t`, 'm'), 'the store runs as edge-events');
  t.match(store.output(), `"dataDir":"${DATA_DIR}"`, 'on the package\'s DATA_DIR');
  t.match(store.output(), `"node":"v${hostNode.split('-')[0]}"`, 'on the nodejs package\'s node');
  const created = await postJson(`${store.url}/v2/events`, imageEvent({ deviceId: 'cam-deb' }));
  t.equal(created.status, 201, 'a create');
  const thumbnail = await fetch(`${store.url}/images/${created.body.image_ids[0]}/thumbnail`);
  const webp = Buffer.from(await thumbnail.arrayBuffer());
  t.same({ status: thumbnail.status, type: thumbnail.headers.get('content-type') }, { status: 200, type: 'image/webp' }, 'a thumbnail: sharp loads in the installed tree');
  t.same([webp.subarray(0, 4).toString('latin1'), webp.subarray(8, 12).toString('latin1')], ['RIFF', 'WEBP'], `a WebP (${webp.length} bytes)`);
  t.equal(await stop(store.child), 0, 'a graceful stop');
  t.equal(fs.statSync(root.file(`${DATA_DIR}/db`)).uid, user!.uid, 'the data is the user\'s');

  // Upgrade: the operator's edit of the env file, then a rebuilt package with a higher version.
  const edited = `${fs.readFileSync(root.file(ENV_FILE), 'utf8')}\n# set by the operator\nAPI_KEY=deb-upgrade-key\n`;
  fs.writeFileSync(root.file(ENV_FILE), edited);
  const { deb: newer } = await buildDeb(path.join(work, 'debs'), `${manifest.version}+1`);
  t.equal(path.basename(newer), `edge-events_${manifest.version}+1_${architecture}.deb`);
  await dpkg('-i', newer);
  t.equal(await packageState(root), `install ok installed ${manifest.version}+1`, 'upgraded');
  t.equal(fs.readFileSync(root.file(ENV_FILE), 'utf8'), edited, 'the edited env file is kept');
  t.same(serviceUser(root), user, 'the same user');
  const upgraded = await startInstalled(root, user!);
  t.teardown(() => upgraded.child.kill('SIGKILL'));
  t.equal((await getJson(`${upgraded.url}/v2/events/${created.body.id}`)).status, 401, 'the edited API_KEY is in force');
  const kept = await getJson(`${upgraded.url}/v2/events/${created.body.id}`, { 'X-API-Key': 'deb-upgrade-key' });
  t.equal(kept.body.id, created.body.id, 'the event stored before the upgrade is read back');
  t.equal(await stop(upgraded.child), 0, 'a graceful stop');

  // Remove: the program and the unit go; the data, the env file and the user stay.
  await dpkg('--remove', 'edge-events');
  t.equal(await packageState(root), `deinstall ok config-files ${manifest.version}+1`, 'removed, its conffile kept');
  for (const gone of [PROGRAM, '/usr/bin/edge-events', UNIT]) t.notOk(fs.existsSync(root.file(gone)), `${gone} is gone`);
  t.ok(fs.existsSync(root.file(`${DATA_DIR}/db`)), 'the data stays');
  t.equal(fs.readFileSync(root.file(ENV_FILE), 'utf8'), edited, 'the env file stays');

  // Purge: the data, /etc/edge-events and the compile cache go; the system user stays. The cache
  // directory is made here as systemd's CacheDirectory= makes it at the unit's first start.
  fs.mkdirSync(root.file(`${CACHE_DIR}/v24.21.0-x64-0`), { recursive: true });
  await dpkg('--purge', 'edge-events');
  t.equal(await packageState(root), '', 'purged: dpkg knows it no more');
  for (const gone of [DATA_DIR, '/etc/edge-events', CACHE_DIR, WANTS, '/etc/systemd/system/edge-events.service']) {
    t.notOk(fs.existsSync(root.file(gone)) || fs.lstatSync(root.file(gone), { throwIfNoEntry: false }), `${gone} is gone`);
  }
  t.same(serviceUser(root), user, 'the system user stays');

  // This machine is as it was.
  t.equal(fs.readFileSync('/etc/passwd', 'utf8'), hostPasswd, 'this machine\'s users are unchanged');
  await t.rejects(run('dpkg-query', ['-W', 'edge-events']), 'this machine\'s dpkg database never had the package');
  t.notOk(fs.existsSync(PROGRAM), `nothing in this machine's ${PROGRAM}`);
});
