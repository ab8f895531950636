/** Locations inside the installed package, the same from `src/` (tests) and `dist/src/` (built). */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function findPackageRoot(start: string): string {
  let dir = start;
  while (!fs.existsSync(path.join(dir, 'package.json')) || path.basename(dir) === 'dist') {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`package.json not found above ${start}`);
    dir = parent;
  }
  return dir;
}

/** Absolute path of the package root (the folder holding package.json and schemas/). */
export const packageRoot = findPackageRoot(path.dirname(fileURLToPath(import.meta.url)));

/** Absolute path of the JSON Schemas folder. */
export const schemasDir = path.join(packageRoot, 'schemas');

/** The package's version (package.json), as `edge-events --version`, /stats `runtime.version` and /openapi.json give it. */
export const packageVersion = (JSON.parse(fs.readFileSync(path.join(packageRoot, 'package.json'), 'utf8')) as { version: string }).version;
