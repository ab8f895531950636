/**
 * Read access to a store: what every thread that works on a store shares, and all that the rest
 * of src/ may do with a store it did not open for writing. Each writer extends it with its own
 * writes: the HTTP thread's EventStore (group commit, appender, data directory lock, the index
 * head) and the lifecycle worker's LifecycleStore (a cleanup's deletions, the ledger's marks),
 * over the same LMDB environment (LMDB is safe across threads).
 */
import path from 'node:path';
import { BlobReader } from '../log/blob-reader.js';
import { EMPTY_COUNTERS, indexedLogPosition, openDatabases, readCounters, type Counters, type StoreDatabases } from '../index/lmdb-env.js';
import { liveFrameBytes, type FileEntry } from '../log/log-entries.js';
import type { EventRecord } from '../record/event-record.js';
import { decodeRecord, storedJson, type RecordPresenter } from '../index/record-codec.js';
import { StoredFile } from '../log/stored-file.js';
import type { Head } from '../head/head.js';
import { quarantineDirOf, readQuarantine, type QuarantineSummary } from '../log/quarantine.js';
import { BelowCursor, NO_VALUES, ProbeCursor, UnionCursor, type CreatedAtCursor, type Direction } from '../index/created-at-cursors.js';
import { DRAFTS_PREFIX } from '../index/index-keys.js';
import type { IndexSource } from '../index/index-source.js';
import { blocksDirOf, StoredEvents } from './stored-events.js';
import { RecordChecker } from './record-checker.js';

/** How a store is run. */
export interface StoreOptions {
  /**
   * The sinks configured (`cloud`, `nats`): finalized events enter the shipping ledger
   * (sink-ledger.ts); empty, no ledger is kept.
   */
  sinks: readonly string[];
  /**
   * The JSON every record is stored with and older layouts are presented with (record-codec.ts):
   * src/events/present.ts `presentEventJson`, given by the thread's composition root (serve.ts,
   * src/lifecycle/worker.ts); the store knows no wire shape of its own.
   */
  present: RecordPresenter;
}

/** Longest id the store ever issues (a uuid); longer lookups miss without touching LMDB. */
const MAX_ID_LENGTH = 36;

/** A view's LMDB handles and where its log lives: what the store's own modules work with. */
export interface StoreHandles {
  readonly dbs: StoreDatabases;
  /** What checkpoints committed: the live blocks and LMDB's events (stored-events.ts). */
  readonly stored: StoredEvents;
  readonly blobs: BlobReader;
  /** DATA_DIR/blobs, where the log's segment files are. */
  readonly blobsDir: string;
}

/**
 * The key of a view's StoreHandles. Only src/store's own modules import it (src/store/index.ts
 * does not export it, and .dependency-cruiser.cjs holds the rest of src/ to that entry point), so
 * the rest of src/ reads a store through its methods alone; fastify keeps its request's and
 * reply's state behind symbols the same way. A registered symbol (`Symbol.for`), so that a second
 * copy of this module, such as a test's mock import loads, names the same key: it keeps the API
 * narrow, it is no secret.
 */
export const storeHandles = Symbol.for('edge-event-store.store-handles');

export class StoreView {
  protected readonly blobs: BlobReader;
  protected readonly blobsDir: string;
  /** The view's LMDB handles and log layout, for the store's own modules (`storeHandles`). */
  readonly [storeHandles]: StoreHandles;
  readonly stagingDir: string;
  /** The sinks configured (StoreOptions.sinks). */
  readonly sinks: readonly string[];
  /** The record presenter (StoreOptions.present): what `encodeRecord` and `storedJson` are given. */
  readonly present: RecordPresenter;
  /**
   * Creates and updates not yet checkpointed into LMDB (head.ts), merged into every read of this view:
   * the HTTP thread's EventStore has one; a view of the lifecycle worker has none and reads what
   * the last checkpoint committed (docs/STORAGE.md, "The head").
   */
  protected head: Head | undefined;

  /** Checks large records against a read's filter on a worker (record-checker.ts), started at the first. */
  readonly records = new RecordChecker();

  /** What checkpoints committed, as a plan reads it: the live blocks and LMDB (stored-events.ts). */
  protected readonly stored: StoredEvents;

  constructor(protected readonly dbs: StoreDatabases, readonly dataDir: string, storeOptions: StoreOptions) {
    this.stored = new StoredEvents(dbs, blocksDirOf(dataDir));
    this.blobsDir = path.join(dataDir, 'blobs');
    this.stagingDir = path.join(dataDir, 'staging');
    this.blobs = new BlobReader(this.blobsDir);
    this[storeHandles] = { dbs, stored: this.stored, blobs: this.blobs, blobsDir: this.blobsDir };
    this.sinks = storeOptions.sinks;
    this.present = storeOptions.present;
  }

  /** What quarantine/ held when first asked; only an open's recovery adds to it. */
  private quarantined: QuarantineSummary | undefined;

  /**
   * What DATA_DIR/quarantine/ holds: damage the log's replays went past (docs/STORAGE.md,
   * "Damage in the log"). Read once, on the first call after the open (/stats and every /metrics
   * scrape ask): only recovery, before the open returns, writes there.
   * @throws the fs error when quarantine/ cannot be read
   */
  quarantine(): QuarantineSummary {
    this.quarantined ??= readQuarantine(quarantineDirOf(this.dataDir));
    return this.quarantined;
  }

  /** Some sink is configured: finalized events enter the shipping ledger, and cleanup keeps what it holds. */
  get shipping(): boolean {
    return this.sinks.length > 0;
  }

  /**
   * Resolves once every LMDB commit this thread made so far is flushed to disk (docs/STORAGE.md,
   * "What is durable when"): an update made in LMDB (a cleanup deletion, a reset) counts only then.
   * @throws the lmdb error of a failed flush
   */
  protected async flushed(): Promise<void> {
    await this.dbs.root.flushed;
  }

  /** The record of event `id`, or undefined when there is none (any string is accepted). */
  getEvent(id: string): EventRecord | undefined {
    if (id.length === 0 || id.length > MAX_ID_LENGTH) return undefined;
    const createdAt = this.createdAtOf(id);
    return createdAt === undefined ? undefined : this.getRecord(createdAt);
  }

  /** created_at (µs) of event `id`, checkpointed or in the head. */
  private createdAtOf(id: string): number | undefined {
    return this.stored.createdAtOf(id) ?? this.head?.createdAtOf(id);
  }

  /**
   * The presented JSON of event `id` (UTF-8 bytes, the stored bytes for a current record: see
   * record-codec.ts `storedJson`), or undefined when there is none (any string is accepted).
   */
  getEventJson(id: string): Buffer | undefined {
    if (id.length === 0 || id.length > MAX_ID_LENGTH) return undefined;
    const createdAt = this.createdAtOf(id);
    if (createdAt === undefined) return undefined;
    const value = this.eventValue(createdAt);
    return value ? storedJson(value, this.present) : undefined;
  }

  /** The record created at `createdAt` (µs), or undefined. */
  getRecord(createdAt: number): EventRecord | undefined {
    const bytes = this.eventValue(createdAt);
    return bytes ? decodeRecord(bytes) : undefined;
  }

  /**
   * The stored value (record-codec.ts) of the event created at `createdAt` (µs), from the head or
   * as checkpointed (stored-events.ts `value`), with the head's updates to it applied; an LMDB
   * value is valid only until the next LMDB read on this thread (lmdb-env.ts `readEventValue`).
   * @throws BlockDamaged (block-format.ts) when its block's record fails its CRC32C
   */
  eventValue(createdAt: number): Buffer | undefined {
    const { head } = this;
    const own = head?.value(createdAt);
    if (own) return own;
    if (!head?.isUpdated(createdAt)) return this.stored.value(createdAt);
    // The log position is read in the same LMDB snapshot as the value (head.ts `overlay`),
    // and before it: a read reuses the buffer the value is read into.
    const covered = indexedLogPosition(this.dbs);
    const stored = this.stored.value(createdAt);
    return stored && head.overlay(createdAt, stored, covered);
  }

  /**
   * The record of an event in LMDB the head updated, decoded with the head's updates applied (no
   * stored value built: head.ts `overlaidRecord`); undefined once it is deleted.
   */
  private updatedRecord(head: Head, createdAt: number): EventRecord | undefined {
    const covered = indexedLogPosition(this.dbs); // before the value: a read reuses its buffer
    const stored = this.stored.value(createdAt);
    return stored && (head.overlaidRecord(createdAt, stored, covered) ?? decodeRecord(stored));
  }

  /**
   * Resolves once every create from before `cutoff` (µs) is in LMDB, checkpointing the head only
   * when it holds one: for readers of LMDB's own entries, such as the drafts index and the
   * retention prediction (docs/STORAGE.md, "When a checkpoint runs").
   * @throws the lmdb error of a failed checkpoint
   */
  async checkpointedBefore(cutoff: number): Promise<void> {
    const oldest = this.head?.oldest;
    if (oldest !== undefined && oldest < cutoff) await this.checkpointed();
  }

  /** The head holds an update to the event created at `createdAt` (µs) that LMDB's record and index entries may not show yet. */
  updatedInHead(createdAt: number): boolean {
    return this.head?.isUpdated(createdAt) ?? false;
  }

  /**
   * The cursor of `plan` built over LMDB and over the head's own index (index-source.ts), merged:
   * what every list, search and count walks (docs/STORAGE.md, "The head", "Reads"). LMDB's side
   * stops short of the head's oldest create, whose entries a checkpoint may have put in part
   * ("Checkpoint commits"), and skips the LMDB events the head has updated, whose index entries
   * may be stale: those come from the head, within [lo, hi] (µs), each checked with `accepts` on
   * its record as updated.
   */
  withHead(plan: (source: IndexSource) => CreatedAtCursor, lo: number, hi: number, direction: Direction, accepts: (record: EventRecord) => boolean): CreatedAtCursor {
    const stored = plan(this.stored);
    const { head } = this;
    if (!head || head.empty) return stored;
    const below = new BelowCursor(stored, () => head.oldest, direction);
    const lmdbSide = head.hasUpdates ? new ProbeCursor(below, [(ts) => !head.isUpdated(ts)], direction) : below;
    const headSide = this.inHead(plan, lo, hi, direction, accepts);
    return headSide === NO_VALUES ? lmdbSide : new UnionCursor([lmdbSide, headSide], direction);
  }

  /**
   * The head's side of `withHead` alone: `plan` over the head's index, and the LMDB events the
   * head has updated within [lo, hi] (µs) whose record as updated passes `accepts`.
   */
  inHead(plan: (source: IndexSource) => CreatedAtCursor, lo: number, hi: number, direction: Direction, accepts: (record: EventRecord) => boolean): CreatedAtCursor {
    const { head } = this;
    if (!head || head.empty) return NO_VALUES;
    const created = plan(head.index);
    if (!head.hasUpdates) return created;
    return new UnionCursor([created, head.updatedCursor(lo, hi, direction, (ts) => this.updatedRecord(head, ts), accepts)], direction);
  }

  /**
   * Events the head creates or finalizes when sinks are configured: they enter the shipping
   * ledger with the checkpoint that commits them (sink-ledger.ts), so a backlog counts them
   * meanwhile. `oldest` is the created_at (µs) of the oldest, null when there is none.
   */
  headShippable(): { events: number; oldest: number | null } {
    if (!this.head || !this.shipping) return { events: 0, oldest: null };
    const finalized = (source: IndexSource) => new ProbeCursor(source.eventRange(-Infinity, Infinity, 'asc'), [(ts) => !source.has(DRAFTS_PREFIX, ts)], 'asc');
    const oldest = this.inHead(finalized, -Infinity, Infinity, 'asc', (record) => !record.draft).seek(-Infinity) ?? null;
    return { events: this.head.addTo(EMPTY_COUNTERS, indexedLogPosition(this.dbs), (ts) => this.stored.holds(ts)).uploadsPending, oldest };
  }

  /** Oldest and newest created_at (µs) of the events in the head, or undefined when it is empty. */
  headBounds(): { oldest: number; newest: number } | undefined {
    const oldest = this.head?.oldest;
    return oldest === undefined ? undefined : { oldest, newest: this.head!.newest! };
  }

  /**
   * created_at (µs) of the oldest event created at or after `from` (µs), in LMDB or in the head;
   * undefined when there is none. A sink's backlog (docs/API.md, "Statistics") counts events
   * acknowledged a moment ago, which are still in the head until the next checkpoint.
   */
  oldestEventFrom(from: number): number | undefined {
    const [stored] = this.stored.createdAts({ from, limit: 1 });
    const inHead = this.head?.empty === false ? this.head.index.eventRange(from, Infinity, 'asc').seek(from) : undefined;
    if (stored === undefined || inHead === undefined) return stored ?? inHead;
    return Math.min(stored, inHead);
  }

  /** Where file `fileId` lives in the log, or undefined when there is no such file (inside the store only). */
  getFile(fileId: string): FileEntry | undefined {
    if (fileId.length === 0 || fileId.length > MAX_ID_LENGTH) return undefined;
    const stored = this.dbs.files.get(fileId);
    if (stored || !this.head) return stored;
    const entry = this.head.file(fileId);
    // A file attached in the head to an event a cleanup has since deleted is gone with its event.
    return entry && (this.head.holds(entry.event) || this.stored.holds(entry.event)) ? entry : undefined;
  }

  /**
   * File `fileId` to read (docs/STORAGE.md, "Reading files"): its kind, size, content type and
   * bytes; undefined when there is no such file (any string is accepted).
   */
  openFile(fileId: string): StoredFile | undefined {
    const entry = this.getFile(fileId);
    return entry && new StoredFile(fileId, entry, this.blobs, (id) => this.getFile(id));
  }

  /** Closes the cached handles of segments the lifecycle worker deleted (their numbers, opaque outside the store). */
  segmentsDeleted(segments: number[]): void {
    for (const segment of segments) void this.blobs.forget(segment);
  }

  /** The maintained counters (events, images, drafts, files, live blob bytes). */
  counters(): Counters {
    const counters = readCounters(this.dbs);
    // One read snapshot: the counters and the log position they cover.
    return this.head ? this.head.addTo(counters, indexedLogPosition(this.dbs), (ts) => this.stored.holds(ts)) : counters;
  }

  /**
   * Resolves once every create and update acknowledged so far is in LMDB (docs/STORAGE.md, "The
   * head"): an update made in LMDB (reset, retirement, compaction, a cleanup) waits for it,
   * so it never races one still in the head. A view without a head has nothing to wait for.
   * @throws the lmdb error of a failed checkpoint
   */
  async checkpointed(): Promise<void> {}

  /**
   * Reads of this thread that met a damaged page of the index since the store started
   * (docs/STORAGE.md, "A damaged index"): /health is degraded once one did; /stats `index_damage`.
   * Times in ms since the epoch.
   */
  readonly indexDamage = { readsFailed: 0, lastError: null as string | null, lastAt: null as number | null };

  /**
   * Notes a read that met a damaged page of the index (its error, errors.ts `index_damaged`) and
   * renews this thread's read transaction, so the reads after it start from a fresh snapshot
   * rather than the one that failed (lmdb-js README, "resetReadTxn").
   */
  noteIndexDamage(err: Error): void {
    this.indexDamage.readsFailed++;
    this.indexDamage.lastError = (err.cause instanceof Error ? err.cause.message : undefined) ?? err.message;
    this.indexDamage.lastAt = Date.now();
    this.dbs.root.resetReadTxn();
  }

  /** Bytes of LMDB pages in use: the branch, leaf and overflow pages of every database. */
  lmdbBytes(): number {
    let pages = 2; // the two meta pages
    for (const db of [this.dbs.events, this.dbs.eventIds, this.dbs.index, this.dbs.files, this.dbs.segments, this.dbs.recordFrames, this.dbs.tombstones, this.dbs.meta, this.dbs.blocks, this.dbs.blockHidden]) {
      const stats = db.getStats() as { treeBranchPageCount: number; treeLeafPageCount: number; overflowPages: number };
      pages += stats.treeBranchPageCount + stats.treeLeafPageCount + stats.overflowPages;
    }
    return pages * (this.dbs.root.getStats() as { pageSize: number }).pageSize;
  }

  /**
   * Bytes of the log's frames that live events and needed tombstones depend on (docs/STORAGE.md,
   * "Two copies of every record"): the log's copy of every record, as the segments count it
   * (frame-accounting.ts `liveFrameBytes`); the head's creates count from their checkpoint on.
   */
  recordCopyBytes(): number {
    let bytes = 0;
    for (const { value } of this.dbs.segments.getRange()) bytes += liveFrameBytes(value);
    return bytes;
  }

  /**
   * Bytes of the live blocks' rows (docs/STORAGE.md, "Blocks in the running store"): each block's
   * size as the catalogue lists it, times the share of its rows not hidden. A deletion lowers it at
   * once, as it lowers the live blob bytes, before a merge gives the file's bytes back.
   */
  blockBytes(): number {
    let bytes = 0;
    for (const { key, value } of this.dbs.blocks.getRange()) {
      const hidden = this.dbs.blockHidden.getKeysCount({ start: key, end: value.newest + 1 });
      bytes += value.bytes * (1 - hidden / value.rows);
    }
    return Math.round(bytes);
  }

  /** total_storage_bytes (docs/STORAGE.md, "Reclaiming space"): live blob bytes + the log's record copies + the live blocks' rows + LMDB pages in use. */
  storageBytes(): number {
    return this.counters().liveBlobBytes + this.recordCopyBytes() + this.blockBytes() + this.lmdbBytes();
  }

  /** Closes the view's file handles and LMDB environment. */
  async close(): Promise<void> {
    await this.records.close();
    await this.blobs.close();
    this.stored.close();
    await this.dbs.root.close();
  }
}

/**
 * A read-only view of the store in `dataDir`, for a thread that only reads it (the dataset
 * export's worker: src/export/export-worker.ts), while the HTTP thread's EventStore has it open
 * and holds its lock (none is taken here). It has no head: it reads what the last checkpoint
 * committed (EventStore.checkpointed first, to see every acknowledged create and update). Close
 * it when done.
 * @throws the lmdb error when the environment cannot be opened
 */
export function openStoreView(dataDir: string, options: StoreOptions): StoreView {
  return new StoreView(openDatabases(dataDir), dataDir, options);
}
