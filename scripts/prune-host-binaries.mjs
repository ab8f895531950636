#!/usr/bin/env node
/**
 * postinstall of the installed package (docs/OPERATIONS.md, "Footprint"): keeps the native
 * binaries this machine uses and removes the rest, by the rule of dist/src/install/host-binaries.js
 * (the .deb build runs the same): of the two uWebSockets.js packages (about 227 MB of every
 * platform's binaries), one binary per Node version the package supports (and the installing
 * Node's) that the loader picks on this platform, arch and libc; node-gyp-build's prebuilds of
 * other platforms; addons tagged for the other libc (musl on glibc, glibc on musl); and the
 * dependencies' test, benchmark and CI folders, source maps and TypeScript sources, which Node
 * never loads. Run it again by hand
 * after `--ignore-scripts`.
 *
 * Plain JavaScript, not TypeScript: it runs at install time, with the built dist/ the tarball
 * holds. Does nothing in a source checkout (tsconfig.json beside package.json: the tests load
 * every build, and dist/ may not be built yet), nor with EDGE_EVENTS_KEEP_ALL_BINARIES=1 (a tree
 * installed on one machine and copied to another). Never fails the install: a file it cannot
 * remove, or a rule that cannot run, is reported and everything is kept.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const packageRoot = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

async function main() {
  if (fs.existsSync(path.join(packageRoot, 'tsconfig.json'))) return;
  if (process.env.EDGE_EVENTS_KEEP_ALL_BINARIES === '1') return;
  const { pruneHostBinaries } = await import('../dist/src/install/host-binaries.js');
  const { currentHost } = await import('../dist/src/http/uws/uws-loader.js');
  const host = currentHost();
  const report = pruneHostBinaries(packageRoot, host);
  for (const failure of report.failed) console.warn(`edge-event-store: kept ${failure}`);
  const where = `${host.platform}-${host.arch}${host.glibc ? `, glibc ${host.glibc}` : ''}`;
  const kept = report.keptUws.length > 0 ? report.keptUws.map((file) => path.basename(file)).join(', ') : 'none (no build serves here: the store will use node:http)';
  const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;
  const { 'native binary': binaries, 'source map': maps, 'TypeScript source': sources, 'development folder': folders } = report.removedByKind;
  console.log(`edge-event-store: removed ${mb(report.removedBytes)} this machine never loads: ${binaries.count} native binaries of other machines, libcs and Node versions (${mb(binaries.bytes)}), `
    + `${folders.count} test, benchmark and CI folders (${mb(folders.bytes)}), ${maps.count} source maps (${mb(maps.bytes)}) and ${sources.count} TypeScript sources (${mb(sources.bytes)}) of dependencies; `
    + `uWebSockets.js kept for ${where}: ${kept}`);
}

main().catch((err) => console.warn(`edge-event-store: native binaries not pruned, all kept: ${err.message}`));
