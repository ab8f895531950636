/**
 * The files of DATA_DIR/blobs/ (docs/STORAGE.md, "The segment log" and "Recycled segments"):
 * segment files, `seg-NNNNNNNN.blob`, and recycled segment files, `recycled-NNNNNNNN.blob`, which
 * the log overwrites instead of growing a new file, as PostgreSQL's `wal_recycle` does.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { freeBytes } from './disk-reserve.js';
import { firstFrameTag, segmentTag } from './segment-frames.js';

/**
 * Recycled segment files kept at most. A full store frees about one segment for every one the
 * log fills, so two let every roll take one.
 */
export const RECYCLED_SEGMENTS_KEPT = 2;

/**
 * A recycled file is taken this long (ms) after it was kept, no sooner: a read begun before its
 * files were deleted (a slow download) may still hold it open, and must not see new frames.
 */
export const RECYCLED_MIN_AGE_MS = 60 * 1000;

/** `prefix-NNNNNNNN.blob`: the name of file `n` of a kind inside blobs/. */
function numberedName(prefix: 'seg' | 'recycled', n: number): string {
  return `${prefix}-${String(n).padStart(8, '0')}.blob`;
}

/** The `n` of a `numberedName` of `prefix`, or undefined for any other name. */
function numberOfName(prefix: 'seg' | 'recycled', fileName: string): number | undefined {
  const match = /^([a-z]+)-(\d{8})\.blob$/.exec(fileName);
  return match && match[1] === prefix ? Number(match[2]) : undefined;
}

/** File name of segment `n` inside blobs/. */
export function segmentFileName(n: number): string {
  return numberedName('seg', n);
}

/** Segment number of a blobs/ file name, or undefined for any other name. */
export function segmentNumberOf(fileName: string): number | undefined {
  return numberOfName('seg', fileName);
}

/** File name, inside blobs/, of segment `n`'s file kept for recycling. */
export function recycledFileName(n: number): string {
  return numberedName('recycled', n);
}

/** The former segment number of a recycled file's name, or undefined for any other name. */
export function recycledNumberOf(fileName: string): number | undefined {
  return numberOfName('recycled', fileName);
}

/** The former segment numbers of the recycled files in `blobsDir`, ascending. */
export async function recycledSegments(blobsDir: string): Promise<number[]> {
  return (await fsp.readdir(blobsDir)).map(recycledNumberOf).filter((n): n is number => n !== undefined).sort((a, b) => a - b);
}

/** A file is kept only while the disk has this many times its size free. */
const RECYCLE_MIN_FREE_FACTOR = 4;

/**
 * Removes the file of segment `segment`, whose entry is gone, or keeps it as a recycled file
 * for the log to overwrite (docs/STORAGE.md, "Recycled segments"). It is kept when fewer than
 * RECYCLED_SEGMENTS_KEPT are; when it is at least `minBytes` long (a segment that rolled: on a
 * disk too small to fill one, every byte goes back); when the disk has RECYCLE_MIN_FREE_FACTOR
 * times its size free (a disk near full gets it back); and when its first frame carries the
 * segment's own tag (so every frame in it does: not an upload, nor a segment begun before tags).
 * @param minBytes the shortest file kept (bytes): SEGMENT_ROLL_BYTES
 * @param free reads the free bytes of the disk holding blobs/ (a parameter for tests)
 * @returns whether the file was kept
 * @throws the fs error of a failed read, statfs, rename or removal
 */
export async function recycleOrRemove(blobsDir: string, segment: number, minBytes: number, free = freeBytes): Promise<boolean> {
  const file = path.join(blobsDir, segmentFileName(segment));
  const handle = await fsp.open(file, 'r').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });
  if (!handle) return false;
  let recyclable: boolean;
  try {
    const { size } = await handle.stat();
    recyclable = segmentTag(segment) !== 0 && size >= minBytes && (await free(blobsDir)) >= RECYCLE_MIN_FREE_FACTOR * size
      && (await firstFrameTag(handle)) === segmentTag(segment);
  } finally {
    await handle.close();
  }
  if (recyclable && (await recycledSegments(blobsDir)).length < RECYCLED_SEGMENTS_KEPT) {
    const recycled = path.join(blobsDir, recycledFileName(segment));
    await fsp.rename(file, recycled);
    const now = new Date();
    await fsp.utimes(recycled, now, now); // when it was kept (RECYCLED_MIN_AGE_MS)
    return true;
  }
  await fsp.rm(file, { force: true });
  return false;
}

/**
 * Gives the recycled files back to the disk while it has less than RECYCLE_MIN_FREE_FACTOR times
 * one's size free: the rule that kept them, applied again before each cleanup, for a disk that
 * filled after they were kept (docs/STORAGE.md, "Recycled segments").
 * @param free reads the free bytes of the disk holding blobs/ (a parameter for tests)
 * @returns how many were removed
 * @throws the fs error of a failed listing, statfs or removal
 */
export async function releaseRecycledIfLow(blobsDir: string, free = freeBytes): Promise<number> {
  let removed = 0;
  for (const former of await recycledSegments(blobsDir)) {
    const file = path.join(blobsDir, recycledFileName(former));
    const size = (await fsp.stat(file).catch(() => undefined))?.size;
    if (size === undefined || (await free(blobsDir)) >= RECYCLE_MIN_FREE_FACTOR * size) continue;
    await fsp.rm(file, { force: true });
    removed++;
  }
  return removed;
}

/**
 * Makes the oldest recycled file kept at least RECYCLED_MIN_AGE_MS segment `segment`'s file, when
 * there is one: renamed, with its modification time set to now (the consistency pass spares a
 * young file no entry knows yet). Its former frames stay past the log's end, where a scan stops
 * at their tag. One whose tag is the new segment's (16,777,216 segments before it) is removed
 * instead. A file removed meanwhile is passed over. The caller syncs the directory before
 * appending.
 * @returns whether a recycled file became the segment's
 * @throws the fs error of a failed listing, stat, rename or removal, but ENOENT
 */
export async function takeRecycledSegment(blobsDir: string, segment: number): Promise<boolean> {
  for (const former of await recycledSegments(blobsDir)) {
    const file = path.join(blobsDir, recycledFileName(former));
    if (segmentTag(former) === segmentTag(segment)) {
      await fsp.rm(file, { force: true });
      continue;
    }
    const now = new Date();
    try {
      if (now.getTime() - (await fsp.stat(file)).mtimeMs < RECYCLED_MIN_AGE_MS) continue;
      await fsp.utimes(file, now, now);
      await fsp.rename(file, path.join(blobsDir, segmentFileName(segment)));
      return true;
    } catch (err) {
      // The lifecycle worker gave it back to the disk meanwhile (`releaseRecycledIfLow`).
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  return false;
}

/** fsyncs a directory so a created or renamed file in it survives a crash. */
export async function syncDirectory(dir: string): Promise<void> {
  const handle = await fsp.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Ensures DATA_DIR/blobs and DATA_DIR/staging exist; returns their paths. */
export function ensureBlobDirs(dataDir: string): { blobsDir: string; stagingDir: string } {
  const blobsDir = path.join(dataDir, 'blobs');
  const stagingDir = path.join(dataDir, 'staging');
  fs.mkdirSync(blobsDir, { recursive: true });
  fs.mkdirSync(stagingDir, { recursive: true });
  return { blobsDir, stagingDir };
}
