/**
 * Cleanup (docs/OPERATIONS.md, "Keeping the disk bounded"): in order, retention (records older than
 * RETENTION_DAYS), over-limit (oldest records beyond MAX_RECORDS), storage (once the store is over
 * MAX_STORAGE_BYTES, oldest files until it is down to `storageTarget`, keeping their records;
 * oldest records next if files alone cannot get it there). Deletions go in bounded batches, each
 * its own transaction, with a pause between them so ingest latency stays flat. With cloud upload on, drafts and events not yet
 * uploaded are never deleted.
 */
import { type DeletionReason, eventsOldestFirst, type FileRef, filesByAge, heldClock, type HeldClock, isProtected, type LifecycleStore, retentionCutoff, type StoreView, type TombstoneLogger } from '../store/index.js';
import { overLimit, type StoreUsage } from './capacity.js';

/**
 * Records or files per deletion transaction. A record is ~14 keys to remove, and every deletion
 * transaction holds LMDB's write lock, so ingest commits wait behind it: small batches with a
 * pause between them keep ingest latency flat (500 per batch with no pause quadrupled ingest p99
 * beside a 100k-record cleanup, native-bench/RESULTS.lifecycle.md).
 */
export const CLEANUP_BATCH = 100;
/**
 * Most records or files one batch looks at while gathering its CLEANUP_BATCH: protected ones
 * (cloud upload on) are passed over, so four batches' worth lets a batch fill past a run of them,
 * while bounding the synchronous scan between two pauses; the next batch resumes past it.
 */
const SCAN_LIMIT = CLEANUP_BATCH * 4;
/** Pause between deletion transactions (ms), for the ingest commits queued behind them. */
const BATCH_PAUSE_MS = 2;

/** Most bytes a storage cleanup deletes beyond the excess (see `storageTarget`). */
const STORAGE_MARGIN_MAX_BYTES = 1024 ** 3;

/**
 * Storage (bytes) a cleanup brings a store over `maxStorageBytes` down to: 95% of it, or 1 GiB
 * below it on a limit over 20 GiB (docs/OPERATIONS.md, "Keeping the disk bounded"). Deleting only
 * the excess left a full store at its limit, so the next limit check (every second) started
 * another cleanup, each checkpointing a few creates and running the consistency pass: most of a
 * core and twice the bytes written per event (native-bench/PROFILE.md, "A full store at the pace").
 */
export function storageTarget(maxStorageBytes: number): number {
  return maxStorageBytes - Math.min(Math.floor(maxStorageBytes / 20), STORAGE_MARGIN_MAX_BYTES);
}

export type CleanupTrigger = 'MANUAL' | 'AUTOMATIC';

/** The limits cleanup enforces (settings; docs/OPERATIONS.md, "Settings"). */
export interface CleanupLimits {
  retentionDays: number;
  maxRecords: number;
  maxStorageBytes: number;
}

interface ByCause {
  total: number;
  retention: number;
  overlimit: number;
  storage: number;
}

interface Snapshot {
  records: number;
  files: number;
  bytes: number;
}

/** Cleanup result (docs/API.md, "Response shapes"). */
export interface CleanupResult {
  trigger: CleanupTrigger;
  duration_seconds: number;
  records_deleted: ByCause;
  files_deleted: ByCause;
  bytes_freed: number;
  before: Snapshot;
  after: Snapshot;
  consistency: { ran: boolean; dangling_db_records_removed: number; orphaned_disk_files_removed: number };
  message: string;
}

/** What the HTTP thread, which owns the active segment and has segment files open, does. */
export interface CleanupHooks {
  /** Told the numbers of the segment files deleted: their handles are closed, so their space is freed. */
  onReclaimed: (segments: number[]) => void;
  /**
   * Told the segment files the index does not know that hold records of events, which the
   * consistency pass kept (consistency.ts `unknownSegmentsKept`): `check --repair` gives their events back.
   */
  onUnknownSegments: (segments: number[]) => void;
  /** Told the files whose damaged index entries the consistency pass mended from the log (consistency.ts `fileEntriesMended`). */
  onMendedFileEntries: (fileIds: string[]) => void;
  /** Stops appending to an empty active segment and seals it, so it can be deleted. */
  retireSegment: (segment: number) => Promise<void>;
  /** Copies what lives in a sparse segment (blobs, record frames, tombstones) forward, so it can be deleted. */
  compactSegment: (segment: number) => Promise<void>;
  /** Logs the tombstones of events about to be deleted (EventStore.logTombstones; docs/STORAGE.md, "Two copies of every record"). */
  logTombstones: TombstoneLogger;
  /**
   * Commits the head to LMDB (docs/STORAGE.md, "The head"): the cleanup then sees
   * every event acknowledged before it began. Rejects when the checkpoint failed (the writer logs
   * it): the cleanup goes on, but removes no segment file it does not know, since the head's
   * newest segment may not be in LMDB yet.
   */
  checkpoint: () => Promise<void>;
  /** The store's usage with the head, as the HTTP thread counts it (capacity.ts `StoreUsage`). */
  usage: () => Promise<StoreUsage>;
}

/**
 * When a cleanup commits the head first: `always`, or `when-due`, only when a deletion may
 * be due (`deletionMayBeDue`). A checkpoint on a grown index writes about a thousand pages however
 * few creates it carries (docs/OPERATIONS.md, "Keeping the disk bounded").
 */
export type HeadCheckpoint = 'always' | 'when-due';

const pause = () => new Promise<void>((resolve) => setTimeout(resolve, BATCH_PAUSE_MS));

function snapshot(store: StoreView): Snapshot {
  const counters = store.counters();
  return { records: counters.events, files: counters.files, bytes: store.storageBytes() };
}

/** Why cleanup deletes records: the pass that deletes them (retention, over-limit, storage). */
type CleanupReason = Exclude<DeletionReason, 'reset'>;

/**
 * Deletes the oldest deletable records created before `before` (µs), `wanted` of them at most.
 * @param reason the pass deleting them, announced to the live stream (docs/API.md, "Live stream")
 * @returns records, files and bytes deleted
 */
async function deleteOldestRecords(store: LifecycleStore, before: number, wanted: number, reason: CleanupReason, hooks: CleanupHooks) {
  const total = { records: 0, files: 0, bytes: 0 };
  let from = -Infinity;
  while (total.records < wanted) {
    const batch: number[] = [];
    let last: number | undefined;
    for (const createdAt of eventsOldestFirst(store, { from, before, limit: SCAN_LIMIT })) {
      last = createdAt;
      if (!isProtected(store, createdAt)) batch.push(createdAt);
      if (batch.length >= Math.min(CLEANUP_BATCH, wanted - total.records)) break;
    }
    if (last === undefined) break;
    from = last + 1; // created_at is an integer of µs: the next one the walk may meet
    if (batch.length === 0) continue;
    const tally = await store.deleteRecords(batch, reason, hooks.logTombstones);
    total.records += tally.records;
    total.files += tally.files;
    total.bytes += tally.bytes;
    await pause();
  }
  return total;
}

/** Deletes the oldest deletable files until storage is within `maxBytes`. */
async function deleteOldestFiles(store: LifecycleStore, maxBytes: number, hooks: CleanupHooks) {
  const total = { records: 0, files: 0, bytes: 0 };
  let after: FileRef | undefined;
  for (let excess = store.storageBytes() - maxBytes; excess > 0; excess = store.storageBytes() - maxBytes) {
    const batch: FileRef[] = [];
    let planned = 0;
    let last: FileRef | undefined;
    for (const file of filesByAge(store, { after, limit: SCAN_LIMIT })) {
      last = file;
      if (isProtected(store, file.createdAt)) continue;
      batch.push(file);
      planned += store.openFile(file.fileId)?.size ?? 0;
      if (batch.length >= CLEANUP_BATCH || planned >= excess) break;
    }
    if (!last) break;
    after = last;
    if (batch.length === 0) continue;
    const tally = await store.deleteFiles(batch);
    total.files += tally.files;
    total.bytes += tally.bytes;
    hooks.onReclaimed(await store.reclaimSegments(hooks.retireSegment, hooks.compactSegment, tally.files > 0));
    await pause();
  }
  return total;
}

/**
 * True when a cleanup may have something to delete: the store's usage with the head is over
 * MAX_RECORDS or MAX_STORAGE_BYTES, or LMDB holds a record past retention. The head holds the
 * newest creates, which retention reaches only after their checkpoint.
 * @param usage the store's usage with the head (`CleanupHooks.usage`)
 * @param now the time (ms since the epoch) retention is measured from
 * @param held the store's running time and epochs retention also reckons by (store-clock.ts)
 */
export function deletionMayBeDue(store: StoreView, limits: CleanupLimits, usage: StoreUsage, now: number, held: HeldClock): boolean {
  if (overLimit(usage, limits)) return true;
  return !eventsOldestFirst(store, { before: retentionCutoff(now * 1000, limits.retentionDays, held), limit: 1 }).next().done;
}

/**
 * Runs one cleanup.
 * @param hooks what the HTTP thread does for a cleanup (see CleanupHooks)
 * @param options `now`, the time (ms since the epoch) retention is measured from (default: now);
 *   `running`, the store's running time (µs; default: store-clock.ts `runningMicros`), which an
 *   event must also have been held for RETENTION_DAYS of (docs/STORAGE.md, "A clock that jumps");
 *   `headCheckpoint` (default: `when-due` for an AUTOMATIC cleanup, `always` for a MANUAL one).
 *   Without the checkpoint the consistency pass removes no orphaned segment file, since the head's
 *   newest segment may not be in LMDB yet. `consistency` (default true): false skips the
 *   consistency pass (`consistency.ran` false), for a cleanup started by a crossed limit between
 *   scheduled ones.
 */
export async function runCleanup(
  store: LifecycleStore,
  limits: CleanupLimits,
  trigger: CleanupTrigger,
  hooks: CleanupHooks,
  options: { now?: number; running?: number; headCheckpoint?: HeadCheckpoint; consistency?: boolean } = {},
): Promise<CleanupResult> {
  const started = performance.now();
  const now = options.now ?? Date.now();
  const held = heldClock(store, options.running);
  const headCheckpoint = options.headCheckpoint ?? (trigger === 'MANUAL' ? 'always' : 'when-due');
  // A usage the HTTP thread could not read counts as over the limits.
  const usage = headCheckpoint === 'when-due' ? await hooks.usage().catch(() => undefined) : undefined;
  const checkpointFirst = headCheckpoint === 'always' || !usage || deletionMayBeDue(store, limits, usage, now, held);
  const headCommitted = checkpointFirst && await hooks.checkpoint().then(() => true, () => false);
  const before = snapshot(store);
  const runConsistency = options.consistency ?? true;
  const consistency = runConsistency
    ? await store.checkConsistency(now, headCommitted)
    : { danglingDbRecordsRemoved: 0, orphanedDiskFilesRemoved: 0, unknownSegmentsKept: [], stagingFilesRemoved: 0, fileEntriesMended: [] };
  if (consistency.unknownSegmentsKept.length > 0) hooks.onUnknownSegments(consistency.unknownSegmentsKept);
  if (consistency.fileEntriesMended.length > 0) hooks.onMendedFileEntries(consistency.fileEntriesMended);

  const retention = await deleteOldestRecords(store, retentionCutoff(now * 1000, limits.retentionDays, held), Infinity, 'retention', hooks);
  const none = { records: 0, files: 0, bytes: 0 };
  const excess = store.counters().events - limits.maxRecords;
  const overlimit = excess > 0 ? await deleteOldestRecords(store, Infinity, excess, 'max_records', hooks) : none;
  const target = storageTarget(limits.maxStorageBytes);
  const storageOver = store.storageBytes() > limits.maxStorageBytes;
  const storageFiles = storageOver ? await deleteOldestFiles(store, target, hooks) : none;
  const storageRecords = storageOver && store.storageBytes() > target ? await deleteOldestRecordsUntil(store, target, hooks) : none;
  const records = { retention: retention.records, overlimit: overlimit.records, storage: storageRecords.records };
  const files = { retention: retention.files, overlimit: overlimit.files, storage: storageFiles.files + storageRecords.files };
  const recordsTotal = records.retention + records.overlimit + records.storage;
  const filesTotal = files.retention + files.overlimit + files.storage;
  const filesDeleted = filesTotal + consistency.danglingDbRecordsRemoved > 0;
  hooks.onReclaimed(await store.reclaimSegments(hooks.retireSegment, hooks.compactSegment, filesDeleted));

  const after = snapshot(store);
  return {
    trigger,
    duration_seconds: Number(((performance.now() - started) / 1000).toFixed(3)),
    records_deleted: { total: recordsTotal, ...records },
    files_deleted: { total: filesTotal, ...files },
    bytes_freed: retention.bytes + overlimit.bytes + storageFiles.bytes + storageRecords.bytes,
    before,
    after,
    consistency: {
      ran: runConsistency,
      dangling_db_records_removed: consistency.danglingDbRecordsRemoved,
      orphaned_disk_files_removed: consistency.orphanedDiskFilesRemoved,
    },
    message: `Cleanup deleted ${recordsTotal} records and ${filesTotal} files`,
  };
}

/** Deletes the oldest deletable records, batch by batch, until storage is within `maxBytes`. */
async function deleteOldestRecordsUntil(store: LifecycleStore, maxBytes: number, hooks: CleanupHooks) {
  const total = { records: 0, files: 0, bytes: 0 };
  while (store.storageBytes() > maxBytes) {
    const tally = await deleteOldestRecords(store, Infinity, CLEANUP_BATCH, 'storage', hooks);
    if (tally.records === 0) break;
    total.records += tally.records;
    total.files += tally.files;
    total.bytes += tally.bytes;
  }
  return total;
}
