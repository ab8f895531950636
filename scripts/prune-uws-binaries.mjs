#!/usr/bin/env node
/**
 * postinstall of the installed package (docs/OPERATIONS.md, "Install on a device"): removes the
 * uWebSockets.js binaries built for other platforms and architectures from the two optional
 * uWebSockets.js packages (docs/OPERATIONS.md, "HTTP engines"), which ship every platform's
 * `uws_<platform>_<arch>_<abi>.node` (about 227 MB together; the host's are about 60 MB). Every
 * Node ABI of the host's platform and architecture stays, so a Node upgrade on the box still finds
 * its build.
 *
 * Plain JavaScript, not TypeScript: it runs at install time, before and without any build.
 * Does nothing in a source checkout (tsconfig.json beside package.json: the tests load every
 * build), nor with EDGE_EVENTS_KEEP_ALL_BINARIES=1 (a tree installed on one machine and copied
 * to another architecture). Never fails the install: a file it cannot remove is reported and kept.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const UWS_PACKAGES = ['@btc-vision/uwebsockets.js', '@trufflesuite/uws-js-unofficial'];
const BINARY_NAME = /^uws_([a-z0-9]+)_([a-z0-9]+)_\d+\.node$/;

const packageRoot = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

/** The directory of `name` as Node resolves it from the package root, or undefined. */
function packageDir(name) {
  const require = createRequire(path.join(packageRoot, 'package.json'));
  for (const nodeModules of require.resolve.paths(name) ?? []) {
    const dir = path.join(nodeModules, name);
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
  }
  return undefined;
}

/** Every file under `dir`, recursively. */
function* filesUnder(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* filesUnder(file);
    else if (entry.isFile()) yield file;
  }
}

function main() {
  if (fs.existsSync(path.join(packageRoot, 'tsconfig.json'))) return;
  if (process.env.EDGE_EVENTS_KEEP_ALL_BINARIES === '1') return;
  const host = `${process.platform}_${process.arch}`;
  let removed = 0;
  let bytes = 0;
  for (const name of UWS_PACKAGES) {
    const dir = packageDir(name);
    if (!dir) continue;
    for (const file of filesUnder(dir)) {
      const match = BINARY_NAME.exec(path.basename(file));
      if (!match || `${match[1]}_${match[2]}` === host) continue;
      try {
        const size = fs.statSync(file).size;
        fs.rmSync(file);
        removed += 1;
        bytes += size;
      } catch (err) {
        console.warn(`edge-event-store: kept ${file}: ${err.message}`);
      }
    }
  }
  if (removed > 0) {
    console.log(`edge-event-store: removed ${removed} uWebSockets.js binaries of other platforms (${Math.round(bytes / 1e6)} MB), kept ${host}'s`);
  }
}

main();
