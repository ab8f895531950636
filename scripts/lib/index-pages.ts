/**
 * Where the index's records lie in `db/data.mdb`, for the disk-fault harness: the leaf pages of
 * LMDB's `events` database in the snapshot a cleanly stopped index opens at, and the events whose
 * records each holds (docs/STORAGE.md, "Records fill their pages"). Plain reads of a copy no
 * store runs on; the layout is LMDB's as src/store/index/index-file-check.ts reads it (mdb.c
 * `MDB_page_header`, `MDB_node`, `MDB_meta`). A page LMDB no longer uses may still hold records'
 * bytes (a page freed by a later commit): only the pages the snapshot's `events` tree reaches are
 * listed, so a fault drawn from them hits records the index serves.
 */

/** `sizeof(MDB_page_header)` on a 64-bit build, and its fields' offsets (mdb.c). */
const PAGE_HEADER_BYTES = 24;
const FLAGS_AT = 18;
const LOWER_AT = 20;
/** Page and node flags (mdb.c). */
const P_BRANCH = 0x01;
const P_LEAF = 0x02;
const P_LEAF2 = 0x20;
const F_BIGDATA = 0x01;
const F_SUBDATA = 0x02;
/** `MDB_meta` in a meta page, after the page header: the roots of the free-page and main trees, and the txnid (index-file-check.ts). */
const META_MAIN_ROOT = PAGE_HEADER_BYTES + 112;
const META_TXNID = PAGE_HEADER_BYTES + 128;
/** `NODESIZE` (mdb.c), and `MDB_db.md_root`'s offset in a named database's node data. */
const NODE_HEADER_BYTES = 8;
const DB_ROOT_OFFSET = 40;
const P_INVALID = 0xffffffffffffffffn;

/** One leaf page of `events` and what it holds. */
export interface RecordPage {
  /** Page number: the page is bytes page * pageSize to (page + 1) * pageSize of data.mdb, or of `file`. */
  page: number;
  /** A block file (relative to the data folder) whose 4 KiB page this is (block-pages.ts); absent: data.mdb. */
  file?: string;
  /** The block file's size (bytes): a page at its end is shorter. */
  fileBytes?: number;
  /** Ids of the events whose records are on it (or on overflow pages it names). */
  events: string[];
  /** Byte ranges (from the file's start) of its nodes (a record's node header, key and value, or the overflow pages' number), with the event of each. */
  nodes: { from: number; to: number; event: string | undefined }[];
}

/** The id of the event whose stored record (record-codec.ts layout 3: the presented JSON follows) `bytes` hold. */
function recordId(bytes: Buffer): string | undefined {
  return /\{"id":"([^"]+)"/.exec(bytes.toString('latin1'))?.[1];
}

/**
 * The leaf pages of the `events` database of `index` (a whole data.mdb), as the newer meta page
 * names them (a cleanly stopped index: both metas flushed); none when it is empty.
 * @throws Error when the file holds no `events` database or a page does not read as LMDB's
 */
export function recordPages(index: Buffer, pageSize: number): RecordPage[] {
  const txnid = (n: number) => index.readBigUInt64LE(n * pageSize + META_TXNID);
  const meta = txnid(1) > txnid(0) ? pageSize : 0;
  const pageAt = (pgno: bigint) => {
    const at = Number(pgno) * pageSize;
    if (at + pageSize > index.length || index.readBigUInt64LE(at) !== pgno) throw new Error(`page ${pgno} of data.mdb does not read as LMDB's`);
    return at;
  };
  /** Each node of page `at`: its start, flags, key and data offsets. */
  const nodesOf = (at: number) => Array.from({ length: index.readUInt16LE(at + LOWER_AT) >> 1 }, (_, i) => {
    const node = at + PAGE_HEADER_BYTES + index.readUInt16LE(at + PAGE_HEADER_BYTES + 2 * i);
    const keyBytes = index.readUInt16LE(node + 6);
    return { node, lo: index.readUInt16LE(node), hi: index.readUInt16LE(node + 2), flags: index.readUInt16LE(node + 4), key: node + NODE_HEADER_BYTES, data: node + NODE_HEADER_BYTES + keyBytes };
  });
  const childOf = (n: { lo: number; hi: number; flags: number }) => BigInt(n.lo) | (BigInt(n.hi) << 16n) | (BigInt(n.flags) << 32n);

  // The main tree names each database: find `events`' root.
  let eventsRoot: bigint | undefined;
  const main: bigint[] = [index.readBigUInt64LE(meta + META_MAIN_ROOT)];
  while (main.length > 0 && eventsRoot === undefined) {
    const at = pageAt(main.pop()!);
    const flags = index.readUInt16LE(at + FLAGS_AT);
    for (const n of nodesOf(at)) {
      if (flags & P_BRANCH) main.push(childOf(n));
      else if ((n.flags & F_SUBDATA) && index.toString('latin1', n.key, n.data).replace(/\0+$/, '') === 'events') eventsRoot = index.readBigUInt64LE(n.data + DB_ROOT_OFFSET);
    }
  }
  if (eventsRoot === undefined) throw new Error('data.mdb holds no events database');
  // An empty one: every record is in a block (docs/STORAGE.md, "Blocks in the running store").
  if (eventsRoot === P_INVALID) return [];

  const pages: RecordPage[] = [];
  const stack = [eventsRoot];
  while (stack.length > 0) {
    const pgno = stack.pop()!;
    const at = pageAt(pgno);
    const flags = index.readUInt16LE(at + FLAGS_AT);
    if (flags & P_BRANCH) {
      for (const n of nodesOf(at)) stack.push(childOf(n));
      continue;
    }
    if (!(flags & P_LEAF) || (flags & P_LEAF2)) continue;
    const page: RecordPage = { page: Number(pgno), events: [], nodes: [] };
    const nodes = nodesOf(at).sort((a, b) => a.node - b.node);
    for (const [i, n] of nodes.entries()) {
      const size = n.lo + n.hi * 0x10000;
      const value = n.flags & F_BIGDATA ? index.subarray(pageAt(index.readBigUInt64LE(n.data)) + PAGE_HEADER_BYTES).subarray(0, size) : index.subarray(n.data, n.data + size);
      const id = recordId(value);
      if (id) page.events.push(id);
      page.nodes.push({ from: n.node, to: i + 1 < nodes.length ? nodes[i + 1].node : at + pageSize, event: id });
    }
    pages.push(page);
  }
  return pages.sort((a, b) => a.page - b.page);
}
