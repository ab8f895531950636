/**
 * A platform root (scripts/platform-root.sh: a Debian root made by debootstrap, cached, with the
 * official Node build of its architecture in /opt/node) and the release tarball installed in it
 * as a box installs it, for the tests of test/platforms/ (docs/OPERATIONS.md, "Platforms").
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { NODE_ARCH } from '../../scripts/lib/deb-control.js';
import { npmFreeEnv, packRelease } from '../../scripts/lib/release-tarball.js';
import { spawnStore, type SpawnedStore } from '../../scripts/lib/spawned-store.js';
import { packageRoot } from '../../src/paths.js';

const run = promisify(execFile);
export const PLATFORM_EXEC = path.join(packageRoot, 'scripts', 'platform-exec.sh');

/** Where the tarball goes in a root, as the root sees it. */
const PREFIX = '/opt/edge-events';

export interface PlatformRoot {
  /** The root's path on this machine. */
  root: string;
  /** Runs a command chrooted into the root (scripts/platform-exec.sh); rejects with its stderr when it fails. */
  exec: (...command: string[]) => Promise<{ stdout: string; stderr: string }>;
  /** Runs `edge-events serve` of the installed tarball in the root on DATA_DIR `dataDir` (a path inside the root, kept as it is), and waits for it to listen. */
  serve: (dataDir: string) => Promise<SpawnedStore>;
}

/**
 * The root of Debian `suite` for `arch` with Node `nodeMajor` (made on the first call, then from
 * the cache), with this checkout's release tarball installed in it: packed here, installed here
 * for the root's architecture with npm's `--cpu` (install scripts off, so that nothing runs or is
 * built for this machine), then its postinstall run in the root, as the box's npm would.
 * @param work an empty folder of the test's (the tarball is packed there)
 * @param packages Debian packages the root has besides (comma-separated; part of its cache key)
 * @returns the root and what its postinstall printed
 * @throws the failed command (its stderr in the error)
 */
export async function rootWithTarball(suite: string, arch: 'amd64' | 'arm64', nodeMajor: number, work: string, packages = ''): Promise<PlatformRoot & { installed: string; postinstall: string }> {
  const root = (await run('sh', [path.join(packageRoot, 'scripts', 'platform-root.sh'), suite, arch, String(nodeMajor), packages], { maxBuffer: 64 << 20 })).stdout.trim();
  const exec = (...command: string[]) => run('sh', [PLATFORM_EXEC, root, ...command], { maxBuffer: 64 << 20 });
  const env = npmFreeEnv();
  const { tarball } = await packRelease(work, env);
  const prefix = path.join(root, PREFIX);
  fs.rmSync(prefix, { recursive: true, force: true });
  await run('npm', ['install', '--global', '--prefix', prefix, `--cpu=${NODE_ARCH[arch]}`, '--os=linux', '--libc=glibc', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund', tarball], { cwd: work, env, maxBuffer: 64 << 20 });
  const installed = `${PREFIX}/lib/node_modules/edge-event-store`;
  const postinstall = (await exec('node', `${installed}/scripts/prune-host-binaries.mjs`)).stdout.trim();
  const serve = (dataDir: string) => spawnStore({ PORT: '0', DATA_DIR: dataDir }, undefined, { command: ['sh', PLATFORM_EXEC, root, `${PREFIX}/bin/edge-events`] });
  return { root, exec, serve, installed, postinstall };
}
