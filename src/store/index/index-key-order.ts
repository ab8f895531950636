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

/**
 * One level of the trie: the entries whose key parts so far are its path, and the next parts.
 * An entry whose created_at is its last part is kept as that created_at alone, and its key is
 * built again as it is walked: a checkpoint holds its window's entries over several turns of the
 * event loop, and tens of thousands of key arrays held that long are copied by every young-generation
 * GC in between and then promoted (native-bench/PROFILE.md, "The checkpoint's garbage").
 */
interface KeyGroup {
  /** created_at (µs) of the entries `[...path, createdAt]`, in the order added. */
  createdAts: number[];
  /** Entries with parts after their created_at (a file's `[F, created_at, file id]`), in the order added. */
  suffixed: Key[][];
  children: Map<Key, KeyGroup> | undefined;
}

/** An empty level of the trie. */
const group = (): KeyGroup => ({ createdAts: [], suffixed: [], children: undefined });

/** Index entries gathered create by create and given back in key order; see the module comment. */
export class IndexKeyOrder {
  private root = group();

  /**
   * Gathers `key`, an index entry of the create at `createdAt` (µs). Creates must be added in
   * created_at order for their entries to come back in key order.
   */
  add(key: Key[], createdAt: number): void {
    let level = this.root;
    let n = 0;
    for (; n < key.length; n++) {
      const part = key[n];
      if (part === createdAt) break;
      level.children ??= new Map();
      let next = level.children.get(part);
      if (!next) level.children.set(part, (next = group()));
      level = next;
    }
    if (n === key.length - 1) level.createdAts.push(createdAt);
    else level.suffixed.push(key);
  }

  /**
   * Every key gathered, in key order, walked as the caller asks for them (a checkpoint issues
   * them over several turns of the event loop); the order starts over empty at once. A key whose
   * created_at is its last part is built anew.
   */
  take(): Generator<Key[], void, undefined> {
    const root = this.root;
    this.root = group();
    return walk(root);
  }
}

/**
 * The keys under `root`, in key order: each level's own keys, then its children's in the order of
 * their parts. Walked with a stack rather than nested generators, which would hand every key up
 * through each level.
 */
function* walk(root: KeyGroup): Generator<Key[], void, undefined> {
  const stack: { level: KeyGroup; path: Key[] }[] = [{ level: root, path: [] }];
  while (stack.length > 0) {
    const { level, path } = stack.pop()!;
    for (const createdAt of level.createdAts) yield [...path, createdAt];
    yield* level.suffixed;
    if (!level.children) continue;
    const parts = [...level.children.keys()];
    if (parts.length > 1) parts.sort(compareKeys);
    for (let n = parts.length - 1; n >= 0; n--) stack.push({ level: level.children.get(parts[n])!, path: [...path, parts[n]] });
  }
}
