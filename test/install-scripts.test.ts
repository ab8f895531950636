/**
 * What `npm install` runs in a clone (docs/OPERATIONS.md, "Install on a device", its "Install scripts"): every installed
 * package with an install-time script is reviewed in package.json's `allowScripts` (npm 11.16
 * and later name the rest in a warning; npm 12 will skip them), the ones the store needs allowed
 * (lmdb's and msgpackr-extract's native builds where no prebuilt one fits), the telemetry of
 * @scarf/scarf (a postinstall of swagger-ui-dist's dependency) denied; and Scarf itself, asked by
 * its own code over the real `npm ls` tree, finds its analytics turned off by the project's
 * `scarfSettings`, as its README documents, for a global install of the tarball too.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { packageRoot } from '../src/paths.js';

const run = promisify(execFile);
const manifest = JSON.parse(fs.readFileSync(path.join(packageRoot, 'package.json'), 'utf8')) as { allowScripts?: Record<string, boolean> };

/** The lifecycle scripts npm runs when it installs a dependency (npm's docs, "scripts"). */
const INSTALL_SCRIPTS = ['preinstall', 'install', 'postinstall'];

/**
 * The names of the packages under `nodeModules` (nested ones included) that npm would run a
 * script of at install: one of INSTALL_SCRIPTS, or a binding.gyp with no install or preinstall
 * script (npm then runs `node-gyp rebuild` itself).
 */
function packagesWithInstallScripts(nodeModules: string, found = new Set<string>()): Set<string> {
  if (!fs.existsSync(nodeModules)) return found;
  for (const entry of fs.readdirSync(nodeModules)) {
    if (entry.startsWith('.')) continue;
    const dirs = entry.startsWith('@') ? fs.readdirSync(path.join(nodeModules, entry)).map((name) => path.join(nodeModules, entry, name)) : [path.join(nodeModules, entry)];
    for (const dir of dirs) {
      const file = path.join(dir, 'package.json');
      if (!fs.existsSync(file)) continue;
      const pkg = JSON.parse(fs.readFileSync(file, 'utf8')) as { name: string; scripts?: Record<string, string> };
      const scripts = Object.keys(pkg.scripts ?? {});
      const gyp = fs.existsSync(path.join(dir, 'binding.gyp')) && !scripts.includes('install') && !scripts.includes('preinstall');
      if (gyp || scripts.some((name) => INSTALL_SCRIPTS.includes(name))) found.add(pkg.name);
      packagesWithInstallScripts(path.join(dir, 'node_modules'), found);
    }
  }
  return found;
}

t.test('every installed package with an install script is allowed or denied in package.json, telemetry denied', async (t) => {
  const allowed = manifest.allowScripts ?? {};
  const scripted = [...packagesWithInstallScripts(path.join(packageRoot, 'node_modules'))].sort();
  t.ok(scripted.includes('lmdb') && scripted.includes('@scarf/scarf'), `found the installed packages with install scripts: ${scripted.join(', ')}`);
  t.same(scripted.filter((name) => !(name in allowed)), [], 'none left unreviewed (npm would warn at every install)');
  t.same({ lmdb: allowed.lmdb, 'msgpackr-extract': allowed['msgpackr-extract'] }, { lmdb: true, 'msgpackr-extract': true }, 'the native builds the store needs where no prebuilt one fits are allowed');
  t.equal(allowed['@scarf/scarf'], false, 'Scarf\'s telemetry postinstall is denied');
});

t.test('Scarf, asked over the real npm ls tree, finds its analytics turned off by the project', async (t) => {
  // What its postinstall does (report.js, getDependencyInfo): `npm ls @scarf/scarf --json --long`
  // in the installing project, then its own decision over the tree, before any network.
  const { stdout } = await run('npm', ['ls', '@scarf/scarf', '--json', '--long'], { cwd: packageRoot, maxBuffer: 64 << 20 });
  const scarf = createRequire(import.meta.url)(path.join(packageRoot, 'node_modules', '@scarf', 'scarf', 'report.js')) as {
    processDependencyTreeOutput: (resolve: (info: unknown) => void, reject: (err: Error) => void) => (error: Error | null, stdout: string, stderr: string) => void;
  };
  const decision = await new Promise<string>((resolve) => {
    scarf.processDependencyTreeOutput(() => resolve('would report'), (err) => resolve(err.message))(null, stdout, '');
  });
  t.equal(decision, 'Scarf has been disabled via a package.json in the dependency chain.', 'it would send nothing');
});
