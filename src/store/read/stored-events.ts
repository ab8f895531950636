/**
 * The events a checkpoint committed (docs/STORAGE.md, "Blocks"): the live blocks, less their
 * hidden rows, and LMDB's `events`, `event_ids` and `index`, which hold the events of a store
 * written before blocks and every event updated since its block was written. An event is in one
 * of the two: a row is hidden in the same commit that puts its event into `events`. Each thread
 * keeps its own open blocks, made again when the catalogue's version (lmdb-env.ts
 * `BLOCKS_VERSION_KEY`) moved since it last looked.
 */
import path from 'node:path';
import type { Key } from 'lmdb';
import { BlockReader } from '../block/block-reader.js';
import { BlockSet } from '../block/block-set.js';
import { NO_VALUES, ProbeCursor, UnionCursor, type CreatedAtCursor, type Direction } from '../index/created-at-cursors.js';
import { LmdbIndexSource, type IndexSource } from '../index/index-source.js';
import { BLOCKS_VERSION_KEY, readEventValue, type StoreDatabases } from '../index/lmdb-env.js';
import { isCanonicalId } from '../record/ids.js';

/** The folder of a store's block files. */
export function blocksDirOf(dataDir: string): string {
  return path.join(dataDir, 'blocks');
}

/** A stretch of created_at (µs) to walk: from `from` (inclusive) to `before` (exclusive), at most `limit` events. */
export interface CreatedAtStretch {
  from?: number;
  before?: number;
  limit?: number;
  reverse?: boolean;
}

export class StoredEvents implements IndexSource {
  private readonly lmdb: LmdbIndexSource;
  private version: number | undefined;
  private set = new BlockSet([]);
  private open = new Map<string, BlockReader>();
  /** Whether any row of a live block is hidden, as of `version`. */
  private anyHidden = false;
  /** `blocks` is opening the blocks again after a newer read snapshot. */
  private retried = false;

  /** @param blocksDir DATA_DIR/blocks (`blocksDirOf`) */
  constructor(readonly dbs: StoreDatabases, readonly blocksDir: string) {
    this.lmdb = new LmdbIndexSource(dbs);
  }

  /**
   * The live blocks as this thread's read snapshot names them, opened again when the catalogue
   * changed: a block still named is kept open, one no longer named is closed.
   * A block the snapshot names that a merge has since removed (ENOENT) is read past once with a
   * newer snapshot (lmdb-js README, "resetReadTxn").
   * @throws BlockDamaged (block-format.ts) when a newly named block fails its checks; the fs error
   *   when it cannot be opened
   */
  blocks(): BlockSet {
    const version = (this.dbs.meta.get(BLOCKS_VERSION_KEY) as number | undefined) ?? 0;
    if (version === this.version) return this.set;
    const open = new Map<string, BlockReader>();
    const readers: BlockReader[] = [];
    try {
      for (const { value } of this.dbs.blocks.getRange()) {
        const reader = this.open.get(value.name) ?? open.get(value.name) ?? BlockReader.open(path.join(this.blocksDir, value.name));
        open.set(value.name, reader);
        readers.push(reader);
      }
    } catch (err) {
      for (const [name, reader] of open) if (!this.open.has(name)) reader.close();
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || this.retried) throw err;
      // A merge removed a block this thread's read snapshot still names: read a newer snapshot.
      this.dbs.root.resetReadTxn();
      this.retried = true;
      try {
        return this.blocks();
      } finally {
        this.retried = false;
      }
    }
    for (const [name, reader] of this.open) if (!open.has(name)) reader.close();
    this.open = open;
    this.set = new BlockSet(readers);
    this.anyHidden = this.dbs.blockHidden.getKeysCount({ limit: 1 }) > 0;
    this.version = version;
    return this.set;
  }

  /** The row created at `createdAt` (µs) is hidden (deleted, or its event is in `events` since). */
  private hidden(createdAt: number): boolean {
    this.blocks(); // `anyHidden` as of this snapshot
    return this.anyHidden && this.dbs.blockHidden.doesExist(createdAt);
  }

  /** A live block holds the event created at `createdAt` (µs), its row not hidden. */
  inBlock(createdAt: number): boolean {
    return this.blocks().holds(createdAt) && !this.hidden(createdAt);
  }

  /**
   * The stored value of the event created at `createdAt` (µs): LMDB's or a block's layout-2
   * record, which `decodeRecord` and `storedJson` read as they read a value (record-codec.ts);
   * undefined when neither holds it. Either is a view valid until the next read of its kind on
   * this thread (lmdb-env.ts `readEventValue`, block-reader.ts `record`): copy to keep it.
   * @throws BlockDamaged when the block's record fails its CRC32C
   */
  value(createdAt: number): Buffer | undefined {
    const stored = readEventValue(this.dbs, createdAt);
    if (stored) return stored;
    return this.hidden(createdAt) ? undefined : this.blocks().record(createdAt);
  }

  /** Some event was created at `createdAt` (µs) and is not deleted. */
  holds(createdAt: number): boolean {
    return this.dbs.events.doesExist(createdAt) || this.inBlock(createdAt);
  }

  /** created_at (µs) of event `id` (any string), or undefined. */
  createdAtOf(id: string): number | undefined {
    const stored = this.dbs.eventIds.get(id);
    if (stored !== undefined || !isCanonicalId(id)) return stored; // a block keeps a canonical id's 16 bytes
    const createdAt = this.blocks().createdAtOf(id);
    return createdAt === undefined || this.hidden(createdAt) ? undefined : createdAt;
  }

  /** Every event's id and created_at (µs): LMDB's, then each block's rows not hidden. */
  *idEntries(): Generator<{ id: string; createdAt: number }> {
    for (const { key, value } of this.dbs.eventIds.getRange()) yield { id: key, createdAt: value };
    for (const block of this.blocks().blocks) {
      for (const entry of block.idEntries()) if (!this.hidden(entry.createdAt)) yield entry;
    }
  }

  /** The events' created_at (µs) within `stretch`, ascending unless `reverse`. */
  createdAts(stretch: CreatedAtStretch = {}): Generator<number> {
    return this.walk((lo, hi, direction) => this.eventRange(lo, hi, direction), stretch);
  }

  /** The created_at (µs) of the entries `[...prefix, created_at]` within `stretch` (a drafts walk: index-keys.ts `DRAFTS_PREFIX`), ascending unless `reverse`. */
  createdAtsUnder(prefix: readonly Key[], stretch: CreatedAtStretch = {}): Generator<number> {
    return this.walk((lo, hi, direction) => this.keyRange(prefix, lo, hi, direction), stretch);
  }

  /** The values of the cursor `open` gives for `stretch`, as a generator that closes it. */
  private *walk(open: (lo: number, hi: number, direction: Direction) => CreatedAtCursor, { from = -Infinity, before = Infinity, limit = Infinity, reverse = false }: CreatedAtStretch): Generator<number> {
    if (limit <= 0 || !(from < before)) return;
    const cursor = open(from, nextBelow(before), reverse ? 'desc' : 'asc');
    try {
      let n = 0;
      for (let ts = cursor.seek(reverse ? Infinity : -Infinity); ts !== undefined && n < limit; n++) {
        yield ts;
        ts = cursor.seek(reverse ? ts - 1 : ts + 1);
      }
    } finally {
      cursor.close();
    }
  }

  /** How many events were created before `before` (µs). */
  countBefore(before: number): number {
    let count = this.dbs.events.getKeysCount({ end: before });
    for (const block of this.blocks().blocks) {
      if (block.bounds().oldest >= before) break;
      count += block.rowsBefore(before);
    }
    if (this.anyHidden) count -= this.dbs.blockHidden.getKeysCount({ end: before });
    return count;
  }

  bounds(): { oldest: number; newest: number } | undefined {
    // Destructured, so each walk ends and closes its cursor.
    const [oldest] = this.createdAts({ limit: 1 });
    const [newest] = this.createdAts({ limit: 1, reverse: true });
    return oldest === undefined || newest === undefined ? undefined : { oldest, newest };
  }

  keyRange(prefix: readonly Key[], lo: number, hi: number, direction: Direction): CreatedAtCursor {
    return this.union(this.lmdb.keyRange(prefix, lo, hi, direction), this.blocks().keyRange(prefix, lo, hi, direction), direction);
  }

  eventRange(lo: number, hi: number, direction: Direction): CreatedAtCursor {
    return this.union(this.lmdb.eventRange(lo, hi, direction), this.blocks().eventRange(lo, hi, direction), direction);
  }

  has(prefix: readonly Key[], createdAt: number): boolean {
    return this.lmdb.has(prefix, createdAt) || (this.blocks().has(prefix, createdAt) && !this.hidden(createdAt));
  }

  estimate(prefixes: readonly (readonly Key[])[], lo: number, hi: number): number {
    return this.lmdb.estimate(prefixes, lo, hi) + this.blocks().estimate(prefixes, lo, hi);
  }

  /** LMDB's side and the blocks' less their hidden rows, as one cursor. */
  private union(lmdb: CreatedAtCursor, blocks: CreatedAtCursor, direction: Direction): CreatedAtCursor {
    if (blocks === NO_VALUES) return lmdb;
    const visible = this.anyHidden ? new ProbeCursor(blocks, [(ts) => !this.dbs.blockHidden.doesExist(ts)], direction) : blocks;
    return new UnionCursor([lmdb, visible], direction);
  }

  /** Closes the open blocks. */
  close(): void {
    for (const reader of this.open.values()) reader.close();
    this.open.clear();
    this.set = new BlockSet([]);
    this.version = undefined;
  }
}

/** The inclusive bound of an exclusive `before` (created_at values are whole µs). */
function nextBelow(before: number): number {
  return before - 1;
}
