/**
 * One store per DATA_DIR: two processes appending to the same blob segments would corrupt them.
 * The lock is a file `DATA_DIR/store.lock`, created exclusively, naming its owner by pid, boot id
 * and the process's start time (Linux /proc). A lock whose owner is gone is taken over: after a
 * crash, and after a power cut, when the pid may since belong to another process (a new boot
 * id, or another start time, tells).
 */
import fs from 'node:fs';
import path from 'node:path';

/** Thrown when another live store holds the data directory. */
export class DataDirLocked extends Error {
  constructor(dataDir: string, pid: number) {
    super(`DATA_DIR ${dataDir} is in use by process ${pid}; one store per data directory`);
    this.name = 'DataDirLocked';
  }
}

interface Owner {
  pid: number;
  bootId: string;
  startTime: string;
}

function readOrEmpty(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch {
    return '';
  }
}

/** The start time of process `pid` in clock ticks since boot ('' when it is not running). */
function startTimeOf(pid: number): string {
  const stat = readOrEmpty(`/proc/${pid}/stat`);
  return stat === '' ? '' : stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? '';
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const bootId = (): string => readOrEmpty('/proc/sys/kernel/random/boot_id');

/** True when the owner named by a lock file is a live process: the very one that wrote it. */
function ownerAlive(text: string): Owner | undefined {
  let owner: Owner;
  try {
    owner = JSON.parse(text) as Owner;
  } catch {
    return undefined; // not written by a store: nothing to honour
  }
  if (!Number.isInteger(owner.pid) || owner.pid <= 0 || !isRunning(owner.pid)) return undefined;
  if (owner.bootId !== bootId() || owner.startTime !== startTimeOf(owner.pid)) return undefined;
  return owner;
}

/**
 * Takes the lock of `dataDir`.
 * @returns a function releasing it
 * @throws DataDirLocked when a live store holds it
 */
export function lockDataDir(dataDir: string): () => void {
  const file = path.join(dataDir, 'store.lock');
  const me: Owner = { pid: process.pid, bootId: bootId(), startTime: startTimeOf(process.pid) };
  for (;;) {
    try {
      fs.writeFileSync(file, JSON.stringify(me), { flag: 'wx' });
      return () => fs.rmSync(file, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const owner = ownerAlive(readOrEmpty(file));
      if (owner) throw new DataDirLocked(dataDir, owner.pid);
      fs.rmSync(file, { force: true }); // stale: its owner is gone
    }
  }
}
