/**
 * The native uWebSockets.js builds the store knows, what each declares it needs, and the pure
 * decision of which to try on a host, in order (docs/OPERATIONS.md, "HTTP engines"):
 *
 * 1. the official `uWebSockets.js`, whenever the user installed it (it is published on GitHub
 *    only: `npm install uNetworking/uWebSockets.js#v20.x`); its binaries are not known ahead;
 * 2. Node >= 22: `@btc-vision/uwebsockets.js`, a redistribution of a current release (Node 20,
 *    22, 24, 25; its Linux binaries need glibc >= 2.38), then the trufflesuite build;
 * 3. Node <= 20: `@trufflesuite/uws-js-unofficial` (Node 16, 18, 20; glibc >= 2.27), then the
 *    redistribution.
 *
 * Declared needs were read from the pinned packages themselves: the ABIs from their binaries'
 * file names, the glibc floor as the highest `GLIBC_2.x` symbol version `objdump -T` lists.
 * Versions are pinned exactly in package.json; the lockfile's integrity hashes guard the binaries.
 */

/** Which build. */
export type UwsBuildId = 'official' | 'btc-vision' | 'trufflesuite';

export interface UwsBuild {
  id: UwsBuildId;
  /** npm package name (the directory under node_modules). */
  packageName: string;
  /** The exact version package.json pins; undefined for the official package (the user's pick). */
  pinnedVersion: string | undefined;
  /** Node ABIs (`process.versions.modules`) it has binaries for; undefined: not known ahead. */
  abis: number[] | undefined;
  /** `platform-arch` pairs it has binaries for; undefined: not known ahead. */
  targets: string[] | undefined;
  /** Lowest glibc its Linux binaries need, by arch; undefined: not known ahead. */
  minGlibc: Record<string, string> | undefined;
  /**
   * What to load, relative to the package directory: `''` for the package's main module (which
   * throws when no binary loads), or a binary file pattern with `{platform}`, `{arch}`, `{abi}`
   * (the trufflesuite main falls back to a slow JavaScript server instead of throwing).
   */
  entry: string;
  /**
   * The native binary the entry loads, relative to the package directory, with `{platform}`,
   * `{arch}`, `{abi}`; undefined when not known ahead (the official package). The install keeps
   * only the ones the host uses (`uwsBinariesToKeep`; docs/OPERATIONS.md, "Footprint").
   */
  binary: string | undefined;
  /** How a user gets it, for messages. */
  install: string;
}

/** Node major version of each Node ABI the builds cover, for messages. */
export const NODE_OF_ABI: Record<number, number> = { 93: 16, 108: 18, 115: 20, 127: 22, 137: 24, 141: 25, 147: 26 };

/** The builds, by id. */
export const UWS_BUILDS: Record<UwsBuildId, UwsBuild> = {
  official: {
    id: 'official',
    packageName: 'uWebSockets.js',
    pinnedVersion: undefined,
    abis: undefined,
    targets: undefined,
    minGlibc: undefined,
    entry: '',
    binary: undefined,
    install: 'npm install uNetworking/uWebSockets.js#v20.x',
  },
  'btc-vision': {
    id: 'btc-vision',
    packageName: '@btc-vision/uwebsockets.js',
    pinnedVersion: '20.57.0',
    abis: [115, 127, 137, 141],
    targets: ['linux-x64', 'linux-arm64', 'darwin-x64', 'darwin-arm64', 'win32-x64'],
    minGlibc: { x64: '2.38', arm64: '2.38' },
    entry: '',
    binary: 'uws_{platform}_{arch}_{abi}.node',
    install: 'npm install, optional dependencies included',
  },
  trufflesuite: {
    id: 'trufflesuite',
    packageName: '@trufflesuite/uws-js-unofficial',
    pinnedVersion: '20.30.0-unofficial.0',
    abis: [93, 108, 115],
    targets: ['linux-x64', 'linux-arm64', 'linux-arm', 'darwin-x64', 'darwin-arm64', 'win32-x64'],
    minGlibc: { x64: '2.27', arm64: '2.27', arm: '2.28' },
    entry: 'binaries/uws_{platform}_{arch}_{abi}.node',
    binary: 'binaries/uws_{platform}_{arch}_{abi}.node',
    install: 'npm install, optional dependencies included',
  },
};

/** The machine and Node the store runs on. */
export interface UwsHost {
  platform: string;
  arch: string;
  /** Node ABI, `process.versions.modules` as a number (115 for Node 20, 137 for Node 24). */
  abi: number;
  /** glibc version on Linux (e.g. `2.36`); null when Linux has another libc (musl) or not Linux. */
  glibc: string | null;
}

/** Installed version of each build present under node_modules. */
export type InstalledBuilds = Partial<Record<UwsBuildId, string>>;

/** A build to try, and the path (relative to its package directory) to load. */
export interface UwsCandidate {
  build: UwsBuild;
  entry: string;
}

/** A build left out, and why (for the start-up log and the refusal message). */
export interface PassedOver {
  build: UwsBuild;
  reason: string;
}

export interface UwsChoice {
  /** Builds to try, best first; the first that loads natively is used. */
  candidates: UwsCandidate[];
  passedOver: PassedOver[];
}

/** Compares dotted versions numerically: negative when a < b. */
export function compareVersions(a: string, b: string): number {
  const x = a.split('.').map(Number);
  const y = b.split('.').map(Number);
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const diff = (x[i] ?? 0) - (y[i] ?? 0);
    if (diff !== 0) return diff;
  }
  return 0;
}

const nodeOf = (abi: number): string => (NODE_OF_ABI[abi] ? `Node ${NODE_OF_ABI[abi]}` : `Node ABI ${abi}`);

/** `pattern` with the host's `{platform}`, `{arch}` and `{abi}` filled in. */
export function fillIn(pattern: string, host: UwsHost): string {
  return pattern.replace('{platform}', host.platform).replace('{arch}', host.arch).replace('{abi}', String(host.abi));
}

/** Why a pinned build cannot serve `host`, or undefined when it may be tried. */
function unfitReason(build: UwsBuild, host: UwsHost, installed: string | undefined): string | undefined {
  if (installed === undefined) return `not installed (${build.install})`;
  if (build.pinnedVersion !== undefined && installed !== build.pinnedVersion) {
    return `version ${installed} installed, ${build.pinnedVersion} pinned`;
  }
  const target = `${host.platform}-${host.arch}`;
  if (build.targets && !build.targets.includes(target)) return `no binary for ${target}`;
  if (build.abis && !build.abis.includes(host.abi)) {
    return `no binary for ${nodeOf(host.abi)} (ABI ${host.abi}); has ${build.abis.map((abi) => `${nodeOf(abi)} (${abi})`).join(', ')}`;
  }
  const floor = build.minGlibc?.[host.arch];
  if (host.platform === 'linux' && floor !== undefined) {
    if (host.glibc === null) return `its Linux binaries need glibc >= ${floor}; this Linux has another libc`;
    if (compareVersions(host.glibc, floor) < 0) return `its Linux binaries need glibc >= ${floor}; this machine has ${host.glibc}`;
  }
  return undefined;
}

/**
 * The builds to try on `host`, best first, and the ones passed over with the reason. Pure: the
 * loader (uws-loader.ts) gathers `host` and `installed`, then loads the candidates in order.
 * @param host platform, arch, Node ABI and glibc version of the machine
 * @param installed version of each build found under node_modules
 */
export function chooseUwsBuilds(host: UwsHost, installed: InstalledBuilds): UwsChoice {
  const order: UwsBuildId[] = host.abi >= 127 ? ['official', 'btc-vision', 'trufflesuite'] : ['official', 'trufflesuite', 'btc-vision'];
  const choice: UwsChoice = { candidates: [], passedOver: [] };
  for (const id of order) {
    const build = UWS_BUILDS[id];
    const reason = unfitReason(build, host, installed[id]);
    if (reason !== undefined) {
      choice.passedOver.push({ build, reason });
      continue;
    }
    choice.candidates.push({ build, entry: fillIn(build.entry, host) });
  }
  return choice;
}

/** A binary of a pinned build that an install keeps. */
export interface KeptUwsBinary {
  build: UwsBuild;
  abi: number;
  /** Relative to the package directory, e.g. `binaries/uws_linux_x64_115.node`. */
  file: string;
}

/**
 * The uWebSockets.js binaries an install keeps on `host` (docs/OPERATIONS.md, "Footprint"): for
 * each Node ABI in `abis`, the binary of the first pinned build the loader would try for that ABI
 * on this platform, arch and libc; none for an ABI no pinned build serves here. The official
 * package is left out: its binaries are not known ahead and an install never prunes it. Pure.
 * @param host platform, arch and glibc of the machine (its own ABI goes in `abis`)
 * @param abis Node ABIs to keep a binary for (`process.versions.modules` values)
 * @param installed version of each build found under node_modules
 */
export function uwsBinariesToKeep(host: Omit<UwsHost, 'abi'>, abis: number[], installed: InstalledBuilds): KeptUwsBinary[] {
  const pinned: InstalledBuilds = { ...installed };
  delete pinned.official;
  const kept: KeptUwsBinary[] = [];
  for (const abi of [...new Set(abis)].sort((a, b) => a - b)) {
    const first = chooseUwsBuilds({ ...host, abi }, pinned).candidates[0];
    if (first?.build.binary) kept.push({ build: first.build, abi, file: fillIn(first.build.binary, { ...host, abi }) });
  }
  return kept;
}
