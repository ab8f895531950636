/**
 * When the head is checkpointed (docs/STORAGE.md, "When a checkpoint runs"): the settings'
 * defaults, the size trigger and the wait of a head of a given size. The policy alone: the timer
 * and the runs are checkpointer.ts's.
 */

/**
 * How long the head waits before a checkpoint by default once it holds CHECKPOINT_BATCH_ENTRIES,
 * or whenever a sink ships from LMDB (ms; INDEX_CHECKPOINT_MS; docs/STORAGE.md, "When a checkpoint runs").
 */
export const DEFAULT_CHECKPOINT_MS = 1000;

/**
 * How long a head holding fewer entries than CHECKPOINT_BATCH_ENTRIES waits by default (ms;
 * INDEX_CHECKPOINT_MAX_MS; docs/STORAGE.md, "When a checkpoint runs"). Five minutes: at 10 small
 * events a second a checkpoint comes every 200 s (the batch) instead of every 60 s, and writes 23%
 * fewer device bytes per event on a grown store (native-bench/PROFILE.md, "The checkpoint's wait
 * at a pipeline's pace, by turns").
 */
export const DEFAULT_CHECKPOINT_MAX_MS = 300_000;

/**
 * Creates and updates worth a checkpoint at INDEX_CHECKPOINT_MS (docs/STORAGE.md, "When a
 * checkpoint runs"): a checkpoint writes every B-tree page its entries land on, nearly as many
 * for ten creates as for thousands, so a slowly filling head waits for more. About a second of
 * one request in flight on the bench's machine, so the pace at that load and above is unchanged.
 */
export const CHECKPOINT_BATCH_ENTRIES = 2000;

/**
 * The longest a head holding CHECKPOINT_BATCH_ENTRIES waits (ms), INDEX_CHECKPOINT_MS if shorter
 * (docs/STORAGE.md, "When a checkpoint runs"). Under load the head fills a batch in well under a
 * second, and a checkpoint of several batches at once puts a burst of LMDB pages on the device
 * before the log's syncs: at 50 connections, checkpoints of 2,000-odd creates every 250 ms instead
 * of 8,000-odd every second cut the creates' p99 from 58 to 32 ms and the HTTP thread's longest
 * stall from 72 to 29 ms, with the same events/s, CPU and bytes per event, and changed nothing at
 * 1 and 4 in flight, where a batch takes longer than this to fill (native-bench/PROFILE.md, "The
 * tail at 50 connections").
 */
export const FULL_BATCH_WAIT_MS = 250;

/**
 * The size trigger of a checkpoint (docs/STORAGE.md, "The head"): a head holding this many
 * creates and updates, or this many bytes of records, is checkpointed at once instead of at the
 * next tick; a replay holding as many checkpoints them before the store serves (recovery.ts).
 */
const CHECKPOINT_ENTRIES = 20_000;
const CHECKPOINT_RECORD_BYTES = 16 * 1024 * 1024;

/**
 * True when `entries` creates and updates holding `bytes` of records (as Head counts them)
 * reach the size trigger of a checkpoint.
 */
export function checkpointDue({ entries, bytes }: { entries: number; bytes: number }): boolean {
  return entries >= CHECKPOINT_ENTRIES || bytes >= CHECKPOINT_RECORD_BYTES;
}

/** When the checkpoints of a store run (docs/STORAGE.md, "When a checkpoint runs"). */
export interface CheckpointPace {
  /** Wait of a head holding CHECKPOINT_BATCH_ENTRIES (ms; INDEX_CHECKPOINT_MS). */
  intervalMs: number;
  /** Wait of a head holding fewer (ms; INDEX_CHECKPOINT_MAX_MS); never shorter than `intervalMs`. */
  maxMs: number;
  /** A sink ships from LMDB (cloud, NATS): it sees an event once checkpointed, so every head waits `intervalMs`. */
  shipping: boolean;
}

/**
 * How long after its oldest batch arrived a head of `entries` creates and updates holding
 * `bytes` of records is checkpointed (ms): 0 at the size trigger (`checkpointDue`);
 * FULL_BATCH_WAIT_MS (or `intervalMs`, if shorter) from CHECKPOINT_BATCH_ENTRIES on;
 * `intervalMs` when shipping; else `maxMs`.
 */
export function checkpointWaitMs(head: { entries: number; bytes: number }, pace: CheckpointPace): number {
  if (checkpointDue(head)) return 0;
  if (head.entries >= CHECKPOINT_BATCH_ENTRIES) return Math.min(pace.intervalMs, FULL_BATCH_WAIT_MS);
  if (pace.shipping) return pace.intervalMs;
  return Math.max(pace.intervalMs, pace.maxMs);
}
