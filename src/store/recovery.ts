/**
 * Start-up recovery (DESIGN.md, "Recovery"): staging emptied, segment tails beyond the last
 * committed blob truncated, and files in blobs/ that no segment entry references removed.
 * Cheap with a million events stored: it walks segments, never records.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { SEGMENT_ROLL_BYTES, segmentFileName, segmentNumberOf } from './blob-log.js';
import type { StoreDatabases } from './lmdb-env.js';

export interface RecoveryResult {
  /** Highest segment number seen in LMDB or on disk (0 when none). */
  lastSegment: number;
  /** The segment to keep appending to, when the newest one has room. */
  activeSegment: { segment: number; committed: number } | undefined;
  /** created_at (µs) of the newest record, 0 when empty. */
  lastCreatedAt: number;
  stagingFilesRemoved: number;
  tailsTruncated: number;
  orphanedDiskFilesRemoved: number;
}

/**
 * Brings DATA_DIR's files in line with LMDB's committed state.
 * @throws the fs error when blobs/ or staging/ cannot be read
 */
export async function recoverStore(dbs: StoreDatabases, blobsDir: string, stagingDir: string): Promise<RecoveryResult> {
  const stagingFiles = await fsp.readdir(stagingDir);
  await Promise.all(stagingFiles.map((f) => fsp.rm(path.join(stagingDir, f), { force: true, recursive: true })));

  let lastSegment = 0;
  let tailsTruncated = 0;
  let newest: { segment: number; committed: number; sealed: boolean } | undefined;
  const known = new Set<number>();
  for (const { key, value } of dbs.segments.getRange()) {
    known.add(key);
    lastSegment = Math.max(lastSegment, key);
    newest = { segment: key, committed: value.committed, sealed: Boolean(value.sealed) };
    const file = path.join(blobsDir, segmentFileName(key));
    const size = fs.statSync(file, { throwIfNoEntry: false })?.size;
    if (size !== undefined && size > value.committed) {
      await fsp.truncate(file, value.committed);
      tailsTruncated++;
    }
  }

  let orphanedDiskFilesRemoved = 0;
  for (const name of await fsp.readdir(blobsDir)) {
    const segment = segmentNumberOf(name);
    if (segment !== undefined) lastSegment = Math.max(lastSegment, segment);
    if (segment === undefined || !known.has(segment)) {
      await fsp.rm(path.join(blobsDir, name), { force: true, recursive: true });
      orphanedDiskFilesRemoved++;
    }
  }

  const activeSegment = newest && !newest.sealed && newest.committed < SEGMENT_ROLL_BYTES
    && fs.existsSync(path.join(blobsDir, segmentFileName(newest.segment)))
    ? { segment: newest.segment, committed: newest.committed }
    : undefined;
  const [lastKey] = dbs.events.getKeys({ reverse: true, limit: 1 });
  return {
    lastSegment,
    activeSegment,
    lastCreatedAt: lastKey ?? 0,
    stagingFilesRemoved: stagingFiles.length,
    tailsTruncated,
    orphanedDiskFilesRemoved,
  };
}
