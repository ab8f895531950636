/**
 * One store per DATA_DIR: two processes appending to the same segments would corrupt them
 * (docs/STORAGE.md, "One store per folder"). The lock is the kernel's: an exclusive open file
 * description lock (fcntl(2) `F_OFD_SETLK`, whole file, through fs-native-extensions' `tryLock`)
 * on `DATA_DIR/store.lock`, held by a descriptor this process keeps open while the store is open.
 *
 * The kernel alone decides who holds it, on the file's inode: it releases the lock when the
 * descriptor is closed, at a close and at the process's exit however it ends (kill -9, a crash;
 * a zombie has closed its files), and it sees one lock whatever pid namespace each process runs
 * in (two containers sharing a volume). Taking it is one call, so of any number of processes
 * starting at once exactly one gets it.
 *
 * The file is never removed (a file made anew while the old one is locked would be a second,
 * free lock) and only the holder writes it: its pid, boot id, process start time, host name and
 * start date, which a refused process reads for its message and nothing else decides by.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { currentUser, DataDirUnusable } from './data-dir-check.js';

const require = createRequire(import.meta.url);

/** The lock file's name in DATA_DIR. */
export const LOCK_FILE = 'store.lock';

/** What the holder writes into the lock file: information for a refusal's message, never a decision. */
export interface LockHolder {
  /** Its pid, as its own pid namespace numbers it (`1` in a container). */
  pid: number;
  /** The kernel's boot id when it took the lock. */
  bootId?: string;
  /** Its start time in clock ticks since boot (/proc/<pid>/stat). */
  startTime?: string;
  /** The host name it runs on (a container's own). */
  host?: string;
  /** When it took the lock (ISO 8601). */
  since?: string;
}

/** How a holder is named in a message: `pid 1, host edge-1, since 2026-12-03T10:00:00.000Z`. */
function describeHolder(holder: LockHolder | undefined): string {
  if (!holder) return 'which has not named itself in the lock file yet';
  return [`pid ${holder.pid}`, holder.host && `host ${holder.host}`, holder.since && `since ${holder.since}`].filter(Boolean).join(', ');
}

/** Thrown when another store holds the data directory's lock. */
export class DataDirLocked extends Error {
  constructor(dataDir: string, readonly holder: LockHolder | undefined) {
    super(`DATA_DIR ${dataDir} is in use by another store (${describeHolder(holder)}); one store per data directory`);
    this.name = 'DataDirLocked';
  }
}

/** fs-native-extensions' lock call (its index.js; it ships no types). */
type TryLock = (fd: number, offset?: number, length?: number, options?: { shared?: boolean }) => boolean;

let tryLockCall: TryLock | undefined;

/** fs-native-extensions' `tryLock`, loaded at the first lock. @throws DataDirUnusable when its binary does not load here */
function tryLock(dataDir: string): TryLock {
  try {
    tryLockCall ??= (require('fs-native-extensions') as { tryLock: TryLock }).tryLock;
    return tryLockCall;
  } catch (err) {
    throw new DataDirUnusable(`DATA_DIR ${dataDir} cannot be locked on this machine: fs-native-extensions, which takes the lock that keeps a second store off the folder, `
      + `has no binary that loads on ${process.platform}-${process.arch} (it ships Linux x64 and arm64 for glibc): ${(err as Error).message.split('\n')[0]}`, { cause: err });
  }
}

function readOrEmpty(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch {
    return '';
  }
}

/** This process's start time in clock ticks since boot ('' where /proc does not say). */
function startTime(): string {
  const stat = readOrEmpty('/proc/self/stat');
  return stat === '' ? '' : stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? '';
}

/** The holder the lock file names; undefined when it names none (being written, or not a store's). */
function readHolder(file: string): LockHolder | undefined {
  try {
    const holder = JSON.parse(readOrEmpty(file)) as LockHolder;
    return Number.isInteger(holder.pid) ? holder : undefined;
  } catch {
    return undefined;
  }
}

/** Names this process in the locked file. Information only: a failure (a full disk) is ignored. */
function writeHolder(fd: number): void {
  const me: LockHolder = { pid: process.pid, bootId: readOrEmpty('/proc/sys/kernel/random/boot_id'), startTime: startTime(), host: os.hostname(), since: new Date().toISOString() };
  try {
    fs.ftruncateSync(fd, 0);
    fs.writeSync(fd, `${JSON.stringify(me)}\n`, 0);
  } catch {
    // the lock is held all the same
  }
}

/** Opens (creating) the lock file for writing, which an exclusive fcntl lock needs. @throws DataDirUnusable when this user may not */
function openLockFile(dataDir: string, file: string): number {
  try {
    return fs.openSync(file, fs.constants.O_RDWR | fs.constants.O_CREAT, 0o644);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EACCES' || code === 'EPERM') {
      throw new DataDirUnusable(`DATA_DIR ${dataDir}: its lock file ${LOCK_FILE} is not writable by ${currentUser()}; give that user the file (chown), as the folder is`, { cause: err });
    }
    throw err;
  }
}

/** Run as root in a folder another user owns, the lock file is given to that user, so that the store running as that user opens it. */
function giveToFolderOwner(fd: number, dataDir: string): void {
  if (process.getuid?.() !== 0) return;
  const folder = fs.statSync(dataDir);
  const file = fs.fstatSync(fd);
  if (file.uid !== folder.uid || file.gid !== folder.gid) fs.fchownSync(fd, folder.uid, folder.gid);
}

/** The folders whose lock a command of this process holds across its steps (`holdDataDir`). */
const heldByCommand = new Set<string>();

/**
 * Takes the lock of `dataDir`, an existing folder, before anything else in it is touched. Never
 * waits, never removes the file, and writes it only once it holds the lock.
 * @returns a function releasing it (closing the descriptor; the file stays)
 * @throws DataDirLocked naming the holder when another process, or another open of this one,
 *   holds it
 * @throws DataDirUnusable when the lock file cannot be opened for writing, or the lock cannot be
 *   taken on this machine at all
 */
export function lockDataDir(dataDir: string): () => void {
  if (heldByCommand.has(path.resolve(dataDir))) return () => {};
  const take = tryLock(dataDir);
  const file = path.join(dataDir, LOCK_FILE);
  const fd = openLockFile(dataDir, file);
  let locked = false;
  try {
    locked = take(fd);
    if (!locked) throw new DataDirLocked(dataDir, readHolder(file));
    giveToFolderOwner(fd, dataDir);
  } catch (err) {
    fs.closeSync(fd); // a refused process leaves the file and the holder's lock as they are
    throw err;
  }
  writeHolder(fd);
  let open = true;
  return () => {
    if (open) fs.closeSync(fd);
    open = false;
  };
}

/**
 * Runs `work` holding `dataDir`'s lock throughout, taken with `lock` (lockDataDir, or a caller's
 * wrapping of it), and lets the lockDataDir calls of `work`'s own steps through, so that no
 * store starts between them: `edge-events check --repair` checks, rebuilds, opens the store and
 * checks again under one lock. A hold inside a hold of the same folder is the outer one's.
 * @throws what `lock` throws
 */
export async function holdDataDir<T>(dataDir: string, lock: (dataDir: string) => () => void, work: () => Promise<T>): Promise<T> {
  const key = path.resolve(dataDir);
  if (heldByCommand.has(key)) return work();
  const unlock = lock(dataDir);
  heldByCommand.add(key);
  try {
    return await work();
  } finally {
    heldByCommand.delete(key);
    unlock();
  }
}
