/**
 * `npm run build:test`'s last step: rebuilds tap's Test class (`tap build`) when it was built with
 * other plugins than the project's config (package.json, `tap.plugin`) asks for.
 *
 * tap checks this itself when a run starts, and rebuilds then, but the test processes of that run
 * are still started with the loaders of the plugins it was built with: the runner took their
 * arguments from the Test class it loaded (@tapjs/run, test-argv.js, `importLoaders`), which the
 * rebuild does not reach (run.js: it "won't affect the tap loaded here in the runner"). A fresh
 * `npm install` builds tap with every default plugin, so the first `npm test` after it, CI's
 * included, loaded @tapjs/typescript's hooks into each of its hundred test processes: about 0.5 s
 * of CPU each (docs/ARCHITECTURE.md, "How a test file runs").
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { t } from 'tap';
import { packageRoot } from '../src/paths.js';

const tap = path.join(packageRoot, 'node_modules', '.bin', 'tap');
// The configured plugins, signed as tap signs them (@tapjs/config's `pluginSignature`).
const configured = execFileSync(tap, ['plugin', 'list'], { cwd: packageRoot, encoding: 'utf8' })
  .split('\n').filter(Boolean).sort((a, b) => a.localeCompare(b, 'en')).join('\n');
if (configured !== t.pluginSignature) execFileSync(tap, ['build'], { cwd: packageRoot, stdio: 'inherit' });
