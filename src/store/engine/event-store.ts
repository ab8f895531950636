/**
 * The storage engine's facade for the HTTP thread (docs/STORAGE.md): a StoreView (lookups,
 * counters, file locations) plus durable creates and changes to events by group commit into the
 * segment log, the checkpoints that index them and the data directory lock. Queries live in
 * event-query.ts, changes to events in event-updates.ts, recovery in recovery.ts. The domain
 * (src/events) talks to the store only through these modules; nothing outside src/store sees LMDB.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { AppError, fromDiskError, fromLogWriteError } from '../../errors.js';
import { SegmentAppender, type Appended, type FrameToAppend } from '../log/blob-log.js';
import { ensureBlobDirs } from '../log/segment-files.js';
import { decideChange, type AttachRequest, type ChangeRequest, type FinalizeOutcome, type FinalizeRequest } from './change-decisions.js';
import { indexBatches } from './checkpoint-writer.js';
import { checkpointWaitMs, DEFAULT_CHECKPOINT_MAX_MS, DEFAULT_CHECKPOINT_MS, IndexHead, type CheckpointPace, type HeadBatch, type LoggedCreate } from '../head/index-head.js';
import { prepareDataDir } from './data-dir-check.js';
import { lockDataDir } from './data-dir-lock.js';
import { assertIndexCoversLog, assertIndexOpenable } from '../index/index-file-check.js';
import type { EventRecord, RecordAttachment } from '../record/event-record.js';
import { GroupCommitter } from './group-commit.js';
import { completeCounters, LOG_POSITION_KEY, openDatabases, type LogPosition, type StoreDatabases } from '../index/lmdb-env.js';
import { prepareCreateRecord, stampedValue, type NewEvent, type PreparedCreate } from './prepared-create.js';
import { frameRecordBytes, storedJson } from '../index/record-codec.js';
import { encodeRecordFrame } from '../log/record-frame.js';
import { encodeChange, type RecordChange } from '../index/record-change.js';
import { recoverStore, type SkippedCreate } from './recovery.js';
import { quarantineDirOf, type QuarantinedBytes } from '../log/quarantine.js';
import { StoreChanges, type StoreChange } from '../record/store-changes.js';
import { StoreView, type StoreOptions } from '../read/store-view.js';
import { nextUniqueMicros } from '../record/timestamps.js';
import { keepClockSync, StoreClock, type ClockJumpReport } from './store-clock.js';
import { countPending, migrateToLedger, startCursors } from '../ledger/sink-ledger.js';
import { backfillSearchIndex, markSearchIndexCurrentSync, prepareSearchIndex, type BackfillProgress } from '../index/search-index.js';

/** What a durable create returns. `created_at` in µs. */
export interface CreatedEvent {
  id: string;
  image_ids: string[];
  created_at: number;
  draft: boolean;
}

/**
 * A head this large means checkpoints are failing: creates are refused, with the checkpoint's
 * error, until one succeeds, so memory stays bounded and nothing is acknowledged that LMDB cannot take.
 */
const MAX_HEAD_ENTRIES = 200_000;
const MAX_HEAD_RECORD_BYTES = 128 * 1024 * 1024;

/** What the log stage takes: a create, or a change to an event (change-decisions.ts). */
type LogJob = PreparedCreate | ChangeRequest;

/** What it answers: nothing for a create; a change's outcome, or its refusal. */
type LogResult = undefined | FinalizeOutcome | RecordAttachment | AppError;

/** How the last open found the store (docs/STORAGE.md, "Recovery"). */
export interface OpenReport {
  /** Creates replayed from the log into the index head (or checkpointed during a long replay). */
  replayed: number;
  /** Changes to events (finalize, attach) replayed likewise (applied, or dropped with their event deleted). */
  changesReplayed: number;
  /** Creates the replay went past (recovery.ts SkippedCreate): whole frames it could not index. */
  skipped: SkippedCreate[];
  /** Damage in the log this open found and quarantined (docs/STORAGE.md, "Damage in the log"). */
  quarantined: QuarantinedBytes[];
  /** Time the open took (ms). */
  ms: number;
}

/** Settings of the write path. */
export interface EventStoreOptions extends StoreOptions {
  /** Reports a failure of background work (cutting a failed batch from the log); the store keeps serving. */
  onBackgroundError?: (err: unknown, task: string) => void;
  /** Told as the search index backfill advances (search-index.ts), and when it is done. */
  onSearchIndexProgress?: (progress: BackfillProgress, done: boolean) => void;
  /** Told each jump of the wall clock the store finds (docs/STORAGE.md, "A clock that jumps"), to log. */
  onClockJump?: (jump: ClockJumpReport) => void;
  /**
   * How long a create waits in the index head before a checkpoint commits it to LMDB once the
   * head holds CHECKPOINT_BATCH_ENTRIES, or whenever sinks are configured (ms,
   * INDEX_CHECKPOINT_MS; docs/STORAGE.md, "When a checkpoint runs"); DEFAULT_CHECKPOINT_MS when unset.
   */
  checkpointMs?: number;
  /**
   * How long it waits while the head holds fewer (ms, INDEX_CHECKPOINT_MAX_MS; the same section);
   * DEFAULT_CHECKPOINT_MAX_MS when unset, never shorter than `checkpointMs`.
   */
  checkpointMaxMs?: number;
}

/** The on-disk store under one DATA_DIR. */
export class EventStore extends StoreView {
  /** The log stage: creates and changes go into the log in batches, one append at a time. */
  private readonly committer: GroupCommitter<LogJob, LogResult>;
  /** Creates and changes durable in the log and not yet in LMDB (index-head.ts). */
  protected override head: IndexHead;
  /** The checkpoint under way, if any: one at a time. */
  private checkpointRun: Promise<void> | undefined;
  private checkpointTimer: NodeJS.Timeout | undefined;
  /** When the armed checkpoint timer fires (`performance.now()`, ms). */
  private checkpointAt = 0;
  /** Why the last checkpoint failed; cleared by the next one that succeeds. */
  private checkpointError: unknown;
  private nextSegment: number;
  /** How the open that made this store found it. */
  opened: OpenReport = { replayed: 0, changesReplayed: 0, skipped: [], quarantined: [], ms: 0 };
  /**
   * Told how long each round of a write stage took (docs/OPERATIONS.md, "Metrics"): the log
   * stage's append + fdatasync, a checkpoint's commit; with the batches, and the creates and
   * changes, of the round.
   */
  stageTimer: ((stage: 'log' | 'index', batches: number, events: number, seconds: number) => void) | undefined;
  /** Changes to events once durable and visible, in that order (store-changes.ts). */
  readonly changes: StoreChanges;
  /**
   * How many writes the store has made: batches into the head, checkpoints, and its own LMDB
   * commits (reset, segment retirement, compaction). One 32-bit counter over a
   * SharedArrayBuffer, read with `Atomics.load` from any thread without a round trip: a count
   * that has not moved means the store's usage has not either (docs/STORAGE.md, "When a
   * checkpoint runs"). It wraps at 2^31.
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
    this.head = new IndexHead(this.shipping, this.present);
    this.committer = new GroupCommitter((batch, release) => this.commitLogged(batch, release));
  }

  /**
   * Opens the store in `dataDir`, creating it when absent, and recovers it (docs/STORAGE.md,
   * "Recovery"): LMDB opens at its last flushed commit and the log after the position it
   * covers is replayed into the index head, which the first checkpoint commits; staging is
   * emptied and segment tails neither covers are cut.
   * @throws DataDirLocked when another running store holds `dataDir`
   * @throws DataDirUnusable naming why `dataDir` cannot be written (data-dir-check.ts)
   * @throws IndexDamaged when db/data.mdb is damaged, or missing or reading as a new index while
   *   blobs/ holds segments (index-file-check.ts): its message names `edge-events check --repair`
   * @throws the fs or lmdb error when the data directory is unusable otherwise
   */
  static async open(dataDir: string, options: EventStoreOptions): Promise<EventStore> {
    const started = performance.now();
    prepareDataDir(dataDir);
    const { blobsDir, stagingDir } = ensureBlobDirs(dataDir);
    const unlock = lockDataDir(dataDir);
    try {
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
      // The replayed creates and changes are served from the head; its first checkpoint commits them.
      const replayedAt = performance.now();
      for (const batch of head) store.head.add(batch, replayedAt);
      // Events a clock set back left ahead of it are re-stamped (docs/STORAGE.md, "A clock that jumps").
      store.clock = await StoreClock.open(store, lastCreatedAt, () => store.checkpoint(), {
        present: options.present, onJump: options.onClockJump, onError: (err) => options.onBackgroundError?.(err, 'store clock'),
      });
      store.scheduleCheckpoint();
      store.opened = { replayed, changesReplayed, skipped, quarantined, ms: Math.round(performance.now() - started) };
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
   * index head, visible to every read of this thread (docs/STORAGE.md, "Creates").
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
   * Makes a change to an event durable (docs/STORAGE.md, "Changes to events"): decided in its
   * batch of the log stage (change-decisions.ts), its frame fdatasync'd in the segment log, then
   * in the index head, visible to every read of this thread, and announced. A repeated finalize
   * and a refusal log nothing.
   * @returns the outcome: a FinalizeOutcome for a finalize, the listed file for an attach
   * @throws AppError event_not_found, event_finalized (an attach); disk_full on ENOSPC,
   *   store_failure on any other failure, or with the checkpoint's error while the head is full
   */
  async change(request: FinalizeRequest): Promise<FinalizeOutcome>;
  async change(request: AttachRequest): Promise<RecordAttachment>;
  async change(request: ChangeRequest): Promise<FinalizeOutcome | RecordAttachment> {
    this.refuseWhenHeadFull();
    const result = await this.committer.submit(request);
    if (result instanceof AppError) throw result;
    return result!;
  }

  /**
   * Refuses a write while checkpoints fail and the head is full (docs/STORAGE.md, "The index
   * head"), so memory stays bounded and nothing is acknowledged that LMDB cannot take.
   * @throws AppError disk_full or store_failure, with the checkpoint's error as cause
   */
  private refuseWhenHeadFull(): void {
    if (this.head.entries >= MAX_HEAD_ENTRIES || this.head.bytes >= MAX_HEAD_RECORD_BYTES) {
      throw fromDiskError(this.checkpointError ?? new Error('the index head is full and no checkpoint has completed'));
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

  override announceChange(change: StoreChange): void {
    this.changes.announce(change);
  }

  /** A segment number never used before in this store. */
  allocateSegment(): number {
    return this.nextSegment++;
  }

  /**
   * Deletes every event and file (docs/API.md, "Cleanup and reset"). Creates submitted meanwhile
   * wait and are stored after it; the caller stops other writers (the lifecycle worker) first.
   * @throws the fs or lmdb error (the store may then be partly cleared; a retry finishes it)
   */
  async clearAll(): Promise<void> {
    await this.withWritesPaused(async () => {
      await this.appender.close();
      await this.blobs.close();
      const { dbs } = this;
      // The log starts again after every segment there was, so no replay finds the old creates.
      const restart: LogPosition = { segment: this.allocateSegment(), offset: 0 };
      await this.commitDurably(() => {
        const keepClock = keepClockSync(dbs);
        for (const db of [dbs.events, dbs.eventIds, dbs.index, dbs.files, dbs.segments, dbs.meta]) db.clearSync();
        keepClock();
        dbs.meta.putSync(LOG_POSITION_KEY, restart);
        markSearchIndexCurrentSync(dbs);
      });
      this.searchIndexReady = true;
      this.announceChange({ kind: 'reset' });
      for (const name of await fsp.readdir(this.blobsDir)) await fsp.rm(path.join(this.blobsDir, name), { force: true, recursive: true });
    });
  }

  /**
   * Stops appending to `segment` if it holds no live blob, and seals it, so the lifecycle worker
   * may delete it (docs/STORAGE.md, "Reclaiming space"): on a small disk every blob may sit in the
   * active segment, which is otherwise never reclaimed. Creates wait meanwhile; the next one opens
   * a new segment.
   */
  async retireSegment(segment: number): Promise<void> {
    await this.withWritesPaused(async () => {
      const { dbs } = this;
      if (dbs.segments.get(segment)?.liveBlobs !== 0) return;
      if (this.appender.currentSegment === segment) await this.appender.close();
      await this.commitDurably(() => {
        const entry = dbs.segments.get(segment);
        if (entry && entry.liveBlobs <= 0) dbs.segments.putSync(segment, { ...entry, sealed: true });
      });
    });
  }

  /**
   * Compacts `segment` (docs/STORAGE.md, "Reclaiming space"): its live blobs are copied forward
   * into the active segment and their entries moved, so the segment holds no live blob and can be
   * deleted. Creates wait meanwhile. Live bytes of a compacted segment are below a quarter of
   * 64 MiB.
   */
  async compactSegment(segment: number): Promise<void> {
    await this.withWritesPaused(async () => {
      const { dbs } = this;
      const live = [...dbs.files.getRange()].filter(({ value }) => value.segment === segment);
      if (live.length === 0) return;
      const blobs = await Promise.all(live.map(async ({ key, value }) => {
        const bytes = Buffer.allocUnsafe(value.length);
        await this.blobs.read(segment, value.offset, bytes);
        return { id: key, kind: value.kind, bytes };
      }));
      const appended = await this.appender.append(blobs);
      await this.commitDurably(() => {
        let moved = 0;
        let movedBytes = 0;
        live.forEach(({ key }, i) => {
          const entry = dbs.files.get(key);
          if (!entry || entry.segment !== segment) return;
          const at = appended.placed[i];
          dbs.files.putSync(key, { ...entry, segment: at.segment, offset: at.offset, crc: at.crc });
          moved++;
          movedBytes += entry.length;
        });
        const old = dbs.segments.get(segment);
        if (old) dbs.segments.putSync(segment, { ...old, liveBytes: old.liveBytes - movedBytes, liveBlobs: old.liveBlobs - moved });
        const target = dbs.segments.get(appended.segment) ?? { committed: 0, liveBytes: 0, liveBlobs: 0 };
        dbs.segments.putSync(appended.segment, {
          ...target,
          committed: Math.max(target.committed, appended.end),
          liveBytes: target.liveBytes + movedBytes,
          liveBlobs: target.liveBlobs + moved,
        });
      });
    });
  }

  /**
   * Runs `work` with no batch of the log stage under way and the index head checkpointed:
   * batches in flight finish first, creates and changes submitted meanwhile wait and are
   * committed after it (reset, segment retirement, compaction).
   */
  private async withWritesPaused(work: () => Promise<void>): Promise<void> {
    await this.committer.pause();
    try {
      await this.checkpoint();
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
   * Resolves once every create and change acknowledged before the call is in LMDB
   * (docs/STORAGE.md, "The index head"): checkpoints the head now rather than at its next tick.
   * @throws the lmdb error of a failed checkpoint (the creates and changes stay in the head and the log)
   */
  override async checkpointed(): Promise<void> {
    await this.checkpoint();
  }

  /**
   * Waits for queued creates and checkpoints the head, then closes files and the LMDB
   * environment. A failed last checkpoint is reported, not thrown: its creates are in the log,
   * and the next open replays them.
   */
  override async close(): Promise<void> {
    this.closing = true;
    await this.backfill;
    await this.committer.whenIdle();
    clearTimeout(this.checkpointTimer);
    await this.checkpoint().catch((err: unknown) => this.options.onBackgroundError?.(err, 'index checkpoint'));
    await this.clock?.close().catch((err: unknown) => this.options.onBackgroundError?.(err, 'running time save'));
    await this.appender.close();
    await super.close();
    this.unlock();
  }

  /**
   * Makes one batch durable (docs/STORAGE.md, "Creates" and "Changes to events"): each change is
   * decided against the store and the batch's earlier changes (change-decisions.ts); each
   * create's frames (its images, then its record) and each change's frame are appended to the
   * log in one writev and fdatasync'd, the durability point; the batch then enters the index
   * head, where every read of this thread finds it, and is acknowledged. `release` lets the next
   * batch append as soon as this one's append is done. A checkpoint commits the head to LMDB
   * later, off the acknowledgement's path.
   */
  private async commitLogged(batch: LogJob[], release: () => void): Promise<LogResult[]> {
    const frames: FrameToAppend[] = [];
    const creates: LoggedCreate[] = [];
    /** Per create, its blobs and the index of the first of their frames in `frames`. */
    const placing: { blobs: PreparedCreate['imageBlobs']; first: number }[] = [];
    const changes: { change: RecordChange; id: string; record: EventRecord }[] = [];
    const results: LogResult[] = [];
    const decided = new Map<number, EventRecord>();
    for (const job of batch) {
      if (job.type !== 'create') {
        const decision = decideChange(this, job, decided);
        if ('refusal' in decision) {
          results.push(decision.refusal);
          continue;
        }
        results.push(decision.outcome);
        if (!decision.change) continue;
        frames.push({ id: job.id, kind: 'change', bytes: encodeChange(decision.change) });
        changes.push({ change: decision.change, id: job.id, record: decision.record! });
        continue;
      }
      const { record, imageBlobs: blobs } = job;
      record.created_at = nextUniqueMicros();
      if (!record.draft) record.finalized_at = record.created_at;
      const value = stampedValue(job, record.created_at, this.present);
      placing.push({ blobs, first: frames.length });
      for (const blob of blobs) frames.push({ id: blob.fileId, kind: blob.kind, bytes: blob.bytes });
      const files = blobs.map((b) => ({ fileId: b.fileId, contentType: b.contentType }));
      frames.push({ id: record.id, kind: 'record', bytes: encodeRecordFrame({ record: frameRecordBytes(value), files }) });
      creates.push({ record, value, files: [] });
      results.push(undefined);
    }
    if (frames.length === 0) {
      release();
      return results;
    }
    let appended: Appended;
    const appendStarted = performance.now();
    try {
      appended = await this.appender.append(frames);
      this.stageTimer?.('log', 1, creates.length + changes.length, (performance.now() - appendStarted) / 1000);
    } catch (err) {
      throw fromLogWriteError(err);
    } finally {
      release();
    }
    placing.forEach(({ blobs, first }, i) => {
      blobs.forEach((blob, k) => creates[i].files.push({ fileId: blob.fileId, kind: blob.kind, contentType: blob.contentType, at: appended.placed[first + k] }));
    });
    this.enterHead({ creates, changes: changes.map((c) => c.change), end: { segment: appended.segment, offset: appended.end } });
    for (const { change, id, record } of changes) {
      this.announceChange({ kind: change.type === 'finalize' ? 'finalized' : 'files_attached', id, createdAt: change.createdAt, record });
    }
    return results;
  }

  /** Puts an appended batch in the head, announces its creates and schedules a checkpoint. */
  private enterHead(batch: HeadBatch): void {
    this.head.add(batch, performance.now());
    Atomics.add(this.writes, 0, 1);
    if (this.changes.listened) {
      for (const { record, value } of batch.creates) {
        this.announceChange({ kind: 'created', id: record.id, createdAt: record.created_at, record, json: storedJson(value, this.present) });
      }
    }
    this.scheduleCheckpoint();
  }

  /** When checkpoints run (docs/STORAGE.md, "When a checkpoint runs"). */
  private get pace(): CheckpointPace {
    return {
      intervalMs: this.options.checkpointMs ?? DEFAULT_CHECKPOINT_MS,
      maxMs: this.options.checkpointMaxMs ?? DEFAULT_CHECKPOINT_MAX_MS,
      shipping: this.shipping,
    };
  }

  /**
   * Arranges the next checkpoint, `checkpointWaitMs` after the head's oldest batch arrived: at
   * once at the size trigger, sooner as the head fills (docs/STORAGE.md, "When a checkpoint
   * runs"). An armed timer that fires sooner is kept.
   */
  private scheduleCheckpoint(): void {
    const since = this.head.since;
    if (since === undefined) return;
    if (this.checkpointRun) return; // the run under way reschedules when it ends
    this.armCheckpoint(since + checkpointWaitMs(this.head, this.pace));
  }

  /** Sets the checkpoint timer to fire at `at` (`performance.now()`, ms) unless it already fires sooner. */
  private armCheckpoint(at: number): void {
    if (this.closing || (this.checkpointTimer !== undefined && at >= this.checkpointAt)) return;
    clearTimeout(this.checkpointTimer);
    this.checkpointAt = at;
    this.checkpointTimer = setTimeout(() => {
      this.checkpointTimer = undefined;
      this.checkpoint().catch((err: unknown) => this.options.onBackgroundError?.(err, 'index checkpoint'));
    }, Math.max(0, at - performance.now()));
    this.checkpointTimer.unref();
  }

  /**
   * Commits every batch in the head at the time of the call to LMDB, one checkpoint at a time
   * (docs/STORAGE.md, "The index head").
   * @throws the lmdb error of this caller's own failed checkpoint (a failure of another
   *   caller's run is retried here)
   */
  private async checkpoint(): Promise<void> {
    const pending = this.head.pending;
    const target = pending[pending.length - 1];
    while (target && this.head.pending.includes(target)) {
      if (this.checkpointRun) {
        await this.checkpointRun.catch(() => undefined);
        continue;
      }
      this.checkpointRun = this.commitHead();
      try {
        await this.checkpointRun;
      } finally {
        this.checkpointRun = undefined;
        this.rescheduleCheckpoint();
      }
    }
  }

  /**
   * Rearms the checkpoint timer when a checkpoint ends: the head's remaining batches wait from
   * the oldest of them, and after a failure the same batches are tried again a tick
   * (INDEX_CHECKPOINT_MS) later, not at once.
   */
  private rescheduleCheckpoint(): void {
    clearTimeout(this.checkpointTimer);
    this.checkpointTimer = undefined;
    if (this.checkpointError === undefined) this.scheduleCheckpoint();
    else this.armCheckpoint(performance.now() + this.pace.intervalMs);
  }

  /**
   * One checkpoint: the head's batches go to LMDB, their creates' puts first, then one
   * transaction with their changes and the log position they bring the index to (checkpoint-writer.ts
   * `indexLogged`), and leave the head
   * once that transaction has resolved (reads tolerate the moment they are in both: index-head.ts). lmdb-js flushes the
   * commit afterwards; until then recovery replays these creates from the log.
   * @throws the lmdb error of a failed commit; the batches then stay in the head
   */
  private async commitHead(): Promise<void> {
    const batches = this.head.pending.slice();
    const started = performance.now();
    try {
      await indexBatches(this.dbs, batches, { shipping: this.shipping, present: this.present });
    } catch (err) {
      this.checkpointError = err;
      throw err;
    }
    this.head.drop(batches.length);
    Atomics.add(this.writes, 0, 1);
    this.checkpointError = undefined;
    this.stageTimer?.('index', batches.length, batches.reduce((n, b) => n + b.creates.length + b.changes.length, 0), (performance.now() - started) / 1000);
  }
}
