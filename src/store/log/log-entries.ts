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

/** Accounting of one segment file; `committed` is its length covered by LMDB commits. */
export interface SegmentEntry {
  committed: number;
  liveBytes: number;
  liveBlobs: number;
  /** A streamed upload's segment: complete on arrival, never appended to. */
  sealed?: boolean;
}
