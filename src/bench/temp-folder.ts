/**
 * Where `edge-events bench` writes: a folder of its own on the file system of the configured
 * DATA_DIR (docs/OPERATIONS.md, "Measuring the box: edge-events bench"), so the figures are the
 * disk the store will use; beside DATA_DIR in its parent folder, or inside DATA_DIR when DATA_DIR
 * is a mount point of its own (its parent is another file system). The configured store's own files
 * are never opened. The folder is removed afterwards, whatever ended the run.
 */
import fs from 'node:fs';
import path from 'node:path';

/** The prefix of the bench's folder name, followed by six random characters (mkdtemp(3)). */
export const BENCH_FOLDER_PREFIX = '.edge-events-bench-';

/**
 * Bytes free to an unprivileged writer on the file system of `dir` (statfs(2): available blocks
 * times the block size), which is what the store's writes may take.
 * @throws the fs error when `dir` cannot be stat'ed
 */
export function freeBytes(dir: string): number {
  const stats = fs.statfsSync(dir);
  return stats.bavail * stats.bsize;
}

/** How often (ms) `watchFreeSpace` reads the free space. */
export const FREE_SPACE_CHECK_MS = 250;

/**
 * Calls `onLow` once with the free bytes when `freeBytes(dir)` falls under `keepFreeBytes`, reading
 * it every FREE_SPACE_CHECK_MS; the store's MAX_STORAGE_BYTES alone let a run use twice its room, as
 * segments wait for their reclaim (docs/OPERATIONS.md, "Measuring the box: edge-events bench").
 * @returns a function that stops the watch
 */
export function watchFreeSpace(dir: string, keepFreeBytes: number, onLow: (free: number) => void): () => void {
  const timer = setInterval(() => {
    const free = freeBytes(dir);
    if (free >= keepFreeBytes) return;
    clearInterval(timer);
    onLow(free);
  }, FREE_SPACE_CHECK_MS);
  timer.unref();
  return () => clearInterval(timer);
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
