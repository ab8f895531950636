/**
 * The live blocks of a store read as one index (docs/STORAGE.md, "Blocks"): blocks hold disjoint
 * stretches of created_at (a checkpoint's block starts after the last one's, a merge replaces the
 * blocks it read), so a plan's cursor walks them one after another in its direction, and opens a
 * block's cursor only when it reaches it: a list of the 50 newest events reads the newest block's
 * postings alone, as Prometheus's querier reads only the blocks a query's time range overlaps.
 */
import type { Key } from 'lmdb';
import { NO_VALUES, type CreatedAtCursor, type Direction } from '../index/created-at-cursors.js';
import type { IndexSource } from '../index/index-source.js';
import type { BlockReader } from './block-reader.js';

/** Blocks in created_at order, read as one index. */
export class BlockSet implements IndexSource {
  /**
   * @param blocks open blocks, oldest first
   * @throws Error when two blocks' stretches of created_at overlap or come out of order
   */
  constructor(readonly blocks: readonly BlockReader[]) {
    for (let i = 1; i < blocks.length; i++) {
      if (!(blocks[i].bounds().oldest > blocks[i - 1].bounds().newest)) throw new Error(`blocks ${blocks[i - 1].file} and ${blocks[i].file} overlap or are out of order`);
    }
  }

  bounds(): { oldest: number; newest: number } | undefined {
    const { blocks } = this;
    return blocks.length === 0 ? undefined : { oldest: blocks[0].bounds().oldest, newest: blocks[blocks.length - 1].bounds().newest };
  }

  keyRange(prefix: readonly Key[], lo: number, hi: number, direction: Direction): CreatedAtCursor {
    return this.chain(lo, hi, direction, (block) => block.keyRange(prefix, lo, hi, direction));
  }

  eventRange(lo: number, hi: number, direction: Direction): CreatedAtCursor {
    return this.chain(lo, hi, direction, (block) => block.eventRange(lo, hi, direction));
  }

  has(prefix: readonly Key[], createdAt: number): boolean {
    return this.blockOf(createdAt)?.has(prefix, createdAt) ?? false;
  }

  estimate(prefixes: readonly (readonly Key[])[], lo: number, hi: number): number {
    return this.overlapping(lo, hi).reduce((total, block) => total + block.estimate(prefixes, lo, hi), 0);
  }

  /** Some block has a row created at `createdAt` (µs). */
  holds(createdAt: number): boolean {
    return this.blockOf(createdAt)?.holds(createdAt) ?? false;
  }

  /**
   * The layout-2 record of the event created at `createdAt` (µs), or undefined when no block holds
   * it: a view valid until the next block record read on this thread (block-reader.ts `record`).
   * @throws BlockDamaged (block-format.ts) when it fails its CRC32C
   */
  record(createdAt: number): Buffer | undefined {
    return this.blockOf(createdAt)?.record(createdAt);
  }

  /** The created_at (µs) of the event `id` (a canonical UUID), or undefined; the newest blocks are asked first. */
  createdAtOf(id: string): number | undefined {
    for (let i = this.blocks.length - 1; i >= 0; i--) {
      const createdAt = this.blocks[i].createdAtOf(id);
      if (createdAt !== undefined) return createdAt;
    }
    return undefined;
  }

  /** The block whose stretch holds `createdAt` (µs), if any. */
  private blockOf(createdAt: number): BlockReader | undefined {
    const [block] = this.overlapping(createdAt, createdAt);
    return block;
  }

  /** The blocks whose stretch overlaps [lo, hi] (µs), oldest first. */
  private overlapping(lo: number, hi: number): BlockReader[] {
    return this.blocks.filter((block) => block.bounds().newest >= lo && block.bounds().oldest <= hi);
  }

  /** A cursor over the blocks overlapping [lo, hi] in `direction`, each block's from `open` when it is reached. */
  private chain(lo: number, hi: number, direction: Direction, open: (block: BlockReader) => CreatedAtCursor): CreatedAtCursor {
    const blocks = this.overlapping(lo, hi);
    if (blocks.length === 0) return NO_VALUES;
    if (blocks.length === 1) return open(blocks[0]);
    return new BlockChainCursor(direction === 'asc' ? blocks : blocks.reverse(), open, direction);
  }
}

/**
 * Values of disjoint blocks' cursors, one block after another in `direction`: a seek goes to the
 * first block whose stretch reaches `ts` and on to the next while a block has nothing more.
 */
class BlockChainCursor implements CreatedAtCursor {
  private at = -1;
  private current: CreatedAtCursor | undefined;

  /** @param blocks in the order of `direction` */
  constructor(
    private readonly blocks: readonly BlockReader[],
    private readonly open: (block: BlockReader) => CreatedAtCursor,
    private readonly direction: Direction,
  ) {}

  seek(ts: number): number | undefined {
    const asc = this.direction === 'asc';
    for (let i = Math.max(0, this.at); i < this.blocks.length; i++) {
      const { oldest, newest } = this.blocks[i].bounds();
      if (asc ? newest < ts : oldest > ts) continue; // wholly behind the seek
      if (i !== this.at) {
        this.current?.close();
        this.current = this.open(this.blocks[i]);
        this.at = i;
      }
      const value = this.current!.seek(ts);
      if (value !== undefined) return value;
    }
    return undefined;
  }

  close(): void {
    this.current?.close();
  }
}
