/**
 * What `edge-events check` reports of a data folder and what its `--repair` did (docs/OPERATIONS.md,
 * "Checking and repairing a data folder"): the shapes store-check.ts and index-rebuild.ts fill in.
 * Offsets in bytes from the start of a segment file, times in µs since the epoch.
 */
import type { LogPosition } from '../index/lmdb-env.js';
import type { FrameKind } from '../log/segment-frames.js';

/**
 * Bytes of the log that are damaged (docs/STORAGE.md, "Damage in the log"). Offsets in bytes from
 * the start of the segment file.
 */
export interface DamageInLog {
  segment: number;
  offset: number;
  end: number;
  /**
   * `no-frame`: bytes that are no frame, with whole frames after them; `crc`: a frame whose
   * header checks and whose data fails its CRC32C.
   */
  what: 'no-frame' | 'crc';
  /** For `crc`: the frame's kind and id (a file id, or the event id of a record or update frame). */
  kind?: FrameKind;
  id?: string;
}

/** Bytes after a segment's last whole frame, with none after them: what an unclean stop leaves. */
export interface LogTail {
  segment: number;
  offset: number;
  bytes: number;
  /** The index counts bytes past `offset` as committed: acknowledged frames were lost (damage). */
  acknowledged: boolean;
}

/** A segment the index knows that is shorter on disk than the index's committed length, or gone. */
export interface ShortSegment {
  segment: number;
  /** Bytes on disk; null when the file is missing. */
  fileBytes: number | null;
  committed: number;
  liveBlobs: number;
}

/** A file location of the index that does not lead to the whole frame it names. */
export interface BadLocation {
  fileId: string;
  segment: number;
  offset: number;
  /** `log`: the frame there is damaged or gone; `index`: the location names no such frame. */
  side: 'log' | 'index';
  why: string;
}

/** An event whose record frame is in the log, before the index's log position, not in the index. */
export interface UnindexedEvent {
  eventId: string;
  createdAt: number;
  segment: number;
  offset: number;
}

/** The index against the log (only when LMDB opened). */
export interface IndexAgainstLog {
  logPosition: LogPosition | null;
  /** The index reads as a new one while the log has segments (index-file-check.ts `readsAsNew`): the store refuses it. */
  readsAsNew: boolean;
  /** The meta database holds another database's keys (index-file-check.ts `metaIsForeign`): the store refuses it. */
  metaForeign: boolean;
  /**
   * Segment files before the log position that hold records of events and have no entry in the
   * index (unknown-segments.ts): the store refuses to start rather than remove them.
   */
  unknownSegments: number[];
  /** Events in the index (`event_ids`). */
  events: number;
  /** File locations in the index, and those that do not lead to their whole frame. */
  files: number;
  badLocationCount: number;
  badLocations: BadLocation[];
  /** Record frames in the log whose event is in the index. */
  recordsIndexed: number;
  /** Record frames after the log position the index lacks: the next start replays them. */
  recordsToReplay: number;
  /** Record frames before the position the index lacks, older than its oldest event a cleanup may delete: deleted by a cleanup. */
  deletedByCleanup: number;
  /** Record frames before the position the index lacks and no cleanup explains: lost from the index. */
  unindexedCount: number;
  unindexed: UnindexedEvent[];
  /** Events of the index whose record frame is damaged in the log: a rebuild would lose them. */
  indexedRecordsDamaged: number;
  /**
   * Records of the index that do not read back as their events (record-codec.ts `wholeRecord`: a
   * changed byte in the record or in its presented JSON), and the first of them by created_at (µs):
   * the store serves them so; a rebuild gives them back from the log.
   */
  recordsNotReadingBack: number;
  recordsNotReadingBackAt: number[];
  /** Events of the index with a whole record frame or record copy in the log too: two copies (docs/STORAGE.md, "Two copies of every record"). */
  bothCopies: number;
  /**
   * Events of the index with no whole record frame or record copy in the log (damaged, or in a
   * segment an engine before record copies reclaimed): the index is their only copy, a rebuild
   * would lose them, and `--repair` writes their record copies back into the log.
   */
  indexOnly: number;
  /** The first of them, by id. */
  indexOnlyIds: string[];
}

/** What `checkStore` found. */
export interface CheckReport {
  dataDir: string;
  index: {
    file: string;
    /** `unreadable`: the file checks, but LMDB failed to open or read it. */
    state: 'sound' | 'absent' | 'damaged' | 'unreadable';
    problem: string | null;
    fileBytes: number | null;
    pageSize: number | null;
    /** The transaction LMDB opens at. */
    transaction: number | null;
  };
  log: {
    segments: number;
    bytes: number;
    frames: number;
    /** Record frames (creates) and record copies. */
    records: number;
    copies: number;
    /** Tombstones: deletions logged (docs/STORAGE.md, "Two copies of every record"). */
    tombstones: number;
    /** Update frames (finalize, attach): `changes` in the JSON of `edge-events check`, a name of the CLI's output that stays. */
    changes: number;
    /** Frames of images, videos and local-only files. */
    fileFrames: number;
    damageCount: number;
    damage: DamageInLog[];
    tails: LogTail[];
    shortSegments: ShortSegment[];
  };
  /** What earlier replays moved aside into quarantine/ (quarantine.ts): damage found before, not by this check. */
  quarantine: { ranges: number; bytes: number; lostEvents: number };
  /** Null when the index did not open (absent, damaged, unreadable). */
  indexAgainstLog: IndexAgainstLog | null;
  /** Anything above that loses or risks acknowledged data: the command exits 1. */
  damage: boolean;
  /** Why a rebuild of the index from the log is advised (`needsRebuild`), or null. */
  rebuild: string | null;
}

/** The data directory cannot be checked: not a folder, or a store runs on it (the lock's message). */
export class CheckRefused extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CheckRefused';
  }
}

/** What `rebuildIndex` did. */
export interface RebuildReport {
  /** Where the former `db/` went (`db.damaged-<time>`), or null when there was none. */
  movedTo: string | null;
  /** The segment the replay started from; null when the log has none. */
  firstSegment: number | null;
  /** Creates and updates the replay indexed, creates it went past (store.opened). */
  replayed: number;
  changesReplayed: number;
  skipped: number;
  /** Events in the rebuilt index. */
  events: number;
  /** Records the replaced index still read and the log lacked, written back into the log and so in the rebuilt index. */
  salvaged: number;
  /** Ids of events lost: named by the replaced index or by damage in the log, and in neither the log nor the salvage. */
  lost: string[];
  /** The replaced index could not be read to its end: events it alone held may be lost unnamed. */
  salvageIncomplete: boolean;
  /**
   * Segment files the open removed as files the rebuilt index does not know (docs/STORAGE.md,
   * "Recovery", step 3), kept as they were in `keptIn`; empty when it removed none.
   */
  segmentFilesRemoved: string[];
  /** `blobs.before-rebuild-<time>`, holding `segmentFilesRemoved`; null when it removed none. */
  keptIn: string | null;
  /** The sinks the shipping ledger was rebuilt for (`options.sinks`): each ships every finalized event again. */
  sinks: string[];
  ms: number;
}
