/**
 * `npm run package:deb`: builds `edge-events_<version>_<arch>.deb` for apt-managed fleets
 * (docs/OPERATIONS.md, "The Debian package") with dpkg-deb:
 * - /usr/lib/edge-events: the release tarball installed with its production dependencies only
 *   (`npm install --global` of the tarball into a staging prefix), pruned to this machine's native
 *   binaries, without its dependencies' source maps and TypeScript sources, by the postinstall's
 *   rule (pruneHostBinaries, run again here in case npm skipped install scripts; docs/OPERATIONS.md,
 *   "Footprint"), refused when any native addon left is for another machine;
 * - /usr/bin/edge-events, a symlink to the package's dist/src/cli.js (`#!/usr/bin/env node`);
 * - /lib/systemd/system/edge-events.service, the shipped unit, with the drop-in
 *   packaging/deb/service-user.conf (the system user edge-events);
 * - /etc/edge-events/edge-events.env, a conffile: the env example with DATA_DIR set;
 * - DEBIAN/: control, conffiles, md5sums and packaging/deb's postinst, prerm and postrm.
 *
 * Options: `--out DIR` (default: the working directory); `--arch amd64|arm64` (default: `dpkg
 * --print-architecture`'s): another architecture's package is built here from the same tarball,
 * its dependencies installed for that architecture (`npm install --cpu`, install scripts off, so
 * that nothing is built for this machine) and pruned for it with this machine's glibc, the
 * distribution release the package is built for. Environment: EDGE_EVENTS_DEB_VERSION (default:
 * package.json's version), EDGE_EVENTS_DEB_MAINTAINER (default: package.json's author). Prints each step, then the .deb's path and
 * sizes; exits 1 with the cause on a failure.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { packageRoot } from '../src/paths.js';
import { checkDebianVersion, controlText, installedSizeKiB, maintainerField, md5sumsText, NODE_ARCH, type ControlFields } from './lib/deb-control.js';
import { currentHost } from '../src/http/uws/uws-loader.js';
import { pruneHostBinaries, type PruneReport } from '../src/install/host-binaries.js';
import { foreignBinaries } from './lib/native-binaries.js';
import { npmFreeEnv, packRelease } from './lib/release-tarball.js';

const run = promisify(execFile);

const PROGRAM_DIR = 'usr/lib/edge-events';
const CONFFILE = 'etc/edge-events/edge-events.env';

/** Makes every directory 0755 and every file 0644, or 0755 when executable by its owner (Debian policy 10.9). */
function normalizeModes(dir: string): void {
  fs.chmodSync(dir, 0o755);
  for (const entry of fs.readdirSync(dir, { recursive: true, withFileTypes: true }) as fs.Dirent[]) {
    const file = path.join(entry.parentPath, entry.name);
    if (entry.isDirectory()) fs.chmodSync(file, 0o755);
    else if (entry.isFile()) fs.chmodSync(file, fs.statSync(file).mode & 0o100 ? 0o755 : 0o644);
  }
}

/** The env example with DATA_DIR set to the package's data directory (the unit's StateDirectory). */
function envFile(example: string): string {
  const line = '#DATA_DIR=/var/lib/edge-events';
  if (!example.includes(`\n${line}\n`)) throw new Error(`systemd/edge-events.env.example has no line ${line}`);
  return example.replace(`\n${line}\n`, '\nDATA_DIR=/var/lib/edge-events\n');
}

/**
 * Installs the release tarball with production dependencies into `root`/usr/lib/edge-events, for
 * the Node architecture `arch` (this machine's, or another's: see the options above).
 */
async function installProgram(work: string, tarball: string, root: string, env: Record<string, string>, arch: string): Promise<{ program: string; pruned: PruneReport }> {
  const prefix = path.join(work, 'prefix');
  const foreignArch = arch === process.arch ? [] : [`--cpu=${arch}`, '--os=linux', '--libc=glibc', '--ignore-scripts'];
  await run('npm', ['install', '--global', '--prefix', prefix, '--omit=dev', ...foreignArch, '--prefer-offline', '--no-audit', '--no-fund', tarball], { cwd: work, env, maxBuffer: 64 << 20 });
  const program = path.join(root, PROGRAM_DIR);
  fs.mkdirSync(path.dirname(program), { recursive: true });
  fs.renameSync(path.join(prefix, 'lib', 'node_modules', 'edge-event-store'), program);
  const pruned = pruneHostBinaries(program, { ...currentHost(), arch });
  if (pruned.failed.length > 0) throw new Error(`could not remove: ${pruned.failed.join('; ')}`);
  const foreign = foreignBinaries(program, arch);
  if (foreign.length > 0) {
    throw new Error(`native addons for another machine than ${arch} would ship: ${foreign.map((binary) => `${path.relative(program, binary.file)} (${binary.builtFor})`).join(', ')}`);
  }
  const cli = path.join(program, 'dist', 'src', 'cli.js');
  if (!fs.readFileSync(cli, 'utf8').startsWith('#!/usr/bin/env node\n')) throw new Error(`${cli} does not start with #!/usr/bin/env node`);
  return { program, pruned };
}

/** Writes the unit, its drop-in, the conffile, the command's symlink and DEBIAN/ around the installed program. */
function writePackageFiles(root: string, program: string, { version, architecture, maintainer }: Omit<ControlFields, 'installedSizeKiB'>): void {
  const unitDir = path.join(root, 'lib', 'systemd', 'system');
  fs.mkdirSync(path.join(unitDir, 'edge-events.service.d'), { recursive: true });
  fs.copyFileSync(path.join(program, 'systemd', 'edge-events.service'), path.join(unitDir, 'edge-events.service'));
  fs.copyFileSync(path.join(packageRoot, 'packaging', 'deb', 'service-user.conf'), path.join(unitDir, 'edge-events.service.d', 'service-user.conf'));
  fs.mkdirSync(path.join(root, 'usr', 'bin'), { recursive: true });
  fs.symlinkSync(`../lib/edge-events/dist/src/cli.js`, path.join(root, 'usr', 'bin', 'edge-events'));
  fs.mkdirSync(path.join(root, path.dirname(CONFFILE)), { recursive: true });
  fs.writeFileSync(path.join(root, CONFFILE), envFile(fs.readFileSync(path.join(program, 'systemd', 'edge-events.env.example'), 'utf8')));
  normalizeModes(root);
  // The env file may hold API_KEY and the cloud keys: root only; systemd reads it as root.
  fs.chmodSync(path.join(root, CONFFILE), 0o640);

  const control = path.join(root, 'DEBIAN');
  fs.mkdirSync(control, { mode: 0o755 });
  fs.writeFileSync(path.join(control, 'md5sums'), md5sumsText(root), { mode: 0o644 });
  fs.writeFileSync(path.join(control, 'control'), controlText({ version, architecture, maintainer, installedSizeKiB: installedSizeKiB(root) }), { mode: 0o644 });
  fs.writeFileSync(path.join(control, 'conffiles'), `/${CONFFILE}\n`, { mode: 0o644 });
  for (const script of ['postinst', 'prerm', 'postrm']) {
    fs.copyFileSync(path.join(packageRoot, 'packaging', 'deb', script), path.join(control, script));
    fs.chmodSync(path.join(control, script), 0o755);
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { out: { type: 'string' }, arch: { type: 'string' } } });
  const out = path.resolve(values.out ?? '.');
  const manifest = JSON.parse(fs.readFileSync(path.join(packageRoot, 'package.json'), 'utf8')) as { version: string; author: unknown };
  const version = checkDebianVersion(process.env.EDGE_EVENTS_DEB_VERSION ?? manifest.version);
  const maintainer = maintainerField(process.env.EDGE_EVENTS_DEB_MAINTAINER ?? manifest.author);
  const architecture = values.arch ?? (await run('dpkg', ['--print-architecture'])).stdout.trim();
  const nodeArch = NODE_ARCH[architecture];
  if (!nodeArch) throw new Error(`--arch ${architecture}: a package is built for ${Object.keys(NODE_ARCH).join(' or ')}`);
  const env = npmFreeEnv();
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'edge-events-deb-'));
  const step = (what: string) => console.log(`package:deb: ${what}`);
  try {
    step('packing the release tarball (a clean build, about a minute)');
    const { tarball } = await packRelease(work, env);
    const root = path.join(work, 'root');
    step(`installing its production dependencies for ${architecture}`);
    const { program, pruned } = await installProgram(work, tarball, root, env, nodeArch);
    writePackageFiles(root, program, { version, architecture, maintainer });
    const deb = path.join(out, `edge-events_${version}_${architecture}.deb`);
    fs.mkdirSync(out, { recursive: true });
    step('dpkg-deb --build');
    await run('dpkg-deb', ['--build', '--root-owner-group', root, deb], { maxBuffer: 64 << 20 });
    const kib = installedSizeKiB(root);
    console.log(`${deb}: ${(fs.statSync(deb).size / 1e6).toFixed(1)} MB, installed ${(kib / 1024).toFixed(1)} MiB (Installed-Size ${kib} KiB); uWebSockets.js binaries: ${pruned.keptUws.join(', ') || 'none'}`);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  const error = err as Error & { stderr?: string };
  console.error(`package:deb failed: ${error.message}${error.stderr ? `\n${error.stderr}` : ''}`);
  console.error('hint: it needs dpkg-deb (Debian\'s dpkg), npm with the registry or its cache, and a checkout with node_modules installed');
  process.exitCode = 1;
});
