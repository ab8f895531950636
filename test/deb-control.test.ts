/**
 * The Debian package's control fields (scripts/lib/deb-control.ts; docs/OPERATIONS.md, "The
 * Debian package"): the Maintainer comes from package.json's author, in either of npm's forms,
 * and a package.json without an author with an email is refused naming the fix.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { maintainerField } from '../scripts/lib/deb-control.js';
import { packageRoot } from '../src/paths.js';

t.test('the Maintainer is package.json\'s author', async (t) => {
  const { author } = JSON.parse(fs.readFileSync(path.join(packageRoot, 'package.json'), 'utf8')) as { author: string };
  t.equal(maintainerField(author), author, 'this package.json\'s, as written');
  t.equal(maintainerField({ name: 'Vision Team', email: 'vision@example.com' }), 'Vision Team <vision@example.com>', 'npm\'s object form');
  for (const bad of [undefined, 'Vision Team', 'vision@example.com', { name: 'Vision Team' }, 'Vision Team <not-an-email>']) {
    t.throws(() => maintainerField(bad), { message: /is not a maintainer Debian takes: set it to "Name <email>"/ }, JSON.stringify(bad) ?? 'undefined');
  }
});
