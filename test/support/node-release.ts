/**
 * Official Node.js builds from the npm registry (`node-<platform>-<arch>@<major>`, whose
 * `bin/node` runs on glibc Linux), installed once with `npm install --prefix` into a cache outside
 * the repository and reused by later runs.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Where the builds are kept: EDGE_EVENTS_NODE_CACHE, else ~/.cache/edge-event-store. */
const cacheRoot = process.env.EDGE_EVENTS_NODE_CACHE ?? path.join(os.homedir(), '.cache', 'edge-event-store');

/**
 * The path of a Node `major` binary, installed first when absent.
 * @returns the `bin/node` of the newest `node-<platform>-<arch>@<major>` on the registry
 * @throws Error when npm cannot install it
 */
export async function nodeRelease(major: number): Promise<string> {
  const name = `node-${process.platform}-${process.arch}`;
  const dir = path.join(cacheRoot, `${name}-${major}`);
  const binary = path.join(dir, 'node_modules', name, 'bin', 'node');
  if (fs.existsSync(binary)) return binary;
  // Installed beside its final place, then renamed: a run stopped midway leaves no half install.
  const staging = `${dir}.${process.pid}.tmp`;
  fs.rmSync(staging, { recursive: true, force: true });
  fs.mkdirSync(staging, { recursive: true });
  await run('npm', ['install', '--prefix', staging, '--no-audit', '--no-fund', '--no-save', '--loglevel=error', `${name}@${major}`], { timeout: 300_000 });
  try {
    if (!fs.existsSync(binary)) fs.rmSync(dir, { recursive: true, force: true });
    fs.renameSync(staging, dir);
  } catch {
    fs.rmSync(staging, { recursive: true, force: true }); // installed by a concurrent run meanwhile
  }
  return binary;
}
