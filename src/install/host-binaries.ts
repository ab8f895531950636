/**
 * The one rule for which native binaries an installed tree keeps, and which of its dependencies'
 * files it drops (docs/OPERATIONS.md, "Footprint"), run by the package's postinstall
 * (scripts/prune-host-binaries.mjs) on the machine it installs on, and by the .deb build
 * (scripts/package-deb.ts) on the machine it builds on:
 *
 * - uWebSockets.js: for each Node ABI of package.json's `engines` and of the installing Node, the
 *   one binary the loader would load for it on this platform, arch and libc (`uwsBinariesToKeep`);
 *   every other `*.node` of the two pinned packages goes (other platforms, other ABIs, the build
 *   the loader would not pick, trufflesuite's `dist/` copies).
 * - prebuilds in `prebuilds/<platform>-<arch>` folders, node-gyp-build's (bufferutil,
 *   utf-8-validate) and require-addon's (fs-native-extensions, the data folder's lock): this
 *   machine's only.
 * - On Linux, the addons tagged for the other libc (`node.napi.musl.node` on glibc,
 *   `node.abi115.glibc.node` on musl; lmdb, msgpackr-extract, utf-8-validate), which
 *   node-gyp-build and node-gyp-build-optional-packages never load there (`otherLibcBinaries`).
 * - The dependencies' source maps and TypeScript sources (src/install/dependency-dev-files.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { installedPackageDir } from '../install-tree.js';
import { dependencyDevFiles, dependencyDevFolders, type DevFileKind } from './dependency-dev-files.js';
import { NODE_OF_ABI, uwsBinariesToKeep, UWS_BUILDS, type InstalledBuilds, type KeptUwsBinary, type UwsHost } from '../http/uws/uws-builds.js';

/** The ABI of each Node major the builds know (22 -> 127). */
const ABI_OF_NODE: Record<number, number> = Object.fromEntries(Object.entries(NODE_OF_ABI).map(([abi, major]) => [major, Number(abi)]));

/**
 * The Node ABIs an install keeps uWebSockets.js binaries for: those of the majors an `engines`
 * range names (`^20.0.0 || ^22.0.0` -> 115, 127), and `currentAbi`, the installing Node's.
 * A major whose ABI is unknown here is left out.
 */
export function nodeAbisToKeep(engines: string, currentAbi: number): number[] {
  const majors = engines.split('||').map((range) => Number(/\d+/.exec(range)?.[0]));
  const abis = majors.map((major) => ABI_OF_NODE[major]).filter((abi): abi is number => abi !== undefined);
  return [...new Set([...abis, currentAbi])].sort((a, b) => a - b);
}

/** What a removed file or folder was. */
export type RemovedKind = 'native binary' | DevFileKind;

/** What a prune removed and kept, paths relative to the installed package. */
export interface PruneReport {
  /** The uWebSockets.js binaries kept, one per Node ABI served here. */
  keptUws: string[];
  /** Files and folders removed. */
  removed: string[];
  /** Bytes of the files removed. */
  removedBytes: number;
  /** Files and folders removed (a prebuild folder counts one) and their bytes, by kind. */
  removedByKind: Record<RemovedKind, { count: number; bytes: number }>;
  /** Files that could not be removed, with the error (the install goes on). */
  failed: string[];
}

/** Bytes of every file under `target` (a file or a folder). */
function sizeOf(target: string): number {
  const stat = fs.statSync(target);
  if (!stat.isDirectory()) return stat.size;
  return (fs.readdirSync(target, { recursive: true, withFileTypes: true }) as fs.Dirent[])
    .filter((entry) => entry.isFile())
    .reduce((sum, entry) => sum + fs.statSync(path.join(entry.parentPath, entry.name)).size, 0);
}

/** Removes `target`, recording it in `report` (or its failure: never thrown). */
function remove(root: string, target: string, kind: RemovedKind, report: PruneReport): void {
  try {
    const bytes = sizeOf(target);
    fs.rmSync(target, { recursive: true });
    report.removed.push(path.relative(root, target));
    report.removedBytes += bytes;
    report.removedByKind[kind].count += 1;
    report.removedByKind[kind].bytes += bytes;
  } catch (err) {
    report.failed.push(`${path.relative(root, target)}: ${(err as Error).message}`);
  }
}

/**
 * node-gyp-build's folder of one platform's prebuilt addons: `prebuilds/<platform>-<arch>[+<arch>...]`,
 * with a variant after it in some packages (fs-native-extensions' `ios-arm64-simulator`).
 */
const PREBUILDS_FOLDER = /^([a-z0-9]+)-([a-z0-9+]+)(?:-[a-z0-9-]+)?$/;

/**
 * The prebuild folders under `dir` for other platforms and architectures (bufferutil and
 * utf-8-validate ship darwin's and win32's next to linux-x64's; node-gyp-build's README,
 * "Supported prebuild names"; fs-native-extensions ships 13, found by require-addon under the
 * same names). Absolute paths.
 */
export function foreignPrebuilds(dir: string, platform: string, arch: string): string[] {
  return (fs.readdirSync(dir, { recursive: true, withFileTypes: true }) as fs.Dirent[])
    .filter((entry) => entry.isDirectory() && path.basename(entry.parentPath) === 'prebuilds')
    .filter((entry) => {
      const match = PREBUILDS_FOLDER.exec(entry.name);
      return match !== null && !(match[1] === platform && match[2].split('+').includes(arch));
    })
    .map((entry) => path.join(entry.parentPath, entry.name));
}

/**
 * The addons under `dir` built for the other libc than `host`'s, on Linux (none elsewhere): those
 * whose name carries the prebuildify tag `musl` on glibc, `glibc` on musl (`node.napi.musl.node`).
 * node-gyp-build and node-gyp-build-optional-packages skip a file whose libc tag is not the
 * running libc (their `matchTags`) and load an untagged one anywhere, so an untagged addon stays.
 * napi-rs and sharp put each libc's addon in its own package (`-gnu`, `-musl`, `linuxmusl`),
 * which npm installs only on its libc (the package.json `libc` field): nothing of theirs is
 * tagged. Absolute paths.
 */
export function otherLibcBinaries(dir: string, host: Pick<UwsHost, 'platform' | 'glibc'>): string[] {
  if (host.platform !== 'linux') return [];
  const other = host.glibc === null ? 'glibc' : 'musl';
  return nodeFiles(dir).filter((file) => path.basename(file).split('.').slice(0, -1).includes(other));
}

/** Every `*.node` file under `dir` (absolute paths). */
function nodeFiles(dir: string): string[] {
  return (fs.readdirSync(dir, { recursive: true, withFileTypes: true }) as fs.Dirent[])
    .filter((entry) => entry.isFile() && entry.name.endsWith('.node'))
    .map((entry) => path.join(entry.parentPath, entry.name));
}

/**
 * Prunes the installed package at `root` to its host's binaries and drops its dependencies'
 * development folders, source maps and TypeScript sources (dependency-dev-files.ts). Touches only its install's tree: the
 * uWebSockets.js packages are looked for in `installTreeNodeModules(root)` (src/install-tree.ts), never in an
 * ancestor's or the home folder's node_modules, and the rest only under `root`/node_modules.
 * Idempotent; never throws for a file it cannot remove (listed in `failed`).
 * @param root the installed package (the folder of its package.json, dependencies under node_modules)
 * @param host platform, arch and glibc of the machine the tree serves, and the installing Node's ABI
 * @throws Error when `root` has no readable package.json
 */
export function pruneHostBinaries(root: string, host: UwsHost): PruneReport {
  const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { engines?: { node?: string } };
  const abis = nodeAbisToKeep(manifest.engines?.node ?? '', host.abi);
  const report: PruneReport = {
    keptUws: [], removed: [], removedBytes: 0, failed: [],
    removedByKind: { 'native binary': { count: 0, bytes: 0 }, 'source map': { count: 0, bytes: 0 }, 'TypeScript source': { count: 0, bytes: 0 }, 'development folder': { count: 0, bytes: 0 } },
  };

  const pinned = [UWS_BUILDS['btc-vision'], UWS_BUILDS.trufflesuite];
  const dirs = new Map<string, string>();
  const versions: InstalledBuilds = {};
  for (const build of pinned) {
    const dir = installedPackageDir(root, build.packageName);
    if (!dir) continue;
    dirs.set(build.id, dir);
    versions[build.id] = (JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { version: string }).version;
  }
  const kept: KeptUwsBinary[] = uwsBinariesToKeep(host, abis, versions);
  const keep = new Set(kept.map((binary) => path.join(dirs.get(binary.build.id)!, binary.file)));
  report.keptUws = [...keep].map((file) => path.relative(root, file));
  for (const dir of dirs.values()) {
    for (const file of nodeFiles(dir)) if (!keep.has(file)) remove(root, file, 'native binary', report);
  }
  const nodeModules = path.join(root, 'node_modules');
  if (!fs.existsSync(nodeModules)) return report;
  for (const folder of foreignPrebuilds(nodeModules, host.platform, host.arch)) remove(root, folder, 'native binary', report);
  for (const file of otherLibcBinaries(nodeModules, host)) remove(root, file, 'native binary', report);
  for (const folder of dependencyDevFolders(nodeModules)) remove(root, folder, 'development folder', report);
  for (const { file, kind } of dependencyDevFiles(nodeModules)) remove(root, file, kind, report);
  return report;
}
