/**
 * The lifecycle worker's handle on the store (docs/ARCHITECTURE.md, "Threads"): a read-only
 * StoreView with no head, and the writes the worker makes, which no other thread makes: a
 * cleanup's deletions, the consistency pass, giving back recycled segment files, the ledger's
 * shipped marks and the saved running time. Changes to events it makes are handed to `announce`
 * once durable (the worker forwards them to the HTTP thread's feed, store-changes.ts).
 */
import { openDatabases, type StoreDatabases } from '../index/lmdb-env.js';
import { releaseRecycledIfLow } from '../log/segment-files.js';
import { markShipped } from '../ledger/sink-ledger.js';
import type { DeletionReason, StoreChange } from '../record/store-changes.js';
import { StoreView, type StoreOptions } from '../read/store-view.js';
import { checkConsistency, type ConsistencyReport } from './consistency.js';
import { upgradeStep, type UpgradeReport } from './blocks-upgrade.js';
import { deleteFiles, deleteRecords, type DeletionTally, type FileRef, reclaimSegments, type TombstoneLogger } from './event-deletion.js';
import { saveRunningTime } from './store-clock.js';
import { mergeStep, type MergeReport } from './block-merges.js';

export class LifecycleStore extends StoreView {
  private constructor(dbs: StoreDatabases, dataDir: string, options: StoreOptions, private readonly announce: (change: StoreChange) => void) {
    super(dbs, dataDir, options);
  }

  /**
   * Opens the worker's handle on the store in `dataDir`, which the HTTP thread's EventStore has
   * opened and holds the lock of (no lock taken here).
   * @param announce given each change to events this handle makes, once flushed
   * @throws the lmdb error when the environment cannot be opened
   */
  static open(dataDir: string, options: StoreOptions, announce: (change: StoreChange) => void): LifecycleStore {
    return new LifecycleStore(openDatabases(dataDir), dataDir, options, announce);
  }

  /**
   * Deletes whole records created at `createdAts` (µs) and every file of theirs in one durable
   * commit after logging their tombstones, announcing each (event-deletion.ts `deleteRecords`;
   * docs/API.md, "Cleanup and reset").
   * @param logTombstones asks the writer to log the tombstones (EventStore.logTombstones)
   * @throws the error of logging the tombstones or the lmdb error of a failed commit (nothing is deleted then)
   */
  deleteRecords(createdAts: number[], reason: Exclude<DeletionReason, 'reset'>, logTombstones: TombstoneLogger): Promise<DeletionTally> {
    return deleteRecords(this, createdAts, reason, this.announce, logTombstones);
  }

  /**
   * Deletes files and keeps their records (event-deletion.ts `deleteFiles`; docs/API.md, "Cleanup
   * and reset": storage).
   * @throws the lmdb error of a failed commit (nothing is deleted then)
   */
  deleteFiles(files: FileRef[]): Promise<DeletionTally> {
    return deleteFiles(this, files);
  }

  /**
   * Deletes segment files with no live blob, asking the writer to retire or compact the ones it
   * holds (event-deletion.ts `reclaimSegments`; docs/STORAGE.md, "Reclaiming space").
   * @returns the numbers of the segments deleted
   * @throws the fs or lmdb error of a step; what was deleted before it stays deleted
   */
  reclaimSegments(retire?: (segment: number) => Promise<void>, compact?: (segment: number) => Promise<void>, filesDeleted = false): Promise<number[]> {
    return reclaimSegments(this, retire, compact, filesDeleted);
  }

  /**
   * Runs one merge of live blocks when one is due (block-merges.ts `mergeStep`; docs/STORAGE.md,
   * "Blocks"): the worker's alone, so two merges never race.
   * @returns what it did, or undefined when none was due
   * @throws as `mergeStep`
   */
  mergeBlocks(): Promise<MergeReport | undefined> {
    return mergeStep(this.stored, this.present, () => this.flushed());
  }

  /**
   * Runs one step of the upgrade of a store of the engine before blocks, when LMDB holds events
   * it moves (blocks-upgrade.ts `upgradeStep`; docs/STORAGE.md, "The upgrade into blocks"): the
   * worker's alone, queued with the merges.
   * @returns what it did, or undefined when nothing is left to move
   * @throws as `upgradeStep`
   */
  upgradeToBlocks(): Promise<UpgradeReport | undefined> {
    return upgradeStep(this.stored, this.present, () => this.flushed());
  }

  /**
   * Runs the consistency pass (consistency.ts `checkConsistency`).
   * @param now the time (ms since the epoch), for the ages of staging and orphan files
   * @param removeOrphans remove segment files LMDB does not know (false while the writer's head may hold one)
   */
  checkConsistency(now?: number, removeOrphans?: boolean): Promise<ConsistencyReport> {
    return checkConsistency(this, now, removeOrphans);
  }

  /**
   * Gives the recycled segment files back to a disk that filled after they were kept
   * (segment-files.ts `releaseRecycledIfLow`; docs/STORAGE.md, "Recycled segments").
   * @returns how many were removed
   * @throws the fs error of a failed listing, statfs or removal
   */
  releaseRecycledIfLow(): Promise<number> {
    return releaseRecycledIfLow(this.blobsDir);
  }

  /**
   * Marks `sink`'s ledger entries shipped through seq `through` (sink-ledger.ts `markShipped`;
   * docs/OPERATIONS.md, "Sinks").
   * @param deadLettered created_at (µs) of events the sink gave up on
   * @param sinks every sink configured: an entry all of them shipped leaves the ledger
   * @returns at the commit, not its flush: shipping is at least once, so a cut only re-ships
   * @throws the lmdb error of a failed commit (the cursor stays where it was)
   */
  markShipped(sink: string, through: number, deadLettered: number[], sinks: readonly string[]): Promise<void> {
    return markShipped(this, sink, through, deadLettered, sinks);
  }

  /**
   * Saves the store's running time (store-clock.ts `saveRunningTime`).
   * @throws the lmdb error of a failed commit
   */
  saveRunningTime(): Promise<void> {
    return saveRunningTime(this);
  }
}
