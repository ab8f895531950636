/**
 * Reusable buffers of one size for file reads (file-download.ts). A fresh 1 MiB buffer per
 * Range answer is external memory V8 counts towards its next full garbage collection: measured
 * on the Range workload (native-bench/PROFILE.md, "Range answers from pooled buffers"), one
 * mark-compact every ~30 answers. A buffer goes back to the pool only once the HTTP engine has
 * let it go (`released` of ResponseStream.write, exchange.ts); one never given back is simply
 * left to the garbage collector, so a lost release costs an allocation, never a corrupted answer.
 */

export class BufferPool {
  private readonly free: Buffer[] = [];

  /**
   * @param size bytes of every buffer
   * @param maxFree buffers kept for reuse at most; more given back are dropped
   */
  constructor(readonly size: number, private readonly maxFree: number) {}

  /** A buffer of `size` bytes, reused when one is free (its content is stale: overwrite it). */
  acquire(): Buffer {
    return this.free.pop() ?? Buffer.allocUnsafeSlow(this.size);
  }

  /**
   * Gives `buffer` back. Only once nothing reads it any more: the next `acquire` may overwrite it.
   * @param buffer a buffer this pool's `acquire` returned (another one is ignored)
   */
  release(buffer: Buffer): void {
    if (buffer.length === this.size && this.free.length < this.maxFree && !this.free.includes(buffer)) this.free.push(buffer);
  }

  /** Buffers free for reuse now. */
  get freeCount(): number {
    return this.free.length;
  }
}
