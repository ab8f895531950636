/**
 * `npm run build:test`'s last step: removes the compiled tests in dist/test whose TypeScript source
 * in test/ is gone (renamed or deleted). tsc compiles incrementally and never deletes an output,
 * and tap runs every `dist/test/**\/*.test.js` (docs/ARCHITECTURE.md, "Tests"): without this, a
 * renamed test would still run under its old name.
 */
import fs from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../src/paths.js';

const compiled = path.join(packageRoot, 'dist', 'test');
const sources = path.join(packageRoot, 'test');
const entries = fs.existsSync(compiled) ? fs.readdirSync(compiled, { recursive: true, encoding: 'utf8' }) : [];
for (const file of entries.filter((name) => name.endsWith('.js'))) {
  if (!fs.existsSync(path.join(sources, file.replace(/\.js$/, '.ts')))) {
    for (const output of [file, `${file}.map`]) fs.rmSync(path.join(compiled, output), { force: true });
  }
}
