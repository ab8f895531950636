#!/usr/bin/env node
/**
 * `npm test`'s pretest (package.json): the tests run Debian's chromium, mosquitto, nats-server,
 * promtool (package prometheus), python3 with requests (python3-requests) and libfaketime
 * (package faketime) for real, and a test
 * whose program is missing fails naming its package (scripts/lib/host-programs.mjs). So that the
 * README's two commands pass on a fresh machine, before anything is built:
 *
 * - nothing missing: says nothing;
 * - missing, run as root where apt-get is (a fresh Debian or Ubuntu box or container, CI): says
 *   in one line what it installs and why, runs `apt-get update` and `apt-get install -y` of the
 *   packages (their output shown only if they fail), checks again, and lets the tests run;
 * - missing otherwise: one line naming the one command to run (with sudo, or su, where apt-get
 *   is; else the programs and their variables), and exit 1, so npm stops before the build.
 *
 * Plain JavaScript: it runs before the build (scripts/lib/host-programs.mjs says why).
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { HOST_PROGRAMS, isExecutable, LIBFAKETIME, missingHostPrograms } from './lib/host-programs.mjs';

/**
 * @param {string} name
 * @returns {string | undefined} the first executable `name` on PATH
 */
function onPath(name) {
  return (process.env.PATH ?? '').split(path.delimiter).filter(Boolean).map((dir) => path.join(dir, name)).find(isExecutable);
}

/**
 * Runs `apt-get` with `args` quietly; on a failure prints its output and one line, and exits 1.
 * @param {string} aptGet
 * @param {string[]} args
 */
function aptGet(aptGet, args) {
  const run = spawnSync(aptGet, args, { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, encoding: 'utf8' });
  if (run.status === 0) return;
  process.stderr.write(`${run.stdout ?? ''}${run.stderr ?? ''}`);
  console.error(`npm test: apt-get ${args.join(' ')} failed (${run.error?.message ?? `exit ${run.status}`}); the tests cannot run without these packages`);
  process.exit(1);
}

const missing = missingHostPrograms();
if (missing.length === 0) process.exit(0);

const packages = [...new Set(missing.map((program) => program.debianPackage))];
const uses = missing.map((program) => program.use).join(', ');
const apt = onPath('apt-get');
const root = process.getuid?.() === 0;

if (root && apt) {
  console.log(`npm test: installing ${packages.join(' ')} with apt-get, as the tests run them for real and this machine lacks them: ${uses}`);
  aptGet(apt, ['update', '-qq']);
  aptGet(apt, ['install', '-y', '-qq', ...packages]);
  const still = missingHostPrograms();
  if (still.length === 0) process.exit(0);
  console.error(`npm test: still missing after apt-get install ${packages.join(' ')}: ${still.map((program) => program.problem).join('; ')}`);
  process.exit(1);
}

const install = `apt-get update && apt-get install -y ${packages.join(' ')}`;
if (apt) {
  const command = onPath('sudo') ? `sudo sh -c '${install}'` : `su -c '${install}'`;
  console.error(`npm test: this machine lacks what the tests run for real (${uses}); run ${command}, then npm test again`);
} else {
  const variables = missing.flatMap((program) => (program.name === 'libfaketime' ? [LIBFAKETIME.env]
    : program.name in HOST_PROGRAMS ? [HOST_PROGRAMS[/** @type {keyof typeof HOST_PROGRAMS} */ (program.name)].env] : []));
  const elsewhere = variables.length === 0 ? '' : `, or point ${variables.join(', ')} at them`;
  console.error(`npm test: this machine lacks what the tests run for real (${uses}); install ${missing.map((program) => program.name).join(', ')} (Debian's packages ${packages.join(' ')})${elsewhere}, then npm test again`);
}
process.exit(1);
