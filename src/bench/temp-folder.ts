/**
 * Where `edge-events bench` writes: a folder of its own on the file system of the configured
 * DATA_DIR (docs/OPERATIONS.md, "Measuring the box: edge-events bench"), so the figures are the
 * disk the store will use; beside DATA_DIR in its parent folder, or inside DATA_DIR when DATA_DIR
 * is a mount point of its own (its parent is another file system). The configured store's own files
 * are never opened. The folder is removed afterwards, whatever ended the run.
 */
import fs from 'node:fs';
import path from 'node:path';
import { freeBytes } from '../store/index.js';

/** The prefix of the bench's folder name, followed by six random characters (mkdtemp(3)). */
export const BENCH_FOLDER_PREFIX = '.edge-events-bench-';

/** How often (ms) `watchFreeSpace` reads the free space. */
export const FREE_SPACE_CHECK_MS = 250;

/**
 * Calls `onLow` once with the free bytes when those of the file system of `dir` (the store's
 * `freeBytes`, statfs) fall under `keepFreeBytes`, reading them every FREE_SPACE_CHECK_MS; the
 * store's MAX_STORAGE_BYTES alone let a run use twice its room, as segments wait for their reclaim
 * (docs/OPERATIONS.md, "Measuring the box: edge-events bench"). A read that fails is tried again
 * at the next tick.
 * @param dir a folder that outlives the watch (the bench's folder is removed before it stops)
 * @returns a function that stops the watch
 */
export function watchFreeSpace(dir: string, keepFreeBytes: number, onLow: (free: number) => void): () => void {
  let watching = true;
  const stop = (): void => {
    watching = false;
    clearInterval(timer);
  };
  const timer = setInterval(() => {
    freeBytes(dir).then((free) => {
      if (!watching || free >= keepFreeBytes) return;
      stop();
      onLow(free);
    }, () => undefined);
  }, FREE_SPACE_CHECK_MS);
  timer.unref();
  return stop;
}

/** The bench's folder. */
export interface TempFolder {
  /** Absolute path. */
  dir: string;
  /** Removes it and everything in it; safe to call more than once. */
  remove(): void;
}

/** `dir`, or its nearest ancestor that exists. */
function nearestExisting(dir: string): string {
  let current = dir;
  while (!fs.existsSync(current)) {
    const parent = path.dirname(current);
    if (parent === current) break;
    current = parent;
  }
  return current;
}

/**
 * Where the folder goes for `dataDir`: its parent when on the same file system (st_dev), else
 * inside it; when `dataDir` does not exist yet, its nearest existing ancestor.
 * @throws the fs error when a folder on the way cannot be stat'ed
 */
export function benchFolderParent(dataDir: string): string {
  const existing = nearestExisting(path.resolve(dataDir));
  if (existing !== path.resolve(dataDir)) return existing; // DATA_DIR is not made yet: its nearest ancestor is its file system
  const parent = path.dirname(existing);
  return parent !== existing && fs.statSync(parent).dev === fs.statSync(existing).dev ? parent : existing;
}

/**
 * Makes the bench's folder for `dataDir` (the store's DATA_DIR, as src/config.ts resolves it).
 * @throws Error naming the folder and the fix when it cannot be made (e.g. EACCES: run as the
 *   store's user or root)
 */
export function makeTempFolder(dataDir: string): TempFolder {
  const parent = benchFolderParent(dataDir);
  let dir: string;
  try {
    dir = fs.mkdtempSync(path.join(parent, BENCH_FOLDER_PREFIX));
  } catch (err) {
    throw new Error(`cannot make the bench's folder in ${parent}, on the file system of DATA_DIR ${dataDir}: ${(err as Error).message}; run as a user who may write there (the store's, or root)`, { cause: err });
  }
  return { dir, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}
