/**
 * The head's own index (docs/STORAGE.md, "The head", "Reads"): for each index key prefix, the
 * created_at values (µs) of the head's creates under it, ascending, as an LSM memtable keeps its
 * keys sorted. It holds the entries a checkpoint would put into LMDB's `index` for each create,
 * with the head's updates to it applied (a finalize takes a draft out of the drafts index), so a
 * list, count or search plan over it (index-source.ts) seeks only the creates that can match,
 * as over LMDB, instead of checking every create the head holds.
 */
import type { Key } from 'lmdb';
import { firstAtLeast, NO_VALUES, SortedValuesCursor, type CreatedAtCursor, type Direction } from '../index/created-at-cursors.js';
import { plannedPrefixKeys, prefixKey } from '../index/index-keys.js';
import type { IndexSource } from '../index/index-source.js';
import type { EventRecord } from '../record/event-record.js';

const NONE: readonly number[] = [];

/** The creates under one index key prefix. */
interface PrefixEntries {
  /** The prefix's `prefixKey`. */
  key: string;
  /** created_at values (µs), ascending. */
  values: number[];
}

export class HeadIndex implements IndexSource {
  /** The creates under each prefix, by its `prefixKey`. */
  private readonly entries = new Map<string, PrefixEntries>();
  /**
   * The prefixes each create is entered under, to take it out again: their shared entries, not
   * their keys, so a create in the head holds no strings of its own (the head lives through many
   * young-generation GCs, which copy what it holds).
   */
  private readonly prefixesOf = new Map<number, PrefixEntries[]>();

  /** @param order the created_at of every create in the head, ascending (head.ts keeps it) */
  constructor(private readonly order: () => readonly number[]) {}

  /**
   * Enters the create at `createdAt` under the prefixes a plan reads of `record`
   * (index-keys.ts `plannedPrefixKeys`), replacing what it was entered under before (an update).
   */
  set(createdAt: number, record: EventRecord): void {
    this.delete(createdAt);
    const prefixes: PrefixEntries[] = [];
    for (const prefix of plannedPrefixKeys(record)) {
      let entries = this.entries.get(prefix);
      if (!entries) this.entries.set(prefix, (entries = { key: prefix, values: [createdAt] }));
      else if (entries.values[entries.values.length - 1] < createdAt) entries.values.push(createdAt);
      else entries.values.splice(firstAtLeast(entries.values, createdAt), 0, createdAt);
      prefixes.push(entries);
    }
    this.prefixesOf.set(createdAt, prefixes);
  }

  /** The `prefixKey`s the create at `createdAt` is entered under, or undefined when the head holds no such create. */
  prefixKeysOf(createdAt: number): string[] | undefined {
    return this.prefixesOf.get(createdAt)?.map((entries) => entries.key);
  }

  /** Takes the create at `createdAt` out (its checkpoint committed it); the oldest go first, from the front. */
  delete(createdAt: number): void {
    for (const { key, values } of this.prefixesOf.get(createdAt) ?? []) {
      if (values[0] === createdAt) values.shift();
      else values.splice(firstAtLeast(values, createdAt), 1);
      if (values.length === 0) this.entries.delete(key);
    }
    this.prefixesOf.delete(createdAt);
  }

  bounds(): { oldest: number; newest: number } | undefined {
    const order = this.order();
    return order.length === 0 ? undefined : { oldest: order[0], newest: order[order.length - 1] };
  }

  keyRange(prefix: readonly Key[], lo: number, hi: number, direction: Direction): CreatedAtCursor {
    const values = this.entries.get(prefixKey(prefix))?.values;
    // A prefix the head holds nothing under (a filter that matches none of its creates): NO_VALUES,
    // which withHead leaves out of the merge.
    return values ? new SortedValuesCursor(values, lo, hi, direction) : NO_VALUES;
  }

  eventRange(lo: number, hi: number, direction: Direction): CreatedAtCursor {
    return new SortedValuesCursor(this.order(), lo, hi, direction);
  }

  has(prefix: readonly Key[], createdAt: number): boolean {
    const values = this.entries.get(prefixKey(prefix))?.values;
    return values !== undefined && values[firstAtLeast(values, createdAt)] === createdAt;
  }

  /** Exact: the entries under `prefixes` within [lo, hi]. */
  estimate(prefixes: readonly (readonly Key[])[], lo: number, hi: number): number {
    let total = 0;
    for (const prefix of prefixes) {
      const values = this.entries.get(prefixKey(prefix))?.values ?? NONE;
      total += firstAtLeast(values, hi + 1) - firstAtLeast(values, lo);
    }
    return total;
  }
}
