/** Messages between the HTTP thread and the lifecycle worker. */
import type { ErrorReport } from '../errors.js';
import type { EventChange, ScrubStatus } from '../store/index.js';
import type { CleanupResult } from './cleanup.js';
import type { SinkProgress } from './sink-runner.js';
import type { WriterJobDone, WriterJobRequest } from './writer-jobs.js';

export type ToWorker =
  | { type: 'cleanup'; id: number }
  /** A job the worker asked of the store's writer is done (writer-jobs.ts). */
  | WriterJobDone
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
  /** A job asked of the store's writer, which the HTTP thread holds (writer-jobs.ts). */
  | WriterJobRequest
  /** A sink shipped, failed, stalled or moved again (/stats `sinks`, /metrics). */
  | { type: 'sink-progress'; progress: SinkProgress }
  /** The scrub's figures after a step (/stats `scrub`, /metrics; docs/STORAGE.md, "The scrub"). */
  | { type: 'scrub-status'; status: ScrubStatus }
  /** Changes the worker made to events (cleanup deletions), for the live stream. */
  | { type: 'changes'; changes: EventChange[] }
  | { type: 'stopped' };
