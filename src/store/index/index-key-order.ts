/**
 * The index entries of a checkpoint's creates put in key order (docs/STORAGE.md, "Checkpoint
 * commits"). lmdb-js commits whatever it has whenever its write thread catches up between turns of
 * the event loop, and a commit copies every B-tree page it changes. Issued create by create, every
 * commit of a checkpoint touches every range a create has entries in (its device, each metadata
 * value, each class), so each commit copies the same right-edge pages again; in key order each
 * commit covers a stretch of the tree of its own.
 *
 * A full sort with lmdb's `compareKeys` costs about 25 ms for the 37,000 entries of 2,048 bench
 * events. The entries of one create share its created_at, and creates come in created_at order,
 * so the entries are grouped instead by the parts of their key before the created_at (a trie of
 * those parts), whose groups are already in order: only the distinct parts at each level are
 * sorted. The order is a write-cost measure, not a correctness one: a key whose parts hold a value
 * equal to its created_at lands in a group of its own, and any order of puts commits the same
 * entries.
 */
import { compareKeys, type Key } from 'lmdb';

/** One level of the trie: the entries whose key parts so far are its path, and the next parts. */
interface KeyGroup {
  /** Keys that end here (their next part is the created_at), in the order added. */
  keys: Key[][];
  children: Map<Key, KeyGroup> | undefined;
}

/** Index entries gathered create by create and given back in key order; see the module comment. */
export class IndexKeyOrder {
  private root: KeyGroup = { keys: [], children: undefined };

  /**
   * Gathers `key`, an index entry of the create at `createdAt` (µs). Creates must be added in
   * created_at order for their entries to come back in key order.
   */
  add(key: Key[], createdAt: number): void {
    let group = this.root;
    for (const part of key) {
      if (part === createdAt) break;
      group.children ??= new Map();
      let next = group.children.get(part);
      if (!next) group.children.set(part, (next = { keys: [], children: undefined }));
      group = next;
    }
    group.keys.push(key);
  }

  /**
   * Every key gathered, in key order, walked as the caller asks for them (a checkpoint issues
   * them over several turns of the event loop); the order starts over empty at once.
   */
  take(): Generator<Key[], void, undefined> {
    const root = this.root;
    this.root = { keys: [], children: undefined };
    return walk(root);
  }
}

/** The keys of `group` and of its children, in key order. */
function* walk(group: KeyGroup): Generator<Key[], void, undefined> {
  yield* group.keys;
  if (!group.children) return;
  const parts = [...group.children.keys()];
  if (parts.length > 1) parts.sort(compareKeys);
  for (const part of parts) yield* walk(group.children.get(part)!);
}
