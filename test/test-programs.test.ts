/**
 * `npm test`'s pretest (scripts/test-programs.mjs; README, "Tests"): with the Debian programs
 * the tests run all there it says nothing; with some missing, as root where apt-get is, it says
 * in one line what it installs and why, installs them and lets the tests run; otherwise it stops
 * in one line naming the one command to run. Each case runs the real script as its own process:
 * root is a user namespace's (`unshare --user --map-root-user`), not root is its unmapped user
 * (`unshare --user`), apt-get and sudo are stand-ins on PATH that record how they were called, and
 * a program is missing or there by its variable (MOSQUITTO_PATH, LIBFAKETIME_PATH, ...), which
 * the lookup honours before any folder (scripts/lib/host-programs.mjs).
 */
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import t, { type Test } from 'tap';
import { HOST_PROGRAMS, LIBFAKETIME } from '../scripts/lib/host-programs.mjs';
import { withoutRunnerHooks } from '../scripts/lib/spawned-store.js';
import { packageRoot } from '../src/paths.js';

const run = promisify(execFile);
/** `name` on this process's PATH: the script's own PATH holds the stand-ins and links to these alone. */
const which = (name: string) => execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim();
const UNSHARE = which('unshare');
const SCRIPT = path.join(packageRoot, 'scripts', 'test-programs.mjs');

interface Machine {
  dir: string;
  /** The environment: PATH the stand-ins' folder alone, every program there by its variable but `missing`. */
  env: Record<string, string>;
  /** What the apt-get stand-in was asked, one call a line, with its DEBIAN_FRONTEND. */
  aptCalls(): string[];
}

/**
 * A machine whose tests' programs are all there but `missing` (by name: a HOST_PROGRAMS key,
 * `requests`, python3's module, or `libfaketime`), whose apt-get (when `apt`) records its calls and on `install` puts the missing
 * ones where their variables point, or fails with exit 100 when `apt` is `failing`; with a sudo
 * on PATH when `sudo`.
 */
function machine(t: Test, missing: string[], options: { apt?: 'working' | 'failing'; sudo?: boolean } = {}): Machine {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ees-test-programs-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.chmodSync(dir, 0o755); // the unmapped user of `unshare --user` runs what is here
  const bin = path.join(dir, 'bin');
  const installed = path.join(dir, 'installed');
  fs.mkdirSync(bin);
  fs.symlinkSync(process.execPath, path.join(bin, 'node')); // npm's scripts run `node` and `sh` from PATH
  for (const tool of ['sh', 'mkdir', 'chmod']) fs.symlinkSync(which(tool), path.join(bin, tool));
  const env: Record<string, string> = { PATH: bin, HOME: dir };
  for (const [name, { env: variable }] of Object.entries(HOST_PROGRAMS)) env[variable] = missing.includes(name) ? path.join(installed, name) : process.execPath;
  // A python3 stand-in: `python3 -c 'import requests'` succeeds unless requests is missing.
  if (!missing.includes('python3')) {
    env.PYTHON3_PATH = path.join(bin, 'python3');
    fs.writeFileSync(env.PYTHON3_PATH, `#!/bin/sh\nexit ${missing.includes('requests') ? 1 : 0}\n`, { mode: 0o755 });
  }
  env[LIBFAKETIME.env] = missing.includes('libfaketime') ? path.join(installed, 'libfaketime') : process.execPath;
  const log = path.join(dir, 'apt-calls');
  if (options.apt) {
    const install = options.apt === 'failing'
      ? 'echo "E: Unable to locate package nats-server" >&2; exit 100'
      : `mkdir -p ${installed}; for f in ${missing.join(' ')}; do printf '#!/bin/sh\\n' > ${installed}/$f; done; chmod +x ${installed}/*${missing.includes('requests') ? `; printf '#!/bin/sh\\n' > ${bin}/python3` : ''}`;
    fs.writeFileSync(path.join(bin, 'apt-get'), `#!/bin/sh\necho "$DEBIAN_FRONTEND $*" >> ${log}\nif [ "$1" = install ]; then ${install}; fi\n`, { mode: 0o755 });
  }
  if (options.sudo) fs.writeFileSync(path.join(bin, 'sudo'), '#!/bin/sh\nexit 1\n', { mode: 0o755 });
  return { dir, env, aptCalls: () => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n').filter(Boolean) : []) };
}

/** Runs the pretest as `user` (root: a user namespace's root; other: its unmapped user) in `env`. */
async function pretest(env: Record<string, string>, user: 'root' | 'other', command = [...withoutRunnerHooks(env), process.execPath, SCRIPT]): Promise<{ code: number; stdout: string; stderr: string }> {
  const prefix = user === 'root' ? [UNSHARE, '--user', '--map-root-user'] : [UNSHARE, '--user'];
  return run(prefix[0], [...prefix.slice(1), ...command], { env, cwd: packageRoot }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
  );
}

t.test('every program there: it says nothing and lets the tests run', async (t) => {
  const { env } = machine(t, [], { apt: 'working' });
  t.same(await pretest(env, 'root'), { code: 0, stdout: '', stderr: '' });
});

t.test('missing programs, as root with apt-get: one line says what it installs and why, apt-get installs them, the tests run', async (t) => {
  const box = machine(t, ['mosquitto', 'chromium', 'libfaketime'], { apt: 'working' });
  const result = await pretest(box.env, 'root');
  t.same(result, {
    code: 0,
    stdout: 'npm test: installing mosquitto chromium faketime with apt-get, as the tests run them for real and this machine lacks them: the MQTT broker, a browser for the operator page, libfaketime for clock jumps\n',
    stderr: '',
  }, 'one line, then nothing');
  t.same(box.aptCalls(), ['noninteractive update -qq', 'noninteractive install -y -qq mosquitto chromium faketime'], 'apt-get update, then install of the missing packages alone, asking nothing');
});

t.test('python3 without its requests module: python3-requests installed, and python3 with it where python3 is missing too', async (t) => {
  const box = machine(t, ['requests'], { apt: 'working' });
  const result = await pretest(box.env, 'root');
  t.same(result, { code: 0, stdout: 'npm test: installing python3-requests with apt-get, as the tests run them for real and this machine lacks them: Python\'s requests\n', stderr: '' });
  t.same(box.aptCalls(), ['noninteractive update -qq', 'noninteractive install -y -qq python3-requests']);
  const bare = machine(t, ['python3'], { apt: 'working' });
  t.match((await pretest(bare.env, 'other')).stderr, /run su -c 'apt-get update && apt-get install -y python3 python3-requests'/, 'no python3: both packages');
});

t.test('an apt-get that fails stops it, with apt-get\'s own words and one line', async (t) => {
  const box = machine(t, ['nats-server'], { apt: 'failing' });
  const result = await pretest(box.env, 'root');
  t.equal(result.code, 1);
  t.equal(result.stderr, 'E: Unable to locate package nats-server\nnpm test: apt-get install -y -qq nats-server failed (exit 100); the tests cannot run without these packages\n');
});

t.test('missing programs, not root: one line naming the one command, and apt-get is not run', async (t) => {
  const withSudo = machine(t, ['promtool', 'python3'], { apt: 'working', sudo: true });
  const result = await pretest(withSudo.env, 'other');
  t.same(result, {
    code: 1,
    stdout: '',
    stderr: 'npm test: this machine lacks what the tests run for real (promtool for /metrics, Python to read exports back, Python\'s requests); run sudo sh -c \'apt-get update && apt-get install -y prometheus python3 python3-requests\', then npm test again\n',
  });
  t.same(withSudo.aptCalls(), [], 'nothing installed');

  const noSudo = machine(t, ['promtool'], { apt: 'working' });
  t.match((await pretest(noSudo.env, 'other')).stderr, /^npm test: .*; run su -c 'apt-get update && apt-get install -y prometheus', then npm test again\n$/, 'su where there is no sudo');

  const noApt = machine(t, ['mosquitto'], {});
  t.same(await pretest(noApt.env, 'root'), {
    code: 1,
    stdout: '',
    stderr: 'npm test: this machine lacks what the tests run for real (the MQTT broker); install mosquitto (Debian\'s packages mosquitto), or point MOSQUITTO_PATH at them, then npm test again\n',
  }, 'root without apt-get: the programs and their variables');
});

t.test('npm test runs it first: npm stops there, before the build', async (t) => {
  const box = machine(t, ['mosquitto'], { apt: 'working' });
  const npm = fs.realpathSync(which('npm'));
  // A home the unmapped user may write, for npm's cache and logs. No npm on PATH: were the
  // pretest to let it through, `npm run build:test` would stop at once, not run the tests.
  const home = path.join(box.dir, 'home');
  fs.mkdirSync(home, { mode: 0o777 });
  fs.chmodSync(home, 0o777);
  const result = await pretest({ ...box.env, HOME: home, npm_config_update_notifier: 'false' }, 'other', [npm, 'test']);
  t.equal(result.code, 1, 'npm test fails');
  t.match(result.stderr, 'npm test: this machine lacks what the tests run for real (the MQTT broker); run su -c \'apt-get update && apt-get install -y mosquitto\', then npm test again');
  t.notMatch(`${result.stdout}${result.stderr}`, /build:test|not found/, 'before the build');
});
