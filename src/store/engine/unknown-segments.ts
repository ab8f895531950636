/**
 * Segment files of blobs/ the index has no entry for (docs/STORAGE.md, "Segment files the index
 * does not know"). Most are garbage: a segment a reclaim removed from the index whose file the
 * store did not get to unlink before a crash, a staged upload never attached, a segment rolled
 * to and never written. But one that holds records of events is the log itself, and the index
 * not knowing it means the index lost a page (a write the card dropped, a page that reads back
 * older content): removing it would delete the only copy the rebuild needs.
 *
 * So a file the index does not know is removed only when the last reclaim named it, or when it
 * holds no record, update, record-copy or tombstone frame; any other is kept, and the open
 * refuses, naming `edge-events check --repair`.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { StoreDatabases } from '../index/lmdb-env.js';
import { segmentFileName } from '../log/segment-files.js';
import { isDataFrame, scanSegment } from '../log/segment-frames.js';

/**
 * Where `meta` keeps the segments the last reclaim removed from the index (event-deletion.ts
 * `reclaimSegments`), whose files it unlinks after the commit: a file left by a crash between the
 * two is one of them.
 */
export const RECLAIMED_SEGMENTS_KEY = 'reclaimedSegments';

/**
 * Records, inside the reclaim's transaction, the segments it removes from the index (replacing
 * the previous reclaim's, whose files were unlinked or were removed at the next start).
 */
export function noteReclaimedSegments(dbs: StoreDatabases, segments: number[]): void {
  dbs.meta.putSync(RECLAIMED_SEGMENTS_KEY, segments);
}

/**
 * Whether segment `segment`'s file holds a frame of an event's record (a create, an update, a
 * record copy or a tombstone), anywhere: a scan of its frame headers past any damage, reading the
 * data of those frames only (segment-frames.ts `scanSegment`); false for what is not a file.
 * @throws the fs error of a failed open or read
 */
export async function holdsEventFrames(blobsDir: string, segment: number): Promise<boolean> {
  const file = path.join(blobsDir, segmentFileName(segment));
  if (!(await fsp.stat(file)).isFile()) return false; // a folder in a segment's place holds no frame
  const handle = await fsp.open(file, 'r');
  try {
    for await (const found of scanSegment(handle, 0, segment)) {
      const kind = found.kind === 'damaged' ? found.frame?.kind : found.kind;
      if (kind !== undefined && isDataFrame(kind)) return true;
    }
    return false;
  } finally {
    await handle.close();
  }
}

/**
 * Whether the unknown segment file `segment` may be removed: the last reclaim named it, or it
 * holds no frame of an event's record (`holdsEventFrames`).
 * @throws the fs error of a failed read
 */
export async function isGarbageSegment(dbs: StoreDatabases, blobsDir: string, segment: number): Promise<boolean> {
  const reclaimed = dbs.meta.get(RECLAIMED_SEGMENTS_KEY) as number[] | undefined;
  return (reclaimed?.includes(segment) ?? false) || !(await holdsEventFrames(blobsDir, segment));
}

/** What the open says of a segment file the index does not know that holds events' records (IndexDamaged's problem). */
export function unknownSegmentProblem(segment: number): string {
  return `has no entry for ${path.join('blobs', segmentFileName(segment))}, which holds records of events `
    + '(a page of the index lost, or read back older than the log), so the open would remove part of the log as a file it does not know';
}
