/**
 * Where a query plan reads index entries (docs/STORAGE.md, "The head", "Reads"): LMDB's `index`
 * and `events` databases, or the head's own index of the creates it holds (head/head-index.ts).
 * Both answer the same four questions, so the list, count and search planners build the same
 * plan over each, and a plan seeks in the head as it does in LMDB.
 */
import type { Key } from 'lmdb';
import { KeyRangeCursor, type CreatedAtCursor, type Direction } from './created-at-cursors.js';
import { createdAtOfKey } from './index-keys.js';
import type { StoreDatabases } from './lmdb-env.js';

export interface IndexSource {
  /** created_at (µs) of the oldest and newest event the source holds; undefined when it holds none. */
  bounds(): { oldest: number; newest: number } | undefined;
  /** The created_at values (µs) of the entries `[...prefix, created_at]` within [lo, hi], in `direction`. */
  keyRange(prefix: readonly Key[], lo: number, hi: number, direction: Direction): CreatedAtCursor;
  /** Every event's created_at (µs) within [lo, hi], in `direction`. */
  eventRange(lo: number, hi: number, direction: Direction): CreatedAtCursor;
  /** The entry `[...prefix, createdAt]` exists. */
  has(prefix: readonly Key[], createdAt: number): boolean;
  /** About how many entries lie under any of `prefixes` within [lo, hi] (µs): what a plan's driver is chosen by. */
  estimate(prefixes: readonly (readonly Key[])[], lo: number, hi: number): number;
}

/** Index entries sampled per prefix to estimate how many it holds. */
const SAMPLE = 128;

/** LMDB's index and events, as a plan reads them. */
export class LmdbIndexSource implements IndexSource {
  constructor(private readonly dbs: StoreDatabases) {}

  bounds(): { oldest: number; newest: number } | undefined {
    const { events } = this.dbs;
    const [oldest] = events.getKeys({ limit: 1 });
    const [newest] = events.getKeys({ limit: 1, reverse: true });
    return oldest === undefined || newest === undefined ? undefined : { oldest, newest };
  }

  keyRange(prefix: readonly Key[], lo: number, hi: number, direction: Direction): CreatedAtCursor {
    return new KeyRangeCursor(this.dbs.index, [...prefix], lo, hi, direction);
  }

  eventRange(lo: number, hi: number, direction: Direction): CreatedAtCursor {
    return new KeyRangeCursor(this.dbs.events, [], lo, hi, direction);
  }

  has(prefix: readonly Key[], createdAt: number): boolean {
    return this.dbs.index.doesExist([...prefix, createdAt]);
  }

  /** Exact below SAMPLE entries per prefix; above, SAMPLE scaled by how little of [lo, hi] the first SAMPLE cover. */
  estimate(prefixes: readonly (readonly Key[])[], lo: number, hi: number): number {
    let total = 0;
    for (const prefix of prefixes) {
      let count = 0;
      let last = lo;
      for (const key of this.dbs.index.getKeys({ start: [...prefix, lo], end: [...prefix, hi + 1], limit: SAMPLE })) {
        count++;
        last = createdAtOfKey(key);
      }
      total += count < SAMPLE ? count : (SAMPLE * (hi - lo)) / Math.max(1, last - lo);
    }
    return total;
  }
}
