/**
 * A wall clock a test sets for a real store process: Debian's libfaketime (package `faketime`,
 * which .ci/run installs), preloaded into the process, reads the clock's offset from a file at
 * every reading (`FAKETIME_TIMESTAMP_FILE` with `FAKETIME_NO_CACHE=1`, libfaketime's README,
 * "Changing the 'faked' time during run-time"), so the test jumps the clock while the store runs.
 * The monotonic clock stays true (`FAKETIME_DONT_FAKE_MONOTONIC=1`), as NTP leaves it. A missing
 * library fails the test with the package to install, never skips it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { findLibfaketime } from '../../scripts/lib/host-programs.mjs';
import { tempDataDir } from './store-server.js';

/**
 * The path of libfaketime: LIBFAKETIME_PATH, else Debian's multiarch places
 * (scripts/lib/host-programs.mjs, which `npm test`'s pretest shares).
 * @throws Error naming the Debian package to install when it is absent
 */
export function libfaketime(): string {
  const found = findLibfaketime();
  if ('problem' in found) throw new Error(found.problem);
  return found.path;
}

/** A wall clock for store processes, off the true time by what `set` last wrote. */
export class FakeClock {
  private readonly file = path.join(tempDataDir(), 'faketime');

  /** @param offset libfaketime's relative form: `+365d`, `-30d`, `+0` (the true time) */
  constructor(offset: string) {
    this.set(offset);
  }

  /** Moves the clock of every process started with `env()`, from its next reading on. */
  set(offset: string): void {
    fs.writeFileSync(`${this.file}.tmp`, `${offset}\n`);
    fs.renameSync(`${this.file}.tmp`, this.file); // a reader never sees the file half written
  }

  /** The environment that puts a process on this clock. */
  env(): Record<string, string> {
    return {
      LD_PRELOAD: libfaketime(),
      FAKETIME_TIMESTAMP_FILE: this.file,
      FAKETIME_NO_CACHE: '1',
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
    };
  }
}
