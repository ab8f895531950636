/**
 * What the writer (event-store.ts) is given and what it reports: its settings, how an open found
 * the store, what a create returns, and the timing of its write stages.
 */
import type { StoreOptions } from '../read/store-view.js';
import type { BackfillProgress } from '../index/search-index.js';
import type { QuarantinedBytes } from '../log/quarantine.js';
import type { SkippedCreate } from './log-replay.js';
import type { ClockJumpReport } from './store-clock.js';
import type { UpgradeProgress, UpgradeReport } from './record-copies-upgrade.js';

/** What a durable create returns. `created_at` in µs. */
export interface CreatedEvent {
  id: string;
  image_ids: string[];
  created_at: number;
  draft: boolean;
}

/** How the last open found the store (docs/STORAGE.md, "Recovery"). */
export interface OpenReport {
  /** Creates replayed from the log into the head (or checkpointed during a long replay). */
  replayed: number;
  /** Updates to events (finalize, attach) replayed likewise (applied, or dropped with their event deleted). */
  changesReplayed: number;
  /** Creates the replay went past (recovery.ts SkippedCreate): whole frames it could not index. */
  skipped: SkippedCreate[];
  /** Damage in the log this open found and quarantined (docs/STORAGE.md, "Damage in the log"). */
  quarantined: QuarantinedBytes[];
  /** What the upgrade to record copies did at this open (record-copies-upgrade.ts); absent when none ran. */
  upgraded?: UpgradeReport;
  /** Time the open took (ms). */
  ms: number;
}

/** Told how long a round of a write stage took (s), with the batches and the creates and updates of the round. */
export type StageListener = (stage: 'log' | 'index', batches: number, events: number, seconds: number) => void;

/** Settings of the write path. */
export interface EventStoreOptions extends StoreOptions {
  /**
   * Reports a failure of work done outside any request, named by `task`: `change listener` (a
   * listener of the change feed threw), `index checkpoint`, `store clock` and `running time save`
   * (the saved running time, docs/STORAGE.md, "A clock that jumps"), `search index backfill` (it
   * resumes at the next start). The store keeps serving; a failed checkpoint is tried again.
   */
  onBackgroundError?: (err: unknown, task: string) => void;
  /** Told as the search index backfill advances (search-index.ts), and when it is done. */
  onSearchIndexProgress?: (progress: BackfillProgress, done: boolean) => void;
  /** Told as the upgrade to record copies reads the log (record-copies-upgrade.ts), after each segment. */
  onRecordCopiesProgress?: (progress: UpgradeProgress) => void;
  /** Told each jump of the wall clock the store finds (docs/STORAGE.md, "A clock that jumps"), to log. */
  onClockJump?: (jump: ClockJumpReport) => void;
  /**
   * How long a create waits in the head before a checkpoint commits it to LMDB once the
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
