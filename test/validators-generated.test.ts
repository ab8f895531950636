/**
 * The create body's validators are compiled ahead of time (src/events/schema-compiler.ts): the
 * committed modules under src/events/generated/ must be what the schemas compile to now, so a
 * schema change without `npm run validators` fails here instead of serving the old rules.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { generateValidators } from '../src/events/schema-compiler.js';
import { packageRoot } from '../src/paths.js';

t.test('the generated validators are those the schemas compile to', async (t) => {
  const generated = generateValidators();
  t.same(Object.keys(generated).sort(), ['create-event.ts', 'event-data.ts']);
  for (const [name, source] of Object.entries(generated)) {
    const committed = fs.readFileSync(path.join(packageRoot, 'src', 'events', 'generated', name), 'utf8');
    t.ok(committed === source, `src/events/generated/${name} is up to date (run \`npm run validators\` after changing a schema)`);
  }
});
