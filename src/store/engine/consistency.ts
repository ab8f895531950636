/**
 * The consistency pass (docs/OPERATIONS.md, "Keeping the disk bounded"), run by the lifecycle
 * worker in every cleanup (src/lifecycle/cleanup.ts), here beside the log whose layout it checks: abandoned staging files removed, files in blobs/ that no segment entry
 * references removed (`orphaned_disk_files_removed`) unless they hold records of events
 * (unknown-segments.ts: kept and named), and file entries whose bytes are missing,
 * short or fail their CRC removed with their event's `current_file_count` lowered
 * (`dangling_db_records_removed`). Tails beyond the committed length are truncated at start-up only
 * (recovery.ts), since the HTTP thread may be appending.
 *
 * CRC verification is a scrub with a byte budget per pass, resuming where the last pass
 * stopped, so a pass stays cheap on a large store.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { recycledNumberOf, segmentFileName, segmentNumberOf } from '../log/segment-files.js';
import { checksum } from '../log/segment-frames.js';
import { deleteFiles, type FileRef } from './event-deletion.js';
import { mendFileEntries } from './file-entry-mend.js';
import { fileEntries, hasSegment, saveScrubCursor, scrubCursor, segmentEntries } from './cleanup-queries.js';
import type { FileEntry } from '../log/log-entries.js';
import { storeHandles, type StoreView } from '../read/store-view.js';
import { isGarbageSegment } from './unknown-segments.js';

/** A staging file untouched this long (ms) belongs to no upload under way. */
const ABANDONED_STAGING_MS = 15 * 60 * 1000;
/** A blobs/ file younger than this (ms) may be an upload renamed but not yet committed. */
const ORPHAN_GRACE_MS = 60 * 1000;
/** Bytes of blob data whose CRC one pass verifies. */
export const SCRUB_BYTES_PER_PASS = 64 * 1024 * 1024;
/** Bytes of one positioned read of the scrub, into one buffer reused for the whole pass. */
const SCRUB_READ_BYTES = 1024 * 1024;

export interface ConsistencyReport {
  danglingDbRecordsRemoved: number;
  orphanedDiskFilesRemoved: number;
  /**
   * Segment files no segment entry knows that hold records of events, kept (unknown-segments.ts):
   * the index lost their entries, and `edge-events check --repair` gives their events back.
   */
  unknownSegmentsKept: number[];
  stagingFilesRemoved: number;
  /**
   * Files whose entry in the index was damaged, their bytes whole in the log: the entry was
   * written again from the blob frame's header (file-entry-mend.ts).
   */
  fileEntriesMended: string[];
}

async function removeAbandonedStaging(store: StoreView, now: number): Promise<number> {
  let removed = 0;
  for (const name of await fsp.readdir(store.stagingDir)) {
    const file = path.join(store.stagingDir, name);
    const stat = await fsp.stat(file).catch(() => undefined);
    if (stat && now - stat.mtimeMs > ABANDONED_STAGING_MS) {
      await fsp.rm(file, { force: true });
      removed++;
    }
  }
  return removed;
}

/**
 * Removes the files of blobs/ no segment entry knows, older than ORPHAN_GRACE_MS, that are
 * garbage (unknown-segments.ts); keeps, and names, those holding records of events.
 */
async function removeOrphanedSegments(store: StoreView, now: number): Promise<{ removed: number; kept: number[] }> {
  const { blobsDir, dbs } = store[storeHandles];
  let removed = 0;
  const kept: number[] = [];
  for (const name of await fsp.readdir(blobsDir)) {
    const segment = segmentNumberOf(name);
    if ((segment !== undefined && hasSegment(store, segment)) || recycledNumberOf(name) !== undefined) continue;
    const file = path.join(blobsDir, name);
    const stat = await fsp.stat(file).catch(() => undefined);
    if (!stat || now - stat.mtimeMs <= ORPHAN_GRACE_MS) continue;
    if (segment !== undefined && !(await isGarbageSegment(dbs, blobsDir, segment))) {
      kept.push(segment);
      continue;
    }
    await fsp.rm(file, { force: true, recursive: true });
    removed++;
  }
  return { removed, kept };
}

/**
 * File entries whose bytes their segment's file no longer holds: the file is missing, or cut short
 * before the entry's end. The entries of a cut segment before the cut keep their files (a cut
 * costs what it cut, not the segment: docs/STORAGE.md, "Damage in the log").
 */
function filesOfBrokenSegments(store: StoreView): FileRef[] {
  /** Bytes left in each segment file shorter than committed (0: missing). */
  const shortened = new Map<number, number>();
  for (const { segment, entry } of segmentEntries(store)) {
    const size = fs.statSync(path.join(store[storeHandles].blobsDir, segmentFileName(segment)), { throwIfNoEntry: false })?.size ?? 0;
    if (size < entry.committed) shortened.set(segment, size);
  }
  if (shortened.size === 0) return [];
  const refs: FileRef[] = [];
  for (const { fileId, entry } of fileEntries(store)) {
    const size = shortened.get(entry.segment);
    if (size !== undefined && entry.offset + entry.length > size) refs.push({ createdAt: entry.event, fileId });
  }
  return refs;
}

async function crcMatches(store: StoreView, file: FileEntry, buffer: Buffer): Promise<boolean> {
  let crc = 0;
  for (let done = 0; done < file.length;) {
    const length = Math.min(buffer.length, file.length - done);
    const read = await store[storeHandles].blobs.read(file.segment, file.offset + done, buffer, length).catch(() => 0);
    if (read !== length) return false;
    crc = checksum(buffer.subarray(0, length), crc);
    done += length;
  }
  return crc === file.crc;
}

/**
 * Verifies CRCs of up to SCRUB_BYTES_PER_PASS bytes of files, from the saved cursor on; an entry
 * that fails is mended from its blob frame when that is whole (file-entry-mend.ts).
 * @returns the files whose bytes are damaged, and the ids of the entries mended
 */
async function scrub(store: StoreView): Promise<{ damaged: FileRef[]; mended: string[] }> {
  const buffer = Buffer.allocUnsafe(SCRUB_READ_BYTES);
  const failed: FileRef[] = [];
  let budget = SCRUB_BYTES_PER_PASS;
  let cursor = '';
  for (const { fileId, entry } of fileEntries(store, scrubCursor(store))) {
    if (budget <= 0) {
      cursor = fileId;
      break;
    }
    budget -= entry.length;
    if (!(await crcMatches(store, entry, buffer)) && store.getFile(fileId)) failed.push({ createdAt: entry.event, fileId });
  }
  await saveScrubCursor(store, cursor);
  const mended = failed.length > 0 ? await mendFileEntries(store, failed.map((ref) => ref.fileId)) : new Set<string>();
  return { damaged: failed.filter((ref) => !mended.has(ref.fileId)), mended: [...mended] };
}

/**
 * Runs the consistency pass while the store serves (start-up recovery, with the HTTP thread
 * not yet serving, is recovery.ts).
 * @param now the time (ms since the epoch), for the ages of staging and orphan files
 * @param removeOrphans remove segment files LMDB does not know (false when the writer's index
 *   head may hold a segment LMDB does not know yet: docs/STORAGE.md, "The head")
 */
export async function checkConsistency(store: StoreView, now = Date.now(), removeOrphans = true): Promise<ConsistencyReport> {
  const stagingFilesRemoved = await removeAbandonedStaging(store, now);
  const orphans = removeOrphans ? await removeOrphanedSegments(store, now) : { removed: 0, kept: [] };
  const scrubbed = await scrub(store);
  const dangling = [...filesOfBrokenSegments(store), ...scrubbed.damaged];
  const removed = dangling.length > 0 ? await deleteFiles(store, dangling) : { files: 0 };
  return {
    danglingDbRecordsRemoved: removed.files, orphanedDiskFilesRemoved: orphans.removed, unknownSegmentsKept: orphans.kept, stagingFilesRemoved,
    fileEntriesMended: scrubbed.mended,
  };
}
