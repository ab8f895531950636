/**
 * The release tarball (docs/OPERATIONS.md, "Install on a device") made from a copy of the
 * checkout, so `npm pack`'s prepack (a clean `npm run build`) never touches the checkout's dist/.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { packageRoot } from '../../src/paths.js';

const run = promisify(execFile);

/** What `npm pack` copies from: the sources and what the build needs, never dist/. */
const SOURCES = ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.page.json', 'README.md', 'src', 'scripts', 'page', 'schemas', 'systemd', 'docs'];

/** This process's environment without npm's own variables (an `npm run` sets npm_config_*, which would steer a child npm). */
export function npmFreeEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) if (value !== undefined && !name.toLowerCase().startsWith('npm_')) env[name] = value;
  return env;
}

/** What `npm pack --json` says of the tarball it made. */
export interface PackedRelease {
  /** The tarball's absolute path. */
  tarball: string;
  version: string;
  /** The paths it holds, relative to the package. */
  files: string[];
}

/**
 * Packs the checkout into `work` (a copy of its sources in `work/source`, the checkout's
 * node_modules linked for the build).
 * @throws the failed `npm pack` (its stderr in the error) when the build or the pack fails
 */
export async function packRelease(work: string, env: Record<string, string>): Promise<PackedRelease> {
  const source = path.join(work, 'source');
  for (const name of SOURCES) fs.cpSync(path.join(packageRoot, name), path.join(source, name), { recursive: true });
  fs.symlinkSync(fs.realpathSync(path.join(packageRoot, 'node_modules')), path.join(source, 'node_modules'));
  const packed = await run('npm', ['pack', '--json', '--pack-destination', work], { cwd: source, env, maxBuffer: 64 << 20 });
  const [manifest] = JSON.parse(packed.stdout) as { filename: string; version: string; files: { path: string }[] }[];
  return { tarball: path.join(work, manifest.filename), version: manifest.version, files: manifest.files.map((file) => file.path) };
}
