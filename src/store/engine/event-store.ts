/**
 * The writer: the storage engine's facade for the HTTP thread (docs/STORAGE.md). A StoreView
 * (lookups, counters, file locations) that also makes creates and updates to events durable by
 * group commit into the segment log (log-batch.ts frames each batch) and puts them in the index
 * head, whose checkpoints the head's checkpointer runs (head/checkpointer.ts; their writes are
 * checkpoint-writer.ts's). It opens and recovers the store (recovery.ts) under the data
 * directory's lock, and pauses its writes for segment maintenance (segment-maintenance.ts) and
 * reset (reset.ts). Queries live in read/, updates to events in event-updates.ts.
 */
import { AppError, fromDiskError, fromLogWriteError } from '../../errors.js';
import { SegmentAppender, type Appended } from '../log/blob-log.js';
import { ensureBlobDirs } from '../log/segment-files.js';
import type { AttachRequest, UpdateRequest, FinalizeOutcome, FinalizeRequest } from './update-decisions.js';
import { indexBatches } from './checkpoint-writer.js';
import { DEFAULT_CHECKPOINT_MAX_MS, DEFAULT_CHECKPOINT_MS } from '../head/checkpoint-pace.js';
import { Checkpointer } from '../head/checkpointer.js';
import { Head, type HeadBatch } from '../head/head.js';
import { checkOwnPlaces, prepareDataDir } from './data-dir-check.js';
import { lockDataDir } from './data-dir-lock.js';
import { assertIndexCoversLog, assertIndexOpenable } from '../index/index-file-check.js';
import type { RecordAttachment } from '../record/event-record.js';
import { GroupCommitter } from './group-commit.js';
import { completeCounters, openDatabases, type LogPosition, type StoreDatabases } from '../index/lmdb-env.js';
import { prepareCreateRecord, type NewEvent, type PreparedCreate } from './prepared-create.js';
import { storedJson } from '../index/record-codec.js';
import { frameBatch, placeFiles, type LogJob, type LogResult } from './log-batch.js';
import { recoverStore } from './recovery.js';
import type { CreatedEvent, EventStoreOptions, OpenReport, StageListener } from './writer-options.js';
import { clearStore } from './reset.js';
import { retireSegment, type MaintenanceAccess } from './segment-maintenance.js';
import { compactSegment, rewriteLogCopies } from './segment-compaction.js';
import { upgradeToRecordCopies } from './record-copies-upgrade.js';
import { quarantineDirOf } from '../log/quarantine.js';
import { StoreChanges } from '../record/store-changes.js';
import { StoreView } from '../read/store-view.js';
import { nextUniqueMicros } from '../record/timestamps.js';
import { StoreClock } from './store-clock.js';
import { countPending, migrateToLedger, startCursors } from '../ledger/sink-ledger.js';
import { writeSinkCursor } from '../ledger/sink-cursors.js';
import { backfillSearchIndex, prepareSearchIndex, type BackfillProgress } from '../index/search-index.js';

/** A head this large means checkpoints fail: creates are refused, with their error, until one succeeds (bounded memory). */
const MAX_HEAD_ENTRIES = 200_000;
const MAX_HEAD_RECORD_BYTES = 128 * 1024 * 1024;

/** The on-disk store under one DATA_DIR. */
export class EventStore extends StoreView {
  /** The log stage: creates and updates go into the log in batches, one append at a time. */
  private readonly committer: GroupCommitter<LogJob, LogResult>;
  /** Creates and updates durable in the log and not yet in LMDB (head.ts). */
  protected override head: Head;
  /** When and how the head is checkpointed (checkpointer.ts). */
  private readonly checkpointer: Checkpointer;
  /** What segment maintenance is given of this writer (segment-maintenance.ts). */
  private readonly maintenance: MaintenanceAccess;
  private nextSegment: number;
  /** How the open that made this store found it. */
  opened: OpenReport = { replayed: 0, changesReplayed: 0, skipped: [], quarantined: [], ms: 0 };
  /** Who is told how long each round of a write stage took (`onStageTimed`). */
  private readonly stageListeners = new Set<StageListener>();
  /** The change feed: creates, updates and deletions once durable and visible, in that order (store-changes.ts). */
  readonly changes: StoreChanges;
  /**
   * How many writes the store has made (batches into the head, checkpoints, its own LMDB commits):
   * a 32-bit counter over a SharedArrayBuffer, read with `Atomics.load` from any thread, wrapping at
   * 2^31; still, the store's usage has not moved (docs/STORAGE.md, "When a checkpoint runs").
   */
  readonly writes = new Int32Array(new SharedArrayBuffer(4));
  /**
   * The search index covers every event (search-index.ts); false while its backfill runs, when
   * searches check classes, streams and solutions on records.
   */
  searchIndexReady = false;
  /** The clock against a wall clock that jumps (store-clock.ts); set by `open`. */
  clock: StoreClock | undefined;
  /** How far the search index backfill got (after its latest step); null when none ran. */
  searchIndexBackfill: Readonly<BackfillProgress> | null = null;
  /** The search index backfill started at open; settles when it is done, stopped or failed. */
  private backfill: Promise<void> = Promise.resolve();
  private closing = false;

  private constructor(
    dbs: StoreDatabases,
    dataDir: string,
    private readonly appender: SegmentAppender,
    private readonly unlock: () => void,
    lastSegment: number,
    private readonly options: EventStoreOptions,
  ) {
    super(dbs, dataDir, options);
    this.nextSegment = lastSegment + 1;
    this.changes = new StoreChanges((err) => options.onBackgroundError?.(err, 'change listener'));
    this.head = new Head(this.shipping, this.present);
    this.committer = new GroupCommitter((batch, release) => this.commitLogged(batch, release));
    this.checkpointer = new Checkpointer(this.head, {
      pace: () => ({ intervalMs: options.checkpointMs ?? DEFAULT_CHECKPOINT_MS, maxMs: options.checkpointMaxMs ?? DEFAULT_CHECKPOINT_MAX_MS, shipping: this.shipping }),
      commit: (batches) => this.commitHead(batches),
      onError: (err) => options.onBackgroundError?.(err, 'index checkpoint'),
    });
    this.maintenance = {
      dbs, stored: this.stored, appender, blobs: this.blobs, blobsDir: this.blobsDir, present: this.present,
      allocateSegment: () => this.allocateSegment(),
      paused: (work) => this.withWritesPaused(work),
      commitDurably: (writes) => this.commitDurably(writes),
    };
  }

  /**
   * Tells `listener` how long each round of a write stage takes from now on (docs/OPERATIONS.md,
   * "Metrics"): the log stage's append + fdatasync, a checkpoint's commit.
   * @returns a function that stops telling it
   */
  onStageTimed(listener: StageListener): () => void {
    this.stageListeners.add(listener);
    return () => this.stageListeners.delete(listener);
  }

  private stageTimed(stage: 'log' | 'index', batches: number, events: number, seconds: number): void {
    for (const listener of this.stageListeners) listener(stage, batches, events, seconds);
  }

  /**
   * Opens the store in `dataDir`, creating it when absent, and recovers it (docs/STORAGE.md,
   * "Recovery"): LMDB opens at its last flushed commit and the log after the position it
   * covers is replayed into the head, which the first checkpoint commits; staging is
   * emptied and segment tails neither covers are cut.
   * @throws DataDirLocked when another running store holds `dataDir`
   * @throws DataDirUnusable naming why `dataDir` cannot be written, or one of its own folders
   *   (blobs/, staging/, quarantine/) is a file or a symbolic link (data-dir-check.ts)
   * @throws IndexDamaged when db/data.mdb is damaged, missing or reading as a new index while blobs/ holds
   *   segments (index-file-check.ts), or lacks a segment holding events (unknown-segments.ts): naming `check --repair`
   * @throws the fs or lmdb error when the data directory is unusable otherwise
   */
  static async open(dataDir: string, options: EventStoreOptions): Promise<EventStore> {
    const started = performance.now();
    prepareDataDir(dataDir);
    const unlock = lockDataDir(dataDir); // before anything in the folder is touched
    try {
      checkOwnPlaces(dataDir); // before any mkdir, and before recovery empties staging/
      const { blobsDir, stagingDir } = ensureBlobDirs(dataDir);
      assertIndexOpenable(dataDir); // before LMDB maps a file cut short (docs/STORAGE.md, "A damaged index")
      const dbs = openDatabases(dataDir);
      await assertIndexCoversLog(dbs, dataDir); // an index that reads as new would have recovery remove the log
      await migrateToLedger(dbs);
      const searchIndexReady = await prepareSearchIndex(dbs);
      const recovered = await recoverStore(dbs, { blobsDir, stagingDir, quarantineDir: quarantineDirOf(dataDir) }, { shipping: options.sinks.length > 0, present: options.present });
      const { lastSegment, activeSegment, lastCreatedAt, head, replayed, changesReplayed, skipped, quarantined } = recovered;
      await completeCounters(dbs, () => countPending(dbs));
      await startCursors(dbs, options.sinks);
      await dbs.root.flushed;
      nextUniqueMicros(lastCreatedAt);
      // The appender asks the store for segments only once it is built.
      const appender = new SegmentAppender(blobsDir, () => store.allocateSegment());
      const store: EventStore = new EventStore(dbs, dataDir, appender, unlock, lastSegment, options);
      if (activeSegment) await appender.resume(activeSegment.segment, activeSegment.committed);
      // The replayed creates and updates are served from the head; its first checkpoint commits them.
      const replayedAt = performance.now();
      for (const batch of head) store.head.add(batch, replayedAt);
      // docs/STORAGE.md, "Upgrading a store".
      const upgraded = await upgradeToRecordCopies(store.maintenance, options.onRecordCopiesProgress);
      // Events a clock set back left ahead of it are re-stamped (docs/STORAGE.md, "A clock that jumps").
      store.clock = await StoreClock.open(store, lastCreatedAt, () => store.checkpointer.checkpoint(), {
        present: options.present, onJump: options.onClockJump, onError: (err) => options.onBackgroundError?.(err, 'store clock'),
      });
      store.checkpointer.schedule();
      store.opened = { replayed, changesReplayed, skipped, quarantined, ...(upgraded ? { upgraded } : {}), ms: Math.round(performance.now() - started) };
      store.searchIndexReady = searchIndexReady;
      if (!searchIndexReady) store.backfill = store.runSearchIndexBackfill();
      return store;
    } catch (err) {
      unlock();
      throw err;
    }
  }

  /**
   * Stores an event and its images durably: resolves once the event's frames (its images and
   * its record, built and encoded here unless `prepareCreateRecord` already was where the create
   * was prepared: prepared-create.ts) are fdatasync'd in the segment log, and the event is in the
   * head, visible to every read of this thread (docs/STORAGE.md, "Creates").
   * @throws AppError disk_full on ENOSPC, disk_io_error on EIO (docs/STORAGE.md, "An I/O error in
   *   the log"), store_failure on any other failure; either, with the checkpoint's error as
   *   cause, while checkpoints fail and the head is full
   */
  async create(event: NewEvent | PreparedCreate): Promise<CreatedEvent> {
    this.refuseWhenHeadFull();
    const prepared = 'encoded' in event ? event : prepareCreateRecord(event, this.present);
    await this.committer.submit(prepared);
    const { record } = prepared;
    return {
      id: record.id,
      image_ids: record.images.map((i) => i.file_id).filter((id): id is string => id !== null),
      created_at: record.created_at,
      draft: record.draft,
    };
  }

  /**
   * Makes an update to an event durable (docs/STORAGE.md, "Updates to events"): decided in its
   * batch of the log stage (update-decisions.ts), its frame fdatasync'd in the segment log, then
   * in the head, visible to every read of this thread, and announced. A repeated finalize
   * and a refusal log nothing.
   * @returns the outcome: a FinalizeOutcome for a finalize, the listed file for an attach
   * @throws AppError event_not_found, event_finalized (an attach); disk_full on ENOSPC,
   *   store_failure on any other failure, or with the checkpoint's error while the head is full
   */
  async update(request: FinalizeRequest): Promise<FinalizeOutcome>;
  async update(request: AttachRequest): Promise<RecordAttachment>;
  async update(request: UpdateRequest): Promise<FinalizeOutcome | RecordAttachment> {
    this.refuseWhenHeadFull();
    const result = await this.committer.submit(request);
    if (result instanceof AppError) throw result;
    return result as FinalizeOutcome | RecordAttachment;
  }

  /**
   * Logs a tombstone for each of `events` (id, created_at in µs), which the lifecycle worker is about
   * to delete, through the log stage (docs/STORAGE.md, "Two copies of every record").
   * @returns where each tombstone's frame ends, in order, once durable
   * @throws AppError disk_full on ENOSPC, disk_io_error on EIO, store_failure otherwise
   */
  async logTombstones(events: readonly { id: string; createdAt: number }[]): Promise<LogPosition[]> {
    return await Promise.all(events.map(({ id, createdAt }) => this.committer.submit({ type: 'tombstone', id, createdAt }))) as LogPosition[];
  }

  /**
   * Refuses a write while checkpoints fail and the head is full (docs/STORAGE.md, "The index
   * head"), so memory stays bounded and nothing is acknowledged that LMDB cannot take.
   * @throws AppError disk_full or store_failure, with the checkpoint's error as cause
   */
  private refuseWhenHeadFull(): void {
    if (this.head.entries >= MAX_HEAD_ENTRIES || this.head.bytes >= MAX_HEAD_RECORD_BYTES) {
      throw fromDiskError(this.checkpointer.error ?? new Error('the head is full and no checkpoint has completed'));
    }
  }

  /** Runs the search index backfill in the background; a failure is reported, and the next start resumes. */
  private async runSearchIndexBackfill(): Promise<void> {
    const { onSearchIndexProgress, onBackgroundError } = this.options;
    try {
      const done = await backfillSearchIndex(this.dbs, () => this.closing, (progress) => {
        this.searchIndexBackfill = { ...progress };
        onSearchIndexProgress?.(progress, false);
      });
      if (!done) return;
      this.searchIndexBackfill = done;
      this.searchIndexReady = true;
      onSearchIndexProgress?.(done, true);
    } catch (err) {
      onBackgroundError?.(err, 'search index backfill');
    }
  }

  /** A segment number never used before in this store. */
  allocateSegment(): number {
    return this.nextSegment++;
  }

  /** Saves the created_at (µs) of the last event a sink of the HTTP thread (MQTT) published (sink-cursors.ts); @throws the lmdb error */
  saveSinkCursor(sink: string, createdAt: number): Promise<void> {
    return writeSinkCursor(this, sink, createdAt);
  }

  /**
   * Deletes every event and file (reset.ts `clearStore`; docs/API.md, "Cleanup and reset").
   * Creates submitted meanwhile wait and are stored after it; the caller stops other writers (the
   * lifecycle worker) first.
   * @throws the fs or lmdb error (the store may then be partly cleared; a retry finishes it)
   */
  async clearAll(): Promise<void> {
    await clearStore(this.maintenance, () => {
      this.searchIndexReady = true;
      this.changes.announce({ kind: 'reset' });
    });
  }

  /** Retires `segment` when little or nothing lives in it (segment-maintenance.ts); @throws the fs or lmdb error of a step */
  retireSegment(segment: number): Promise<void> {
    return retireSegment(this.maintenance, segment);
  }

  /** Copies what lives in `segment` forward so it can be deleted (segment-compaction.ts); @throws the fs or lmdb error of a step */
  compactSegment(segment: number): Promise<void> {
    return compactSegment(this.maintenance, segment);
  }

  /** Copies the records of events the scrub found without their log copy into the log again (segment-compaction.ts); @returns how many */
  rewriteLogCopies(createdAts: readonly number[]): Promise<number> {
    return rewriteLogCopies(this.maintenance, createdAts);
  }

  /**
   * Runs `work` with no batch of the log stage under way and the head checkpointed:
   * batches in flight finish first, creates and updates submitted meanwhile wait and are
   * committed after it (reset, segment retirement, compaction).
   */
  private async withWritesPaused(work: () => Promise<void>): Promise<void> {
    await this.committer.pause();
    try {
      await this.checkpointer.checkpoint();
      await work();
    } finally {
      this.committer.resume();
    }
  }

  /** Runs `writes` in one LMDB transaction and waits until it is flushed. */
  private async commitDurably(writes: () => void): Promise<void> {
    await this.dbs.root.transaction(writes);
    Atomics.add(this.writes, 0, 1);
    await this.flushed();
  }

  /**
   * Resolves once every create and update acknowledged before the call is in LMDB
   * (docs/STORAGE.md, "The head"): checkpoints the head now rather than at its next tick.
   * @throws the lmdb error of a failed checkpoint (the creates and updates stay in the head and the log)
   */
  override async checkpointed(): Promise<void> {
    await this.checkpointer.checkpoint();
  }

  /**
   * Waits for queued creates and checkpoints the head, then closes files and the LMDB
   * environment. A failed last checkpoint is reported, not thrown: its creates are in the log,
   * and the next open replays them.
   */
  override async close(): Promise<void> {
    this.closing = true;
    this.checkpointer.close();
    await this.backfill;
    await this.committer.whenIdle();
    await this.checkpointer.checkpoint().catch((err: unknown) => this.options.onBackgroundError?.(err, 'index checkpoint'));
    await this.clock?.close().catch((err: unknown) => this.options.onBackgroundError?.(err, 'running time save'));
    await this.appender.close();
    await super.close();
    this.unlock();
  }

  /**
   * Makes one batch durable (docs/STORAGE.md, "Creates" and "Updates to events"): each update is
   * decided against the store and the batch's earlier updates (update-decisions.ts); each
   * create's frames (its images, then its record) and each update's frame are appended to the
   * log in one writev and fdatasync'd, the durability point; the batch then enters the index
   * head, where every read of this thread finds it, and is acknowledged. `release` lets the next
   * batch append as soon as this one's append is done. A checkpoint commits the head to LMDB
   * later, off the acknowledgement's path.
   */
  private async commitLogged(batch: LogJob[], release: () => void): Promise<LogResult[]> {
    const framed = frameBatch(this, batch, this.present);
    const { frames, creates, updates, results } = framed;
    if (frames.length === 0) {
      release();
      return results;
    }
    let appended: Appended;
    const appendStarted = performance.now();
    try {
      appended = await this.appender.append(frames);
      this.stageTimed('log', 1, creates.length + updates.length, (performance.now() - appendStarted) / 1000);
    } catch (err) {
      throw fromLogWriteError(err);
    } finally {
      release();
    }
    placeFiles(framed, appended);
    this.enterHead({ creates, updates: updates.map((c) => c.update), end: { segment: appended.segment, offset: appended.end } });
    for (const { update, id, record } of updates) {
      this.changes.announce({ kind: update.type === 'finalize' ? 'finalized' : 'files_attached', id, createdAt: update.createdAt, record });
    }
    return results;
  }

  /** Puts an appended batch in the head, announces its creates and schedules a checkpoint. */
  private enterHead(batch: HeadBatch): void {
    this.head.add(batch, performance.now());
    Atomics.add(this.writes, 0, 1);
    if (this.changes.listened) {
      for (const { record, value } of batch.creates) {
        this.changes.announce({ kind: 'created', id: record.id, createdAt: record.created_at, record, json: storedJson(value, this.present) });
      }
    }
    this.checkpointer.schedule();
  }

  /**
   * One checkpoint's writes (the checkpointer's `commit`): the head's batches go to LMDB, their
   * creates' puts first, then one transaction with their updates and the log position they bring
   * the index to (checkpoint-writer.ts `indexLogged`); the checkpointer drops them from the head
   * once it resolved (reads tolerate the moment they are in both: head.ts). lmdb-js flushes
   * the commit afterwards; until then recovery replays these creates from the log.
   * @throws the lmdb error of a failed commit; the batches then stay in the head
   */
  private async commitHead(batches: HeadBatch[]): Promise<void> {
    const started = performance.now();
    await indexBatches(this.stored, batches, { shipping: this.shipping, present: this.present, prefixesOf: (createdAt) => this.head.createdPrefixes(createdAt) });
    Atomics.add(this.writes, 0, 1);
    this.stageTimed('index', batches.length, batches.reduce((n, b) => n + b.creates.length + b.updates.length, 0), (performance.now() - started) / 1000);
  }
}
