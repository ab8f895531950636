/**
 * Where a small append is written (docs/STORAGE.md, "Small appends on the calling thread"): on the
 * calling thread, the HTTP thread, or on a thread of Node's pool.
 *
 * A small append into zeros written ahead is one `O_DSYNC` overwrite of a block or two. On a
 * 2-vCPU box the hand-over to a pool thread and back costs about as much as that write itself
 * (0.28 ms through the pool against 0.13 ms made directly), and one request in flight pays it on
 * every create. But while the calling thread writes it answers nothing else, and a slow card can
 * take milliseconds to sync. So a small append is written on the calling thread only while the
 * recent durations of small appends stay under INLINE_BOUND_MS. "Recent" is a decaying peak: a
 * slower append sets it at once, faster ones pull it down by an eighth of the gap each. The first
 * append goes to the pool, so a slow device is timed there, and stays there; on a fast one a
 * single slow sync sends the next few dozen appends to the pool.
 */

/** Duration (ms) of recent small appends under which they are written on the calling thread. */
export const INLINE_BOUND_MS = 1;

/** A faster append pulls the recent duration down by 1 / DECAY_SPAN of the gap. */
const DECAY_SPAN = 8;

/** Chooses the thread of each small append and times it. */
export class AppendPace {
  /** Recent small appends' duration (ms), both ways of writing: a decaying peak. */
  private recentMs = INLINE_BOUND_MS;

  /** @param now a clock in ms (tests pass their own) */
  constructor(private readonly now: () => number = () => performance.now()) {}

  /** True when the next small append is written on the calling thread. */
  get inline(): boolean {
    return this.recentMs < INLINE_BOUND_MS;
  }

  /**
   * Writes one small append: `inline()` on this thread while `inline` holds, else `pooled()`;
   * either way it is timed.
   * @throws what the write throws (as a rejection)
   */
  async write(inline: () => void, pooled: () => Promise<void>): Promise<void> {
    const began = this.now();
    try {
      if (this.inline) inline();
      else await pooled();
    } finally {
      const ms = this.now() - began;
      this.recentMs = ms >= this.recentMs ? ms : this.recentMs + (ms - this.recentMs) / DECAY_SPAN;
    }
  }
}
