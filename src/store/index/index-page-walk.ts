/**
 * The walk of the index file's trees with plain reads (docs/STORAGE.md, "A damaged index"): every
 * page a snapshot's trees reach, checked as LMDB will need it, so that damage LMDB would meet as
 * a crash or a wrong answer is found before it maps the file (index-file-check.ts). The layout is
 * LMDB's, as lmdb-js 3.x builds it (its dependencies/lmdb mdb.c).
 */
import fs from 'node:fs';

/** `sizeof(MDB_page_header)` on a 64-bit build (mdb.c `PAGEHDRSZ`). */
export const PAGE_HEADER_BYTES = 24;
/** `P_INVALID` (mdb.c): the root of an empty tree. */
export const P_INVALID = 0xffffffffffffffffn;

/** What the walk reads of a snapshot's meta (index-file-check.ts `IndexMeta`): page numbers and transaction ids as bigints (u64 on disk). */
export interface WalkedSnapshot {
  txnid: bigint;
  /** The last page the snapshot uses (mm_last_pg): the file must hold pages 0 to this one. */
  lastPage: bigint;
  freeRoot: bigint;
  mainRoot: bigint;
  /** The depths of the free-page tree and of the main tree (`MDB_db.md_depth`): 1 for a root that is a leaf. */
  freeDepth: number;
  mainDepth: number;
}

/** Page flags and node flags of LMDB's pages (mdb.c). */
const P_BRANCH = 0x01;
const P_LEAF = 0x02;
const P_LEAF2 = 0x20;
const F_BIGDATA = 0x01;
const F_SUBDATA = 0x02;
const F_DUPDATA = 0x04;
/** `MDB_db.md_flags`'s offset in a sub-database's node data, and its flag of a tree of sorted duplicates. */
const DB_FLAGS_OFFSET = 4;
const MDB_DUPSORT = 0x04;
/** `sizeof(MDB_node)` without its data (mdb.c `NODESIZE`), and `MDB_db.md_depth`'s and `md_root`'s offsets in a sub-database's node data. */
const NODE_HEADER_BYTES = 8;
const DB_DEPTH_OFFSET = 6;
const DB_ROOT_OFFSET = 40;

/**
 * A page the walk is to read: its tree, whether to read past it, its level (the root's is 1), its
 * tree's depth, and the node flags a leaf node of its tree may carry (`leafNodeFlags`).
 */
interface PageToWalk {
  pgno: bigint;
  tree: string;
  descend: boolean;
  level: number;
  depth: number;
  nodeFlags: number;
}

/**
 * The node flags a leaf node of a tree may carry: a value on overflow pages (`F_BIGDATA`) in any;
 * a named database (`F_SUBDATA`) in the main tree; sorted duplicates (`F_DUPDATA`, `F_SUBDATA`)
 * only in a tree opened with `MDB_DUPSORT` (mdb.c). A flag outside them is a damaged node, which
 * LMDB meets as `MDB_BAD_TXN` ("Invalid dupdata flag with no mc_xcursor") or worse.
 */
function leafNodeFlags(main: boolean, dbFlags: number): number {
  return F_BIGDATA | (main ? F_SUBDATA : 0) | ((dbFlags & MDB_DUPSORT) !== 0 ? F_SUBDATA | F_DUPDATA : 0);
}

/**
 * Why a page at `level` of a tree `depth` deep, with page flags `flags`, is not where it stands,
 * or undefined: every leaf of an LMDB tree is at its depth, every page above it a branch (mdb.c
 * `mdb_page_search_root` descends `md_depth` levels). A page that reads back older content (a lost
 * write) may be a branch where a leaf must be, which LMDB meets with an assertion that kills the
 * process (`IS_LEAF(mp)` in `mdb_cursor_next`).
 */
function levelProblem(pgno: bigint, tree: string, flags: number, level: number, depth: number): string | undefined {
  const leaf = (flags & (P_LEAF | P_LEAF2)) !== 0;
  if (level < depth && leaf) return `page ${pgno} of its ${tree} is a leaf at level ${level} of ${depth}, where a branch must be`;
  if (level === depth && !leaf) return `page ${pgno} of its ${tree} is a branch at level ${level} of ${depth}, where a leaf must be`;
  if (level > depth) return `page ${pgno} of its ${tree} is at level ${level}, below the tree's depth ${depth}`;
  return undefined;
}

/**
 * Walks the trees of snapshot `meta` (the free-page tree, the main tree and every named database
 * it lists) with plain reads, page by page, for a page that is not what the snapshot needs: a page
 * number outside the snapshot's pages or past the file's first `filePages` pages (a branch's child,
 * a leaf's overflow pages, a named database's root), or a page whose header does not check: its
 * own page number, a branch or leaf flag as its level needs (`levelProblem`), and the transaction that wrote it, which is never later
 * than the snapshot's (pages the snapshot reaches are not reused before a later commit is flushed,
 * docs/STORAGE.md "The index"; a meta page that reverted to an older snapshot meets pages since
 * rewritten). `full` walks every page; otherwise only the main tree and the roots of the free-page
 * tree and of each named database are read, a few pages. Page layout: mdb.c `MDB_page_header`
 * (24 bytes: page number, txnid, pad, flags at 18, `mp_lower` at 20 counting the bytes of the
 * node offsets that follow the header, `NUMKEYS`), `MDB_node` (`mn_lo`, `mn_hi`, `mn_flags`,
 * `mn_ksize`, then key and data; `NODEPGNO`, `NODEDSZ`), overflow pages `OVPAGES`.
 * @returns what was found, in words, or undefined when every page read checks
 */
export function treeProblem(fd: number, pageSize: number, filePages: bigint, meta: WalkedSnapshot, full: boolean): string | undefined {
  const page = Buffer.alloc(pageSize);
  const seen = new Set<bigint>();
  const stack: PageToWalk[] = [];
  if (meta.freeRoot !== P_INVALID) stack.push({ pgno: meta.freeRoot, tree: 'free-page tree', descend: full, level: 1, depth: meta.freeDepth, nodeFlags: leafNodeFlags(false, 0) });
  if (meta.mainRoot !== P_INVALID) stack.push({ pgno: meta.mainRoot, tree: 'main tree', descend: true, level: 1, depth: meta.mainDepth, nodeFlags: leafNodeFlags(true, 0) });
  while (stack.length > 0) {
    const { pgno, tree, descend, level, depth, nodeFlags: allowedFlags } = stack.pop()!;
    if (pgno > meta.lastPage || pgno < 2n) return `its ${tree} names page ${pgno}, outside the pages 2 to ${meta.lastPage} it uses`;
    if (pgno >= filePages) return `page ${pgno} of its ${tree} is past the file's end`;
    if (seen.has(pgno)) continue;
    seen.add(pgno);
    if (fs.readSync(fd, page, 0, pageSize, Number(pgno) * pageSize) < pageSize) return `page ${pgno} of its ${tree} is past the file's end`;
    if (page.readBigUInt64LE(0) !== pgno) return `page ${pgno} of its ${tree} says it is page ${page.readBigUInt64LE(0)}`;
    const flags = page.readUInt16LE(18);
    if ((flags & (P_BRANCH | P_LEAF | P_LEAF2)) === 0) return `page ${pgno} of its ${tree} is neither a branch nor a leaf`;
    const writtenBy = page.readBigUInt64LE(8);
    if (writtenBy > meta.txnid) return `page ${pgno} of its ${tree} was written by transaction ${writtenBy}, after the snapshot's`;
    const misplaced = levelProblem(pgno, tree, flags, level, depth);
    if (misplaced) return misplaced;
    if (!descend || (flags & P_LEAF2) !== 0) continue; // fixed-size duplicates hold no page numbers
    const keys = page.readUInt16LE(20) >> 1;
    for (let i = 0; i < keys; i++) {
      const pointer = PAGE_HEADER_BYTES + 2 * i;
      const node = pointer + 2 <= pageSize ? PAGE_HEADER_BYTES + page.readUInt16LE(pointer) : pageSize;
      if (node + NODE_HEADER_BYTES > pageSize) return `page ${pgno} of its ${tree} is malformed`;
      const lo = page.readUInt16LE(node);
      const hi = page.readUInt16LE(node + 2);
      const nodeFlags = page.readUInt16LE(node + 4);
      if ((flags & P_BRANCH) !== 0) {
        stack.push({ pgno: BigInt(lo) | (BigInt(hi) << 16n) | (BigInt(nodeFlags) << 32n), tree, descend, level: level + 1, depth, nodeFlags: allowedFlags });
        continue;
      }
      if ((nodeFlags & ~allowedFlags) !== 0) return `a node of page ${pgno} of its ${tree} has flags 0x${nodeFlags.toString(16)}, which its tree never holds`;
      const data = node + NODE_HEADER_BYTES + page.readUInt16LE(node + 6);
      if (nodeFlags === 0 && data + lo + hi * 0x10000 > pageSize) return `a node of page ${pgno} of its ${tree} runs past the page's end`;
      if ((nodeFlags & F_BIGDATA) !== 0) {
        if (data + 8 > pageSize) return `page ${pgno} of its ${tree} is malformed`;
        const size = lo + hi * 0x10000;
        const pages = BigInt(Math.floor((PAGE_HEADER_BYTES - 1 + size) / pageSize) + 1);
        const first = page.readBigUInt64LE(data);
        if (first < 2n || first + pages - 1n > meta.lastPage) return `its ${tree} names overflow pages ${first} to ${first + pages - 1n}, outside the pages 2 to ${meta.lastPage} it uses`;
        if (first + pages > filePages) return `overflow pages ${first} to ${first + pages - 1n} of its ${tree} are past the file's end`;
      } else if ((nodeFlags & F_SUBDATA) !== 0) {
        if (data + DB_ROOT_OFFSET + 8 > pageSize) return `page ${pgno} of its ${tree} is malformed`;
        const root = page.readBigUInt64LE(data + DB_ROOT_OFFSET);
        const name = tree === 'main tree' ? `database ${JSON.stringify(page.toString('latin1', node + NODE_HEADER_BYTES, data).replace(/\0+$/, ''))}` : tree;
        const nested = leafNodeFlags(false, page.readUInt16LE(data + DB_FLAGS_OFFSET));
        if (root !== P_INVALID) stack.push({ pgno: root, tree: name, descend: full, level: 1, depth: page.readUInt16LE(data + DB_DEPTH_OFFSET), nodeFlags: nested });
      }
    }
  }
  return undefined;
}
