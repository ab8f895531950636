/**
 * Loads the best native uWebSockets.js build that loads here: gathers the host (platform, arch,
 * Node ABI, glibc through detect-libc) and the installed builds, asks chooseUwsBuilds for the
 * order, and loads the candidates in turn. A module that is not native (a JavaScript fallback)
 * never counts as loaded.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import detectLibc from 'detect-libc';
import { installedPackageDir } from '../../install-tree.js';
import { packageRoot } from '../../paths.js';
import { MAX_HEAD_BYTES } from '../engine.js';
import { assertNativeServer } from '../native-check.js';
import type { UwsModule } from './uws-api.js';
import { chooseUwsBuilds, fillIn, UWS_BUILDS, type InstalledBuilds, type UwsBuild, type UwsChoice, type UwsHost } from './uws-builds.js';

const require = createRequire(import.meta.url);

/** A build that loaded. */
export interface LoadedUws {
  uws: UwsModule;
  build: UwsBuild;
  /** Its installed version. */
  version: string;
  /** `package@version`, as logged and reported by /stats. */
  label: string;
}

/** What the loader found and tried. */
export interface UwsLoadReport {
  host: UwsHost;
  choice: UwsChoice;
  /** Candidates that were tried and did not load, with the loader's error message. */
  failures: { build: UwsBuild; error: string }[];
  /** The build in use; undefined when none loaded. */
  loaded: LoadedUws | undefined;
}

/** The machine and Node this process runs on. */
export function currentHost(): UwsHost {
  const glibc = process.platform === 'linux' && detectLibc.familySync() === detectLibc.GLIBC ? detectLibc.versionSync() : null;
  return { platform: process.platform, arch: process.arch, abi: Number(process.versions.modules), glibc };
}

/** Version of each known build found under node_modules, and its package directory. */
export interface FoundBuilds {
  versions: InstalledBuilds;
  dirs: Partial<Record<UwsBuild['id'], string>>;
}

/**
 * Version of each known build found under the package's node_modules, and where: only in its own
 * install's tree (`installedPackageDir`). Node's own lookup would climb to every ancestor's
 * node_modules and the home folder's `.node_modules`, and load native code another install, or
 * anyone who can write there, put in its way.
 * @param root the installed package (default: this one)
 */
export function installedBuilds(root = packageRoot): FoundBuilds {
  const versions: InstalledBuilds = {};
  const dirs: Partial<Record<UwsBuild['id'], string>> = {};
  for (const build of Object.values(UWS_BUILDS)) {
    const dir = installedPackageDir(root, build.packageName);
    if (!dir) continue;
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
    // node_modules/uWebSockets.js may hold something else under that name (an npm alias).
    if (manifest.name !== build.packageName || typeof manifest.version !== 'string') continue;
    versions[build.id] = manifest.version;
    dirs[build.id] = dir;
  }
  return { versions, dirs };
}

/** Why a candidate whose binary the install removed does not load (docs/OPERATIONS.md, "Footprint"). */
export const BINARY_NOT_INSTALLED = 'is not installed: the install keeps the binaries of the Node versions in package.json\'s engines '
  + 'and of the installing Node, for this libc only; reinstall the package under this Node (docs/OPERATIONS.md, "Footprint")';

/**
 * Finds and loads the best native build for this process. Never throws: a build that fails to
 * load (a missing symbol of an older glibc, say, or its binary removed at install for another
 * Node) is reported in `failures` and the next is tried.
 * @param host the machine (default: this process's); a test passes another
 * @param found the builds found (default: those under node_modules as Node resolves them from here)
 */
export function loadUws(host: UwsHost = currentHost(), found: FoundBuilds = installedBuilds()): UwsLoadReport {
  const { versions, dirs } = found;
  const choice = chooseUwsBuilds(host, versions);
  const failures: UwsLoadReport['failures'] = [];
  // uWebSockets.js parses a head that arrives in one read whole, but keeps at most this many bytes
  // of one split across reads, read once when the binary loads (HttpParser.h, MAX_FALLBACK_SIZE,
  // 4 KiB unless set; builds before 20.50 ignore it). An operator's own value wins.
  process.env.UWS_HTTP_MAX_HEADERS_SIZE ??= String(MAX_HEAD_BYTES);
  for (const { build, entry } of choice.candidates) {
    const binary = build.binary === undefined ? undefined : fillIn(build.binary, host);
    if (binary !== undefined && !fs.existsSync(path.join(dirs[build.id]!, binary))) {
      failures.push({ build, error: `its binary ${binary} ${BINARY_NOT_INSTALLED}` });
      continue;
    }
    try {
      const uws = require(path.join(dirs[build.id]!, entry)) as UwsModule;
      assertNativeServer(uws);
      const version = versions[build.id]!;
      return { host, choice, failures, loaded: { uws, build, version, label: `${build.packageName}@${version}` } };
    } catch (err) {
      failures.push({ build, error: (err as Error).message.split('\n').filter(Boolean).join(' ') });
    }
  }
  return { host, choice, failures, loaded: undefined };
}
