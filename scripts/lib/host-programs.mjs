/**
 * The programs from Debian packages that the tests run for real (brokers, a browser, a metrics
 * linter, an interpreter and a module of it, a clock-faking library), and where each is found. Shared by the tests'
 * helpers (test/support/host-program.ts, test/support/faketime.ts), which fail a test naming the
 * package to install, never skip it, and by `npm test`'s pretest (scripts/test-programs.mjs),
 * which installs what is missing or says how before anything is built.
 *
 * Plain JavaScript with JSDoc types, not TypeScript: the pretest runs before the build, on Node 20
 * too, which cannot run TypeScript. tsc compiles it with the rest (tsconfig.json, `allowJs`).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/**
 * Each program a test runs: the variable that may point elsewhere, the Debian package that
 * installs it, and what the tests use it for (the pretest's line says it).
 */
export const HOST_PROGRAMS = {
  mosquitto: { env: 'MOSQUITTO_PATH', debianPackage: 'mosquitto', use: 'the MQTT broker' },
  'nats-server': { env: 'NATS_SERVER_PATH', debianPackage: 'nats-server', use: 'the NATS server' },
  chromium: { env: 'CHROMIUM_PATH', debianPackage: 'chromium', use: 'a browser for the operator page' },
  promtool: { env: 'PROMTOOL_PATH', debianPackage: 'prometheus', use: 'promtool for /metrics' },
  python3: { env: 'PYTHON3_PATH', debianPackage: 'python3', use: 'Python to read exports back' },
};

/**
 * libfaketime, which test/support/faketime.ts preloads into store processes under a wall clock
 * that jumps: the variable that may point elsewhere, the Debian package, and where Debian's
 * multiarch layout puts it (thread-safe build first).
 */
export const LIBFAKETIME = {
  env: 'LIBFAKETIME_PATH',
  debianPackage: 'faketime',
  use: 'libfaketime for clock jumps',
  dirs: ['/usr/lib/x86_64-linux-gnu/faketime', '/usr/lib/aarch64-linux-gnu/faketime', '/usr/lib/arm-linux-gnueabihf/faketime', '/usr/lib/faketime'],
  names: ['libfaketimeMT.so.1', 'libfaketime.so.1'],
};

/**
 * Python modules the tests' Python scripts import, from Debian's packages: requests, a client that
 * sends its whole body before it reads the answer (test/early-answer.test.ts).
 */
export const PYTHON_MODULES = {
  requests: { debianPackage: 'python3-requests', use: 'Python\'s requests' },
};

/** The folders searched for a program before PATH. */
export const SEARCHED = ['/usr/sbin', '/usr/bin', '/usr/local/bin'];

/**
 * @param {string} file
 * @returns {boolean} whether `file` is a regular file this process may execute
 */
export function isExecutable(file) {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/**
 * Where `program` is: its variable (e.g. NATS_SERVER_PATH) when set, else the first executable
 * of that name in SEARCHED or PATH.
 * @param {keyof typeof HOST_PROGRAMS} program
 * @param {Record<string, string | undefined>} [env] the environment (default `process.env`)
 * @returns {{ path: string } | { problem: string }} the executable's absolute path, or why there is none
 */
export function findProgram(program, env = process.env) {
  const { env: variable, debianPackage } = HOST_PROGRAMS[program];
  const fromEnv = env[variable];
  if (fromEnv) {
    if (isExecutable(fromEnv)) return { path: fromEnv };
    return { problem: `no ${program} at ${variable}=${fromEnv}: apt-get install ${debianPackage} (.ci/run does), or point ${variable} at it` };
  }
  const dirs = [...SEARCHED, ...(env.PATH ?? '').split(path.delimiter).filter(Boolean)];
  const found = dirs.map((dir) => path.join(dir, program)).find(isExecutable);
  if (found) return { path: found };
  return { problem: `no ${program} in ${SEARCHED.join(', ')} or PATH: apt-get install ${debianPackage} (.ci/run does), or set ${variable}` };
}

/**
 * Where libfaketime is: LIBFAKETIME_PATH when set, else the first of LIBFAKETIME's names in its
 * folders.
 * @param {Record<string, string | undefined>} [env] the environment (default `process.env`)
 * @returns {{ path: string } | { problem: string }} the library's path, or why there is none
 */
export function findLibfaketime(env = process.env) {
  const fromEnv = env[LIBFAKETIME.env];
  if (fromEnv) {
    if (fs.existsSync(fromEnv)) return { path: fromEnv };
    return { problem: `no libfaketime at ${LIBFAKETIME.env}=${fromEnv}: apt-get install faketime (.ci/run does), or point ${LIBFAKETIME.env} at it` };
  }
  for (const dir of LIBFAKETIME.dirs) {
    for (const name of LIBFAKETIME.names) {
      const file = path.join(dir, name);
      if (fs.existsSync(file)) return { path: file };
    }
  }
  return { problem: `no libfaketime in ${LIBFAKETIME.dirs.join(', ')}: apt-get install faketime (.ci/run does), or set ${LIBFAKETIME.env}` };
}

/**
 * Whether python3 (as findProgram finds it) imports `module`.
 * @param {keyof typeof PYTHON_MODULES} module
 * @param {Record<string, string | undefined>} [env] the environment (default `process.env`)
 * @returns {{ path: string } | { problem: string }} python3's path, or why the module is not there
 */
export function findPythonModule(module, env = process.env) {
  const { debianPackage } = PYTHON_MODULES[module];
  const python = findProgram('python3', env);
  if ('problem' in python) return { problem: `no python3 to import ${module}: apt-get install python3 ${debianPackage} (.ci/run does)` };
  const imported = spawnSync(python.path, ['-c', `import ${module}`], { stdio: 'ignore', timeout: 30_000 });
  if (imported.status === 0) return python;
  return { problem: `${python.path} has no ${module} module: apt-get install ${debianPackage} (.ci/run does)` };
}

/**
 * What the tests need that this machine lacks, in HOST_PROGRAMS' order, then the Python modules,
 * libfaketime last.
 * @param {Record<string, string | undefined>} [env] the environment (default `process.env`)
 * @returns {{ name: string, debianPackage: string, use: string, problem: string }[]}
 */
export function missingHostPrograms(env = process.env) {
  /** @type {{ name: string, debianPackage: string, use: string, problem: string }[]} */
  const missing = [];
  for (const [name, { debianPackage, use }] of Object.entries(HOST_PROGRAMS)) {
    const found = findProgram(/** @type {keyof typeof HOST_PROGRAMS} */ (name), env);
    if ('problem' in found) missing.push({ name, debianPackage, use, problem: found.problem });
  }
  for (const [name, { debianPackage, use }] of Object.entries(PYTHON_MODULES)) {
    const found = findPythonModule(/** @type {keyof typeof PYTHON_MODULES} */ (name), env);
    if ('problem' in found) missing.push({ name: `python3's ${name}`, debianPackage, use, problem: found.problem });
  }
  const library = findLibfaketime(env);
  if ('problem' in library) missing.push({ name: 'libfaketime', debianPackage: LIBFAKETIME.debianPackage, use: LIBFAKETIME.use, problem: library.problem });
  return missing;
}
