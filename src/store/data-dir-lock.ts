/**
 * One store per DATA_DIR: two processes appending to the same blob segments would corrupt them.
 * The lock is a file `DATA_DIR/store.lock` holding the owner's pid, created exclusively; a lock
 * whose pid no longer runs (the owner was killed) is taken over.
 */
import fs from 'node:fs';
import path from 'node:path';

/** Thrown when another live process holds the data directory. */
export class DataDirLocked extends Error {
  constructor(dataDir: string, pid: number) {
    super(`DATA_DIR ${dataDir} is in use by process ${pid}; one store per data directory`);
    this.name = 'DataDirLocked';
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Takes the lock of `dataDir`.
 * @returns a function releasing it
 * @throws DataDirLocked when a running process holds it
 */
export function lockDataDir(dataDir: string): () => void {
  const file = path.join(dataDir, 'store.lock');
  for (;;) {
    try {
      fs.writeFileSync(file, String(process.pid), { flag: 'wx' });
      return () => fs.rmSync(file, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const owner = Number(fs.readFileSync(file, 'utf8'));
      if (owner === process.pid || (Number.isInteger(owner) && owner > 0 && isRunning(owner))) {
        throw new DataDirLocked(dataDir, owner);
      }
      fs.rmSync(file, { force: true }); // stale: its owner is gone
    }
  }
}
