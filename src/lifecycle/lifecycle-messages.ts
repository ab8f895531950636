/** Messages between the HTTP thread and the lifecycle worker. */
import type { ErrorReport } from '../errors.js';
import type { EventChange } from '../store/index.js';
import type { StoreUsage } from './capacity.js';
import type { CleanupResult } from './cleanup.js';
import type { SinkProgress } from './sink-runner.js';

export type ToWorker =
  | { type: 'cleanup'; id: number }
  /**
   * A job the worker asked of the store's writer is done (ToMain `retire-segment`,
   * `compact-segment`, `checkpoint`, `sweep-drafts`, `usage`); `failed`: a checkpoint or the sweep
   * failed, with its message; `closed`: the drafts the sweep closed; `usage`: the store's usage.
   */
  | { type: 'writer-done'; id: number; failed?: string; closed?: number; usage?: StoreUsage }
  | { type: 'stop' };

export type ToMain =
  | { type: 'ready' }
  | { type: 'cleanup-done'; id: number; result: CleanupResult }
  /** Every cleanup run, automatic or manual, once it ended (/stats `last_cleanup`, /metrics); `finishedAt` in ms since the epoch. */
  | { type: 'cleanup-ran'; result: CleanupResult; finishedAt: number }
  /** `cause`: the worker's error, as data (an Error's own fields do not survive postMessage). */
  | { type: 'cleanup-failed'; id: number; message: string; cause: ErrorReport }
  /** Segment files deleted: the HTTP thread closes its handles so their space is freed. */
  | { type: 'reclaimed'; segments: number[] }
  /** The active segment holds no live blob: stop appending to it and seal it (EventStore.retireSegment). */
  | { type: 'retire-segment'; id: number; segment: number }
  /** A segment's live share fell low: copy its live blobs forward (EventStore.compactSegment). */
  | { type: 'compact-segment'; id: number; segment: number }
  /**
   * Commit the index head to LMDB (EventStore.checkpointed; docs/STORAGE.md, "The index head"), so
   * a cleanup sees every event acknowledged before it began.
   */
  | { type: 'checkpoint'; id: number }
  /**
   * Run the auto-finalize sweep (draft-sweeper.ts) for drafts created before `cutoff` (µs): the
   * HTTP thread's store logs every change to an event (docs/STORAGE.md, "Changes to events").
   */
  | { type: 'sweep-drafts'; id: number; cutoff: number }
  /**
   * Report the store's usage as the HTTP thread's view counts it, with the index head
   * (capacity.ts): the worker's own view sees only what checkpoints committed, up to five
   * minutes late when creates come slowly (docs/STORAGE.md, "When a checkpoint runs").
   */
  | { type: 'usage'; id: number }
  /** A sink shipped, failed, stalled or moved again (/stats `sinks`, /metrics). */
  | { type: 'sink-progress'; progress: SinkProgress }
  /** Changes the worker made to events (cleanup deletions), for the live stream. */
  | { type: 'changes'; changes: EventChange[] }
  | { type: 'stopped' };
