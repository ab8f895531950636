/**
 * Checks DATA_DIR before the store opens, so a start-up failure names its cause (a read-only
 * disk, a folder the store's user may not write, a file where a folder should be) instead of
 * the errno of whichever mkdir happened to fail first (docs/OPERATIONS.md, "Start-up errors").
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** DATA_DIR cannot hold the store; the message names the cause and a fix. */
export class DataDirUnusable extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'DataDirUnusable';
  }
}

/** Who the process runs as, for messages: `nobody (uid 65534)`. */
export function currentUser(): string {
  const uid = process.getuid?.();
  let name: string | undefined;
  try {
    name = os.userInfo().username;
  } catch {
    name = undefined; // a uid with no passwd entry
  }
  return uid === undefined ? (name ?? 'this user') : `${name ?? 'uid'} (uid ${uid})`;
}

/** The closest existing folder at or above `dir`. */
function nearestExisting(dir: string): string {
  let at = path.resolve(dir);
  while (!fs.existsSync(at) && path.dirname(at) !== at) at = path.dirname(at);
  return at;
}

/** Why `dir` cannot be written, from access(2)'s errno; undefined when it can. */
function whyNotWritable(dir: string): NodeJS.ErrnoException | undefined {
  try {
    fs.accessSync(dir, fs.constants.W_OK | fs.constants.X_OK);
    return undefined;
  } catch (err) {
    return err as NodeJS.ErrnoException;
  }
}

/** The message for errno `err` met on `dir` (the data dir, or the folder it would be made in). */
function explain(dataDir: string, dir: string, err: NodeJS.ErrnoException): DataDirUnusable {
  const where = dir === dataDir ? `DATA_DIR ${dataDir}` : `DATA_DIR ${dataDir} cannot be created: ${dir}`;
  switch (err.code) {
    case 'EROFS':
      return new DataDirUnusable(`${where} is on a read-only file system; set DATA_DIR to a folder on a writable disk, or remount it read-write`, { cause: err });
    case 'EACCES':
    case 'EPERM':
      return new DataDirUnusable(`${where} is not writable by ${currentUser()}; give that user the folder (chown), or set DATA_DIR to a folder it owns`, { cause: err });
    case 'ENOTDIR':
      return new DataDirUnusable(`${where}: a part of the path is a file, not a folder; set DATA_DIR to a folder`, { cause: err });
    case 'ENOSPC':
      return new DataDirUnusable(`${where}: the disk is full; free space, or set DATA_DIR to another disk`, { cause: err });
    default:
      return new DataDirUnusable(`${where}: ${err.message}`, { cause: err });
  }
}

/**
 * Makes sure `dataDir` is a folder this process can write, creating it (and its parents) when
 * missing.
 * @throws DataDirUnusable naming the cause: a read-only file system, a permission, a file in the
 *   way, a full disk
 */
export function prepareDataDir(dataDir: string): void {
  const stat = fs.statSync(dataDir, { throwIfNoEntry: false });
  if (stat && !stat.isDirectory()) throw new DataDirUnusable(`DATA_DIR ${dataDir} is a file, not a folder; set DATA_DIR to a folder (it is created when missing)`);
  if (!stat) {
    try {
      fs.mkdirSync(dataDir, { recursive: true });
    } catch (err) {
      // A recursive mkdir reports ENOENT on a read-only file system: ask the folder it would be
      // made in for the real cause.
      const parent = nearestExisting(dataDir);
      throw explain(dataDir, parent, whyNotWritable(parent) ?? (err as NodeJS.ErrnoException));
    }
  }
  const denied = whyNotWritable(dataDir);
  if (denied) throw explain(dataDir, dataDir, denied);
}
