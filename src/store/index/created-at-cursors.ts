/**
 * Cursors over ordered streams of created_at values (µs), the building blocks of query plans:
 * an index range, the primary key range, the union of several (multi-value filters) and a
 * driving cursor whose values are probed against the other conditions (combined filters). Every cursor answers one question,
 * `seek(ts)`: the first value at or after `ts` in its direction, or undefined when none is left.
 * created_at values are unique integers, so advancing past `v` is `seek(v + 1)` (asc) or
 * `seek(v - 1)` (desc).
 */
import type { Database, Key } from 'lmdb';

export type Direction = 'asc' | 'desc';

export interface CreatedAtCursor {
  seek(ts: number): number | undefined;
  close(): void;
}

/** A cursor that yields nothing. */
export const NO_VALUES: CreatedAtCursor = { seek: () => undefined, close: () => undefined };

/** True when `a` comes at or after `b` in direction `dir`. */
export const atOrAfter = (a: number, b: number, dir: Direction): boolean => (dir === 'asc' ? a >= b : a <= b);

/** Steps to try on an open iterator before re-opening it at the target. */
const STEPS_BEFORE_RESEEK = 8;

/**
 * The created_at values under a key prefix, within [lo, hi] (µs, inclusive), in `dir` order.
 * Keys are `[...prefix, created_at]`; with an empty prefix the keys are created_at themselves.
 */
export class KeyRangeCursor implements CreatedAtCursor {
  private iterator: Iterator<Key> | undefined;
  private current: number | undefined;
  private exhausted = false;

  constructor(
    private readonly db: Database<unknown, Key>,
    private readonly prefix: Key[],
    private readonly lo: number,
    private readonly hi: number,
    private readonly dir: Direction,
  ) {}

  seek(ts: number): number | undefined {
    if (this.current !== undefined && atOrAfter(this.current, ts, this.dir)) return this.current;
    if (this.exhausted && this.current === undefined) return undefined;
    for (let step = 0; this.iterator && step < STEPS_BEFORE_RESEEK; step++) {
      this.current = this.step();
      if (this.current === undefined || atOrAfter(this.current, ts, this.dir)) return this.current;
    }
    this.open(ts);
    this.current = this.step();
    return this.current;
  }

  close(): void {
    this.iterator?.return?.();
    this.iterator = undefined;
  }

  private key(ts: number): Key {
    return this.prefix.length === 0 ? ts : [...this.prefix, ts];
  }

  private open(from: number): void {
    this.close();
    const asc = this.dir === 'asc';
    const start = asc ? Math.max(from, this.lo) : Math.min(from, this.hi);
    const end = asc ? this.hi + 1 : this.lo - 1; // `end` is exclusive
    this.iterator = this.db.getKeys({ start: this.key(start), end: this.key(end), reverse: !asc })[Symbol.iterator]();
    this.exhausted = false;
  }

  private step(): number | undefined {
    const next = this.iterator!.next();
    if (next.done) {
      this.exhausted = true;
      this.close();
      return undefined;
    }
    const key = next.value;
    return (Array.isArray(key) ? key[key.length - 1] : key) as number;
  }
}

/** Values in any of several cursors (a multi-value filter: `device_ids=a,b`). */
export class UnionCursor implements CreatedAtCursor {
  constructor(private readonly parts: CreatedAtCursor[], private readonly dir: Direction) {}

  seek(ts: number): number | undefined {
    let best: number | undefined;
    for (const part of this.parts) {
      const value = part.seek(ts);
      if (value !== undefined && (best === undefined || atOrAfter(best, value, this.dir))) best = value;
    }
    return best;
  }

  close(): void {
    for (const part of this.parts) part.close();
  }
}

/**
 * Values of `inner` below `bound()` (exclusive), read at every seek; every value while it gives
 * undefined. Clips LMDB's side of a merged read to the events older than the head's
 * creates (store-view.ts `withHead`).
 */
export class BelowCursor implements CreatedAtCursor {
  constructor(
    private readonly inner: CreatedAtCursor,
    private readonly bound: () => number | undefined,
    private readonly dir: Direction,
  ) {}

  seek(ts: number): number | undefined {
    const bound = this.bound();
    if (bound === undefined) return this.inner.seek(ts);
    if (this.dir === 'desc') return this.inner.seek(Math.min(ts, bound - 1));
    const value = this.inner.seek(ts);
    return value !== undefined && value < bound ? value : undefined;
  }

  close(): void {
    this.inner.close();
  }
}

/**
 * Values of a driving cursor that also pass every probe: the plan of a query with several
 * indexed conditions. The sparsest condition drives (see event-query.ts); each other condition
 * is a point lookup of its index key for the candidate, which costs far less than a range seek.
 */
export class ProbeCursor implements CreatedAtCursor {
  constructor(
    private readonly driver: CreatedAtCursor,
    private readonly probes: ((ts: number) => boolean)[],
    private readonly dir: Direction,
  ) {}

  seek(ts: number): number | undefined {
    for (let value = this.driver.seek(ts); value !== undefined; value = this.driver.seek(this.dir === 'asc' ? value + 1 : value - 1)) {
      if (this.probes.every((probe) => probe(value!))) return value;
    }
    return undefined;
  }

  close(): void {
    this.driver.close();
  }
}

/** The first index of ascending `values` whose value is at least `from` (`values.length` when none). */
export function firstAtLeast(values: ArrayLike<number>, from: number): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (values[mid] < from) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The values of an ascending array in memory within [lo, hi] (µs), in `dir` order, those that
 * pass `accepts` (every one without it): the head's own index (head/head-index.ts) and its
 * updated events. Values are checked as the cursor moves, never ahead of it; the cursor reads
 * the array as it is, so it serves a synchronous scan (event-query.ts `scanPlan`). It remembers
 * its last answer: a UnionCursor seeks every part at every step, and a part ahead of the others
 * is asked again for the value it already gave, which it must not check again.
 */
export class SortedValuesCursor implements CreatedAtCursor {
  /** The last seek's start (clamped to [lo, hi]) and its answer. */
  private last: { from: number; value: number | undefined } | undefined;
  /** The index of the last value answered; -1 before any. */
  private at = -1;

  constructor(
    private readonly values: ArrayLike<number>,
    private readonly lo: number,
    private readonly hi: number,
    private readonly dir: Direction,
    private readonly accepts?: (createdAt: number) => boolean,
  ) {}

  seek(ts: number): number | undefined {
    const asc = this.dir === 'asc';
    const from = asc ? Math.max(ts, this.lo) : Math.min(ts, this.hi);
    const { last } = this;
    if (last && (asc ? from >= last.from && (last.value === undefined || from <= last.value) : from <= last.from && (last.value === undefined || from >= last.value))) {
      return last.value;
    }
    const value = this.find(from, asc);
    this.last = { from, value };
    return value;
  }

  private find(from: number, asc: boolean): number | undefined {
    const { values } = this;
    for (let at = this.start(from, asc); at >= 0 && at < values.length; at += asc ? 1 : -1) {
      const value = values[at];
      if (value < this.lo || value > this.hi) return undefined;
      if (!this.accepts || this.accepts(value)) {
        this.at = at;
        return value;
      }
    }
    return undefined;
  }

  /**
   * Where to look from for the first value at or after `from`: the step after the last answer
   * when that is where it is (a scan's next seek), else a binary search.
   */
  private start(from: number, asc: boolean): number {
    const { values, at } = this;
    const next = asc ? at + 1 : at - 1;
    if (at >= 0 && values[at] !== undefined && (asc ? values[at] < from : values[at] > from)) {
      const candidate = values[next];
      if (candidate === undefined || (asc ? candidate >= from : candidate <= from)) return next;
    }
    const first = firstAtLeast(values, from);
    return asc ? first : (values[first] === from ? first : first - 1);
  }

  close(): void {}
}
