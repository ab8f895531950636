/**
 * The head's checkpoints (docs/STORAGE.md, "The head", "When a checkpoint runs"):
 * when they run (checkpoint-pace.ts), one at a time, and again a tick later after a failure. What
 * a checkpoint writes is the engine's (`commit`): the checkpointer only hands it the head's
 * batches and drops them from the head once it resolves.
 */
import { checkpointWaitMs, type CheckpointPace } from './checkpoint-pace.js';
import type { HeadBatch, Head } from './head.js';

/** What the checkpointer is given. */
export interface CheckpointerOptions {
  /** The settings of the pace, read at each scheduling (`shipping` may differ as sinks are configured). */
  pace: () => CheckpointPace;
  /**
   * Commits `batches`, the head's oldest, to LMDB (engine/checkpoint-writer.ts); resolves once
   * they are in it.
   * @throws the lmdb error of a failed commit: the batches stay in the head
   */
  commit: (batches: HeadBatch[]) => Promise<void>;
  /** Told the failure of a checkpoint the timer ran (nobody awaits it). */
  onError: (err: unknown) => void;
}

/** Runs the checkpoints of one head. */
export class Checkpointer {
  /** The checkpoint under way, if any: one at a time. */
  private run: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** When the armed timer fires (`performance.now()`, ms). */
  private at = 0;
  private closed = false;
  /** Why the last checkpoint failed; cleared by the next one that succeeds. */
  private failure: unknown;

  constructor(private readonly head: Head, private readonly options: CheckpointerOptions) {}

  /** Why the last checkpoint failed, or undefined once one succeeded since. */
  get error(): unknown {
    return this.failure;
  }

  /**
   * Arranges the next checkpoint, `checkpointWaitMs` after the head's oldest batch arrived: at
   * once at the size trigger, sooner as the head fills. An armed timer that fires sooner is kept;
   * a run under way schedules the next itself when it ends.
   */
  schedule(): void {
    const since = this.head.since;
    if (since === undefined || this.run) return;
    this.arm(since + checkpointWaitMs(this.head, this.options.pace()));
  }

  /**
   * Commits every batch in the head at the time of the call, one checkpoint at a time.
   * @throws the lmdb error of this caller's own failed checkpoint (a failure of another
   *   caller's run is retried here)
   */
  async checkpoint(): Promise<void> {
    const pending = this.head.pending;
    const target = pending[pending.length - 1];
    while (target && this.head.pending.includes(target)) {
      if (this.run) {
        await this.run.catch(() => undefined);
        continue;
      }
      this.run = this.commitHead();
      try {
        await this.run;
      } finally {
        this.run = undefined;
        this.reschedule();
      }
    }
  }

  /** Stops the timer for good; `checkpoint` still runs when called (the last one, at close). */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** One checkpoint: the head's batches at its start, dropped from the head once committed. */
  private async commitHead(): Promise<void> {
    const batches = this.head.pending.slice();
    try {
      await this.options.commit(batches);
    } catch (err) {
      this.failure = err;
      throw err;
    }
    this.head.drop(batches.length);
    this.failure = undefined;
  }

  /** Sets the timer to fire at `at` (`performance.now()`, ms) unless it already fires sooner. */
  private arm(at: number): void {
    if (this.closed || (this.timer !== undefined && at >= this.at)) return;
    clearTimeout(this.timer);
    this.at = at;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.checkpoint().catch(this.options.onError);
    }, Math.max(0, at - performance.now()));
    this.timer.unref();
  }

  /**
   * Rearms the timer when a checkpoint ends: the head's remaining batches wait from the oldest of
   * them, and after a failure the same batches are tried again a tick (INDEX_CHECKPOINT_MS)
   * later, not at once.
   */
  private reschedule(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.failure === undefined) this.schedule();
    else this.arm(performance.now() + this.options.pace().intervalMs);
  }
}
