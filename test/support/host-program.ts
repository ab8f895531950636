/**
 * The programs from Debian packages that tests run for real: brokers, a browser, linters, an
 * interpreter. .ci/run installs every one of them, and so does `npm test`'s pretest where it can
 * (scripts/test-programs.mjs), so a missing one is a broken machine, never a reason to skip: the
 * test fails with a message naming the package to install. The lookup is shared with the pretest
 * (scripts/lib/host-programs.mjs).
 */
import { findProgram, HOST_PROGRAMS } from '../../scripts/lib/host-programs.mjs';

export { HOST_PROGRAMS };

export type HostProgram = keyof typeof HOST_PROGRAMS;

/**
 * Where `program` is: its variable (e.g. NATS_SERVER_PATH) when set, else the first executable
 * of that name in /usr/sbin, /usr/bin, /usr/local/bin or PATH.
 * @returns the absolute path of the executable
 * @throws Error naming the Debian package to install (and the variable) when there is none
 */
export function requireProgram(program: HostProgram): string {
  const found = findProgram(program);
  if ('problem' in found) throw new Error(found.problem);
  return found.path;
}
