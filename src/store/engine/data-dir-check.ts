/**
 * Checks DATA_DIR before the store opens, so a start-up failure names its cause (a read-only
 * disk, a folder the store's user may not write, a file where a folder should be, a symbolic
 * link where the store deletes) instead of the errno of whichever mkdir happened to fail first
 * (docs/OPERATIONS.md, "Start-up errors").
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

/**
 * The folders of DATA_DIR whose content the store deletes or replaces by itself, and why: each
 * must be a folder of DATA_DIR's own, never a symbolic link, which would have the store delete
 * in the folder it points to, outside DATA_DIR.
 */
const OWN_PLACES = {
  blobs: 'the store deletes the files of blobs/ that no segment of the log names, and the segments cleanup frees',
  staging: 'the store empties staging/ at every start',
  quarantine: 'the store keeps the damaged bytes of the log in quarantine/, replacing an entry found again',
} as const;

/**
 * Makes sure each of DATA_DIR's own places (blobs/, staging/, quarantine/), where it exists, is
 * a folder and not a symbolic link: start-up deletes in them.
 * @throws DataDirUnusable naming the place, what the store does there and the fix
 */
export function checkOwnPlaces(dataDir: string): void {
  for (const [name, why] of Object.entries(OWN_PLACES)) {
    const place = path.join(dataDir, name);
    const stat = fs.lstatSync(place, { throwIfNoEntry: false });
    if (!stat || stat.isDirectory()) continue;
    if (stat.isSymbolicLink()) {
      throw new DataDirUnusable(`DATA_DIR ${dataDir}: ${name} is a symbolic link (to ${fs.readlinkSync(place)}), and ${why}: `
        + `replace the link with a folder (rm ${place} && mkdir ${place}), or set DATA_DIR to a folder on the disk it points to`);
    }
    throw new DataDirUnusable(`DATA_DIR ${dataDir}: ${name} is a file, not a folder, and ${why}: move the file away (mv ${place} ${place}.moved) and start again`);
  }
}

/**
 * The start-up error for a failed write of a quarantine entry (quarantine.ts `quarantine`): a
 * folder in the place of the entry's file names the folder and the fix; another error is returned
 * as it is.
 */
export function explainQuarantineFailure(err: unknown): unknown {
  const failed = err as NodeJS.ErrnoException;
  if (failed.code !== 'EISDIR' || !failed.path) return err;
  return new DataDirUnusable(`${failed.path} is a folder where the store writes a quarantine entry (the damaged bytes of the log it went past, `
    + `docs/STORAGE.md, "Damage in the log"): move the folder out of quarantine/ (mv ${failed.path} ${path.dirname(path.dirname(failed.path))}/) and start again`, { cause: err });
}
