/**
 * Checks the index's file, `DATA_DIR/db/data.mdb`, with plain reads before LMDB maps it
 * (docs/STORAGE.md, "A damaged index"). LMDB reads a page by touching its memory map; a page past
 * the end of a file that was cut short is no memory at all, and the process dies of SIGBUS, with
 * nothing in its log. So before the store opens LMDB this module reads the two meta pages and
 * the file's length, and a file LMDB cannot open safely makes the start-up refuse with a message
 * that names the damage and `edge-events check --repair` (docs/OPERATIONS.md, "Checking and
 * repairing a data folder").
 *
 * The layout read here is LMDB's, as lmdb-js 3.x builds it (its dependencies/lmdb mdb.c):
 *
 *   page 0 and page 1, each: page header (`MDB_page_header`, 24 bytes: page number u64, txnid
 *   u64, pad u16, flags u16 with P_META 0x08, lower/upper u32), then `MDB_meta`:
 *     +0 mm_magic u32 (0xBEEFC0DE)   +4 mm_version u32 (MDB_DATA_VERSION, 2; low 16 bits)
 *     +8 mm_address   +16 mm_mapsize u64
 *     +24 mm_dbs[FREE_DBI] (`MDB_db`, 48 bytes): md_pad u32 = the page size (mm_psize),
 *         md_flags u16 = the environment's flags (mm_flags), ..., +64 md_root u64
 *     +72 mm_dbs[MAIN_DBI]: ..., +112 md_root u64
 *     +120 mm_last_pg u64 (the last page the snapshot uses)   +128 mm_txnid u64
 *   and, lmdb-js's own, a third copy at half a page into page 0 (`mdb_env_pick_meta`): the meta
 *   of the last commit flushed to disk under overlapping sync, whose magic and version are never
 *   written (`mdb_env_write_meta` writes from mm_mapsize on).
 *
 * Values are little-endian (x86-64, arm64: the byte order LMDB writes natively).
 */
import fs from 'node:fs';
import path from 'node:path';
import { indexedLogPosition, type StoreDatabases } from './lmdb-env.js';
import { segmentNumberOf } from '../log/segment-files.js';
import { P_INVALID, PAGE_HEADER_BYTES, treeProblem, type WalkedSnapshot } from './index-page-walk.js';

/** `MDB_MAGIC` (mdb.c). */
const MDB_MAGIC = 0xbeefc0de;
/** `MDB_DATA_VERSION` of the LMDB lmdb-js 3.x builds (mdb.c). */
const MDB_DATA_VERSION = 2;
/** `P_META`, the page flag of a meta page (mdb.c). */
const P_META = 0x08;
/** `MDB_OVERLAPPINGSYNC` (lmdb.h): set in a meta's mm_flags until its commit is flushed. */
const MDB_OVERLAPPINGSYNC = 0x1000;
/** The smallest and largest page sizes LMDB writes (mdb.c `MAX_PAGESIZE`; pages are powers of two). */
const MIN_PAGE_BYTES = 512;
const MAX_PAGE_BYTES = 65536;
/** Offsets of `MDB_meta`'s fields (see above). */
const META = { magic: 0, version: 4, pageSize: 24, flags: 28, freeDepth: 30, freeRoot: 64, mainDepth: 78, mainRoot: 112, lastPage: 120, txnid: 128, end: 136 } as const;

/** One meta of data.mdb, as read. Page numbers and transaction ids as bigints (u64 on disk). */
export interface IndexMeta extends WalkedSnapshot {
  /** Where it is: `page 0`, `page 1`, or lmdb-js's copy of the last flushed meta in page 0. */
  slot: 'page 0' | 'page 1' | 'flushed copy';
  /** mm_flags: MDB_OVERLAPPINGSYNC set means the commit was not yet known flushed when written. */
  flags: number;
  pageSize: number;
}

/** What the plain reads found in `db/data.mdb`. */
export type IndexFileReport =
  /** No data.mdb, or an empty one: LMDB would create a new, empty index. */
  | { state: 'absent'; file: string }
  /** Both meta pages whole, and the file holds every page of the snapshot LMDB opens at. */
  | { state: 'sound'; file: string; fileBytes: number; pageSize: number; opensAt: IndexMeta }
  /** What LMDB would refuse, or die of (SIGBUS): `problem` says what, in plain words. */
  | { state: 'damaged'; file: string; fileBytes: number; problem: string };

/** The index file of a data directory. */
export function indexFileOf(dataDir: string): string {
  return path.join(dataDir, 'db', 'data.mdb');
}

const bytes = (n: number | bigint): string => `${n.toLocaleString('en-US')} bytes`;

/** Reads the meta at `at` in `page` (a buffer of the file's first bytes). */
function metaAt(page: Buffer, at: number, slot: IndexMeta['slot']): IndexMeta {
  return {
    slot,
    txnid: page.readBigUInt64LE(at + META.txnid),
    lastPage: page.readBigUInt64LE(at + META.lastPage),
    flags: page.readUInt16LE(at + META.flags),
    pageSize: page.readUInt32LE(at + META.pageSize),
    freeRoot: page.readBigUInt64LE(at + META.freeRoot),
    mainRoot: page.readBigUInt64LE(at + META.mainRoot),
    freeDepth: page.readUInt16LE(at + META.freeDepth),
    mainDepth: page.readUInt16LE(at + META.mainDepth),
  };
}

/** Why meta page `n` (at `at`) is not one LMDB accepts, or undefined when it is. */
function metaPageProblem(head: Buffer, at: number, n: number): string | undefined {
  const flags = head.readUInt16LE(at + 18);
  const meta = at + PAGE_HEADER_BYTES;
  const magic = head.readUInt32LE(meta + META.magic);
  if (magic !== MDB_MAGIC || (flags & P_META) === 0) {
    const zeros = head.subarray(at, meta + META.end).every((b) => b === 0);
    return `meta page ${n} is ${zeros ? 'all zeros' : `not an LMDB meta page (magic 0x${magic.toString(16)}, expected 0x${MDB_MAGIC.toString(16)})`}`;
  }
  const version = head.readUInt32LE(meta + META.version) & 0xffff;
  if (version !== MDB_DATA_VERSION) return `meta page ${n} is of LMDB file format ${version}; this build reads format ${MDB_DATA_VERSION}`;
  return undefined;
}

/** A page size LMDB writes: a power of two from MIN_PAGE_BYTES to MAX_PAGE_BYTES. */
function validPageSize(n: number): boolean {
  return n >= MIN_PAGE_BYTES && n <= MAX_PAGE_BYTES && (n & (n - 1)) === 0;
}

/**
 * `mdb_pick_meta` (mdb.c) as the store opens LMDB: overlapping sync, previous snapshot and
 * safeRestore (lmdb-env.ts), so of two metas the newer is taken only when its commit was
 * flushed, else the older.
 */
function pickMeta(a: IndexMeta, b: IndexMeta): IndexMeta {
  const latest = a.txnid >= b.txnid ? a : b;
  if (b.txnid === 0n) return a;
  if ((latest.flags & MDB_OVERLAPPINGSYNC) === 0) return latest;
  return a.txnid > b.txnid ? b : a;
}

/**
 * Reads `db/data.mdb` under `dataDir` with plain file reads, never a memory map: both meta
 * pages (magic 0xBEEFC0DE, P_META, file format 2, one page size), and the meta LMDB will open at
 * (`mdb_env_pick_meta` with the store's safeRestore: the newest flushed one), whose trees' roots
 * are pages up to its mm_last_pg, and whose pages must be in the file: the file holds at least
 * (mm_last_pg + 1) * page size bytes, or, when it is shorter (LMDB may leave pages it freed
 * again unwritten at the end), every page the snapshot's trees reach is in it, which this walks
 * (`treeProblem`: one read per page, in this rare case only, or when `walk` asks).
 * @param options `walk`: walk the trees whatever the file's length (`edge-events check`), which
 *   also finds a branch or leaf page zeroed or overwritten, or a page number damaged in one, that
 *   LMDB would meet as a crash or a wrong answer; a read of every page the index uses
 * @returns `absent` (no file, or an empty one), `sound`, or `damaged` with the problem in words
 * @throws the fs error of a failed read (EACCES, EIO), never for damage
 */
export function inspectIndexFile(dataDir: string, options: { walk?: boolean } = {}): IndexFileReport {
  const file = indexFileOf(dataDir);
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { state: 'absent', file };
    throw err;
  }
  try {
    const fileBytes = fs.fstatSync(fd).size;
    if (fileBytes === 0) return { state: 'absent', file };
    const damaged = (problem: string): IndexFileReport => ({ state: 'damaged', file, fileBytes, problem });
    const head = Buffer.alloc(2 * MAX_PAGE_BYTES);
    const read = fs.readSync(fd, head, 0, head.length, 0);
    if (read < PAGE_HEADER_BYTES + META.end) return damaged(`the file is ${bytes(fileBytes)}, shorter than one meta page`);
    const first = metaPageProblem(head, 0, 0);
    if (first) return damaged(first);
    const pageSize = head.readUInt32LE(PAGE_HEADER_BYTES + META.pageSize);
    if (!validPageSize(pageSize)) return damaged(`meta page 0 names a page size of ${bytes(pageSize)}; LMDB's are powers of two from 512 to 65,536`);
    if (fileBytes < 2 * pageSize) return damaged(`the file is ${bytes(fileBytes)}, shorter than its two meta pages (${bytes(2 * pageSize)})`);
    const second = metaPageProblem(head, pageSize, 1);
    if (second) return damaged(second);
    const page1Size = head.readUInt32LE(pageSize + PAGE_HEADER_BYTES + META.pageSize);
    if (page1Size !== pageSize) return damaged(`meta page 1 names a page size of ${bytes(page1Size)}, meta page 0 ${bytes(pageSize)}`);
    const m0 = metaAt(head, PAGE_HEADER_BYTES, 'page 0');
    const m1 = metaAt(head, pageSize + PAGE_HEADER_BYTES, 'page 1');
    const flushed = metaAt(head, pageSize / 2 + PAGE_HEADER_BYTES, 'flushed copy');
    // The flushed copy counts only where lmdb-js wrote one (mdb_env_pick_meta reads it whatever
    // it holds; a zero txnid is never picked).
    const opensAt = flushed.txnid === 0n || flushed.pageSize !== pageSize ? pickMeta(m0, m1) : pickMeta(pickMeta(m0, m1), flushed);
    const snapshot = `the snapshot LMDB opens at (transaction ${opensAt.txnid}, ${opensAt.slot})`;
    for (const [tree, root] of [['main', opensAt.mainRoot], ['free-page', opensAt.freeRoot]] as const) {
      if (root !== P_INVALID && (root < 2n || root > opensAt.lastPage)) {
        return damaged(`the ${tree} tree's root, page ${root}, is outside the pages 2 to ${opensAt.lastPage} ${snapshot} uses`);
      }
    }
    const needed = (opensAt.lastPage + 1n) * BigInt(pageSize);
    const short = BigInt(fileBytes) < needed;
    // LMDB leaves the last pages unwritten when a commit freed them again (mdb.c, mm_last_pg: "the
    // file may be shorter if the freeDB lists the final pages"): in a shorter file, every page the
    // snapshot reaches must be in it. Otherwise the roots are read, a few pages.
    const problem = treeProblem(fd, pageSize, BigInt(Math.floor(fileBytes / pageSize)), opensAt, short || options.walk === true);
    if (problem && short) return damaged(`the file is ${bytes(fileBytes)}, but ${snapshot} uses pages 0 to ${opensAt.lastPage} of ${bytes(pageSize)} (${bytes(needed)}), and ${problem}; the file was cut short`);
    if (problem) return damaged(`in ${snapshot}, ${problem}`);
    return { state: 'sound', file, fileBytes, pageSize, opensAt };
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * The index cannot be opened safely; the log can rebuild it. The message names the damage and
 * the command that repairs it (docs/OPERATIONS.md, "Checking and repairing a data folder").
 */
export class IndexDamaged extends Error {
  /** @param part the index's file the problem is in (default db/data.mdb; a block: docs/STORAGE.md, "Blocks") */
  constructor(readonly dataDir: string, readonly problem: string, part = path.join('db', 'data.mdb'), options?: ErrorOptions) {
    super(`DATA_DIR ${dataDir}: the index ${part} ${problem}. The log in blobs/ holds the events: `
      + `stop the store and run \`edge-events check --repair --data-dir ${dataDir}\` to rebuild the index from it `
      + '(docs/OPERATIONS.md, "Checking and repairing a data folder")', options);
    this.name = 'IndexDamaged';
  }
}

/** The numbers of the segment files (`seg-NNNNNNNN.blob`) in `dataDir`'s blobs/; none when it is missing. */
export function segmentFilesIn(dataDir: string): number[] {
  let names: fs.Dirent[];
  try {
    names = fs.readdirSync(path.join(dataDir, 'blobs'), { withFileTypes: true, encoding: 'utf8' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  return names.filter((entry) => entry.isFile()).map((entry) => segmentNumberOf(entry.name)).filter((n): n is number => n !== undefined);
}

/**
 * Whether an open index reads as a new one while the log has segments: it holds no log
 * position and no entry for any segment file in blobs/. A store writes its position at its first
 * open, before anything is logged, so only a damaged index reads so (a page of it lost, its
 * meta database reading empty); recovery would take it for a new store, start the log after
 * every segment and remove them all as files it does not know (docs/STORAGE.md, "Recovery").
 * @param segments the segment numbers in blobs/ (`segmentFilesIn`)
 */
export function readsAsNew(dbs: StoreDatabases, segments: number[]): boolean {
  return segments.length > 0 && indexedLogPosition(dbs) === undefined && !segments.some((n) => dbs.segments.get(n) !== undefined);
}

/**
 * Whether the `meta` database holds a key no release writes (they are all strings), or cannot be
 * read: a page of another database where meta's should be, as a lost page that reads back older
 * content gives (docs/STORAGE.md, "A damaged index"). Its log position then reads as none, and the
 * replay would start after every segment, passing over every create only the log holds.
 */
export function metaIsForeign(dbs: StoreDatabases): boolean {
  try {
    for (const key of dbs.meta.getKeys()) if (typeof key !== 'string') return true;
    return false;
  } catch {
    return true;
  }
}

/**
 * Refuses an index that opened but reads as new while the log has segments (`readsAsNew`), or
 * whose `meta` database is another's (`metaIsForeign`): closes it, then throws. Call right after
 * LMDB opens, before anything writes to it.
 * @throws IndexDamaged naming the problem and `edge-events check --repair`
 */
export async function assertIndexCoversLog(dbs: StoreDatabases, dataDir: string): Promise<void> {
  const segments = segmentFilesIn(dataDir);
  const problem = readsAsNew(dbs, segments)
    ? `reads as a new, empty index (no log position, no entry for any of the ${segments.length} segment file${segments.length === 1 ? '' : 's'} in blobs/), `
      + 'so the open would remove the whole log as files it does not know'
    : metaIsForeign(dbs)
      ? 'has a meta database holding another database\'s keys (a page that is not its own), so its log position is lost and the open would pass over the creates only the log holds'
      : undefined;
  if (!problem) return;
  await dbs.root.close();
  throw new IndexDamaged(dataDir, problem);
}

/** Largest data.mdb whose trees the open walks whole (bytes): a read of each page, some milliseconds. */
const WALK_AT_OPEN_BYTES = 64 * 1024 * 1024;

/**
 * Refuses to open an index LMDB cannot open safely (docs/STORAGE.md, "A damaged index"): a
 * damaged `db/data.mdb` (`inspectIndexFile`, its trees walked when it is at most
 * WALK_AT_OPEN_BYTES), or none at all (missing or empty) while blobs/
 * holds segments of the log: LMDB would start an empty index, whose log position is after
 * every segment, and the open's tidy step would then remove every segment as a file no entry
 * knows. Call with the data directory locked, before LMDB opens.
 * @throws IndexDamaged naming the problem and `edge-events check --repair`
 * @throws the fs error of a failed read
 */
export function assertIndexOpenable(dataDir: string): void {
  // With the records in blocks, data.mdb stays small: every page its trees reach is read once, so
  // a branch or leaf page damaged is refused here instead of killing a later read (SIGSEGV,
  // LMDB's assertions). A large index of an earlier release is walked by `edge-events check`.
  const file = path.join(dataDir, 'db', 'data.mdb');
  const walk = (fs.statSync(file, { throwIfNoEntry: false })?.size ?? 0) <= WALK_AT_OPEN_BYTES;
  const report = inspectIndexFile(dataDir, { walk });
  if (report.state === 'damaged') throw new IndexDamaged(dataDir, `is damaged: ${report.problem}`);
  if (report.state === 'absent') {
    const segments = segmentFilesIn(dataDir).length;
    if (segments > 0) {
      throw new IndexDamaged(dataDir, `is missing or empty while blobs/ holds ${segments} segment file${segments === 1 ? '' : 's'} of the log `
        + '(an empty index would start after them, and the open would remove them as files it does not know)');
    }
  }
}
