/**
 * What the index keeps about the log (docs/STORAGE.md, "The index"): where each file's bytes are
 * and what it is (the `files` database), and each segment's accounting (`segments`). Plain
 * shapes: the log's modules name them without knowing LMDB.
 */

/** Kind of a stored file; the download routes check it (docs/API.md, "Drafts and attachments", rule 5). */
export type FileKind = 'image' | 'video' | 'local_only';

/** Where a blob's bytes live and what it is. Offsets and lengths in bytes. */
export interface FileEntry {
  segment: number;
  /** Offset of the first data byte (after the frame header). */
  offset: number;
  length: number;
  kind: FileKind;
  contentType: string;
  /** created_at (µs) of the owning event: the key of its record. */
  event: number;
  crc: number;
}

/**
 * Accounting of one segment file; `committed` is its length covered by LMDB commits. Blobs and
 * the frames that copy records (record, update, record copy and tombstone frames: docs/STORAGE.md,
 * "Two copies of every record") are counted apart; a segment is deleted only once neither holds
 * anything live.
 */
export interface SegmentEntry {
  committed: number;
  /** Data bytes of the live blobs in it. */
  liveBytes: number;
  liveBlobs: number;
  /** A streamed upload's segment: complete on arrival, never appended to. */
  sealed?: boolean;
  /** Record, update, record copy and tombstone frames indexed in it (absent: entered by an engine before record copies). */
  frames?: number;
  /** Of those, the ones a live event (or a tombstone still needed) depends on. */
  liveFrames?: number;
  /** Bytes of those frames, headers included: `frameBytes × liveFrames / frames` is what the live ones hold. */
  frameBytes?: number;
  /** created_at (µs) of the first and the last create whose record frame is in it (creates are logged in created_at order). */
  firstCreate?: number;
  lastCreate?: number;
}

/** Whether a segment holds a live blob, or a frame a live event or a needed tombstone depends on: it is kept. */
export function holdsLive(entry: SegmentEntry): boolean {
  return entry.liveBlobs > 0 || (entry.liveFrames ?? 0) > 0;
}

/** Bytes of the frames live events depend on in a segment (an estimate: frames are counted, their bytes summed). */
export function liveFrameBytes(entry: SegmentEntry): number {
  const frames = entry.frames ?? 0;
  return frames > 0 ? Math.round(((entry.frameBytes ?? 0) * Math.max(0, entry.liveFrames ?? 0)) / frames) : 0;
}
