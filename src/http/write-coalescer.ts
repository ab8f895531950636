/**
 * Coalesces the frames a streamed response is handed within one turn of the event loop into one
 * write at its end. The live stream's messages arrive in bursts: an index commit announces each
 * of its events in turn (docs/ARCHITECTURE.md, "The live stream"), and writing every message to
 * every subscriber as it comes costs one send(2) per event per subscriber; coalesced, it is one
 * per subscriber per commit, and the 201s of that commit are not delayed behind them.
 */
export class WriteCoalescer {
  private frames: Buffer[] = [];
  private scheduled = false;
  /** The last write found the client behind, and it has not caught up since (`caughtUp`). */
  private behind = false;

  /**
   * @param write writes the frames together, in order; false when the client is behind (the
   *   frames were still taken)
   */
  constructor(private readonly write: (frames: Buffer[]) => boolean) {}

  /**
   * Takes `frame` for the write at the end of this turn.
   * @returns false when the client is behind (the frame was still taken)
   */
  add(frame: Buffer): boolean {
    this.frames.push(frame);
    if (!this.scheduled) {
      this.scheduled = true;
      queueMicrotask(() => this.flush());
    }
    return !this.behind;
  }

  /** Writes what was taken now (before a last frame, or the end of the response). */
  flush(): void {
    this.scheduled = false;
    if (this.frames.length === 0) return;
    const frames = this.frames;
    this.frames = [];
    if (!this.write(frames)) this.behind = true;
  }

  /** The client took what was written. */
  caughtUp(): void {
    this.behind = false;
  }
}
