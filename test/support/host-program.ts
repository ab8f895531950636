/**
 * The programs from Debian packages that tests run for real: brokers, a browser, linters, an
 * interpreter. .ci/run installs every one of them, so a missing one is a broken machine, never a
 * reason to skip: the test fails with a message naming the package to install.
 */
import fs from 'node:fs';
import path from 'node:path';

/** Each program a test runs: the variable that may point elsewhere, and the Debian package that installs it. */
export const HOST_PROGRAMS = {
  mosquitto: { env: 'MOSQUITTO_PATH', debianPackage: 'mosquitto' },
  'nats-server': { env: 'NATS_SERVER_PATH', debianPackage: 'nats-server' },
  chromium: { env: 'CHROMIUM_PATH', debianPackage: 'chromium' },
  promtool: { env: 'PROMTOOL_PATH', debianPackage: 'prometheus' },
  python3: { env: 'PYTHON3_PATH', debianPackage: 'python3' },
} as const;

export type HostProgram = keyof typeof HOST_PROGRAMS;

const SEARCHED = ['/usr/sbin', '/usr/bin', '/usr/local/bin'];

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/**
 * Where `program` is: its variable (e.g. NATS_SERVER_PATH) when set, else the first executable
 * of that name in /usr/sbin, /usr/bin, /usr/local/bin or PATH.
 * @returns the absolute path of the executable
 * @throws Error naming the Debian package to install (and the variable) when there is none
 */
export function requireProgram(program: HostProgram): string {
  const { env, debianPackage } = HOST_PROGRAMS[program];
  const fromEnv = process.env[env];
  if (fromEnv) {
    if (isExecutable(fromEnv)) return fromEnv;
    throw new Error(`no ${program} at ${env}=${fromEnv}: apt-get install ${debianPackage} (.ci/run does), or point ${env} at it`);
  }
  const dirs = [...SEARCHED, ...(process.env.PATH ?? '').split(path.delimiter).filter(Boolean)];
  const found = dirs.map((dir) => path.join(dir, program)).find(isExecutable);
  if (found) return found;
  throw new Error(`no ${program} in ${SEARCHED.join(', ')} or PATH: apt-get install ${debianPackage} (.ci/run does), or set ${env}`);
}
