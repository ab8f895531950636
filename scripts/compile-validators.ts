/**
 * `npm run validators`: writes the create body's validators, compiled ahead of time from
 * schemas/, into src/events/generated/ (src/events/schema-compiler.ts says why). Run it after
 * changing a schema; test/validators-generated.test.ts fails until it is run.
 */
import fs from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../src/paths.js';
import { generateValidators } from '../src/events/schema-compiler.js';

const dir = path.join(packageRoot, 'src', 'events', 'generated');
fs.mkdirSync(dir, { recursive: true });
for (const [name, source] of Object.entries(generateValidators())) {
  fs.writeFileSync(path.join(dir, name), source);
  console.log(`wrote ${path.relative(packageRoot, path.join(dir, name))} (${source.length} characters)`);
}
