/**
 * The LMDB environment under DATA_DIR/db and its named databases (docs/STORAGE.md, "The index").
 * Opened by the HTTP thread and, later, the lifecycle worker: LMDB is safe across threads and
 * processes.
 *
 *   events    created_at (µs, number) -> record (msgpackr, versioned; see record-codec.ts)
 *   event_ids event id (uuid string)  -> created_at (µs)
 *   index     [field, value, created_at] -> empty  (secondary indexes; see index-keys.ts)
 *   files     file id (uuid string) -> FileEntry (blob location and kind)
 *   segments  segment number -> SegmentEntry (committed length, live blobs and frames)
 *   record_frames created_at (µs) -> EventFrames: an event's record copy and update frames (frame-accounting.ts)
 *   tombstones [segment, created_at] -> the deleted event's id and home segment, while that segment is on disk
 *   meta      name -> value (counters, next segment number)
 *   blocks    created_at (µs) of a block's oldest row -> BlockEntry: the block catalogue (docs/STORAGE.md, "Blocks")
 *   block_hidden created_at (µs) -> empty: rows of live blocks that are deleted, or whose event LMDB holds since
 */
import fs from 'node:fs';
import path from 'node:path';
import { open, type Database, type Key, type RootDatabase } from 'lmdb';
import type { FileEntry, SegmentEntry } from '../log/log-entries.js';

/** Maintained counters; /stats reads these instead of scanning. */
export interface Counters {
  events: number;
  images: number;
  drafts: number;
  files: number;
  liveBlobBytes: number;
  /** Finalized events some configured sink has not shipped (index `U`; sink-ledger.ts). */
  uploadsPending: number;
  /** The seq of the last entry of the shipping ledger (sink-ledger.ts). */
  ledgerSeq: number;
}

export const EMPTY_COUNTERS: Counters = { events: 0, images: 0, drafts: 0, files: 0, liveBlobBytes: 0, uploadsPending: 0, ledgerSeq: 0 };

export interface StoreDatabases {
  root: RootDatabase;
  events: Database<Buffer, number>;
  eventIds: Database<number, string>;
  index: Database<Buffer, Key[]>;
  files: Database<FileEntry, string>;
  segments: Database<SegmentEntry, number>;
  /** An event's frames besides its create's (engine/frame-accounting.ts `EventFrames`). */
  recordFrames: Database<{ home?: number; updates: number[] }, number>;
  /** Tombstones still needed: [their segment, the event's created_at] -> the event's id and home segment. */
  tombstones: Database<{ id: string; home: number }, [number, number]>;
  meta: Database<unknown, string>;
  /** The block catalogue: the live block files under DATA_DIR/blocks, by their oldest row's created_at (µs). */
  blocks: Database<BlockEntry, number>;
  /** Rows of live blocks to skip, by created_at (µs): events deleted, or updated and held by `events` since. */
  blockHidden: Database<Buffer, number>;
}

/**
 * A live block in the catalogue (docs/STORAGE.md, "Blocks"): its file in DATA_DIR/blocks, the
 * created_at (µs) of its newest row, its rows and size (bytes), and its merge level (0: written by
 * a checkpoint; n + 1: a merge of level-n blocks).
 */
export interface BlockEntry {
  name: string;
  newest: number;
  rows: number;
  bytes: number;
  level: number;
}

/** Where `meta` keeps the count of changes to the block catalogue and its hidden rows, which tells a thread's open blocks are stale. */
export const BLOCKS_VERSION_KEY = 'blocksVersion';

/** Counts a change to the block catalogue or its hidden rows; call inside a write transaction. */
export function blocksChanged(dbs: StoreDatabases): void {
  dbs.meta.putSync(BLOCKS_VERSION_KEY, ((dbs.meta.get(BLOCKS_VERSION_KEY) as number | undefined) ?? 0) + 1);
}

/**
 * The address space LMDB maps for data.mdb at open (bytes; docs/STORAGE.md, "The index's map").
 * lmdb-js grows the map on demand, to twice the pages in use, whenever a write needs more (its
 * LMDB fork, `mdb_page_alloc`), and LMDB never maps less than the file holds, so this is only
 * where it starts. A large one is refused wherever the address space is bounded (`ulimit -v`,
 * systemd's `LimitAS=`, qemu-user's placeholder mappings), and lmdb-js then crashes with a
 * segfault instead of throwing.
 */
export const INITIAL_MAP_BYTES = 256 * 1024 ** 2;

/**
 * Opens (creating when absent) the environment at `<dataDir>/db`.
 * @throws the lmdb error when the directory cannot be created or the env cannot be opened
 */
export function openDatabases(dataDir: string): StoreDatabases {
  const dbPath = path.join(dataDir, 'db');
  fs.mkdirSync(dbPath, { recursive: true });
  // lmdb-js's overlapping sync flushes each commit after it is visible; safeRestore opens the
  // last flushed transaction after any unclean stop, in the same boot too (lmdb-js README,
  // "Overlapping Sync Options"); the log replays what it lacks (docs/STORAGE.md, "Recovery").
  // (safeRestore is read by lmdb-js's open.js; its typings do not list it.)
  const options = { path: dbPath, maxDbs: 16, mapSize: INITIAL_MAP_BYTES, cache: false, safeRestore: true };
  const root = open(options);
  return {
    root,
    events: root.openDB({ name: 'events', encoding: 'binary' }),
    eventIds: root.openDB({ name: 'event_ids', encoding: 'ordered-binary' }),
    index: root.openDB({ name: 'index', encoding: 'binary' }),
    files: root.openDB({ name: 'files', encoding: 'msgpack' }),
    segments: root.openDB({ name: 'segments', encoding: 'msgpack' }),
    recordFrames: root.openDB({ name: 'record_frames', encoding: 'msgpack' }),
    tombstones: root.openDB({ name: 'tombstones', encoding: 'msgpack' }),
    meta: root.openDB({ name: 'meta', encoding: 'msgpack' }),
    blocks: root.openDB({ name: 'blocks', encoding: 'msgpack' }),
    blockHidden: root.openDB({ name: 'block_hidden', encoding: 'binary' }),
  };
}

/**
 * The stored value at `createdAt` in `events` as a view of lmdb-js's shared read buffer, no copy,
 * or undefined when there is none. Valid until the next read on this thread: copy what outlives it.
 *
 * `getBinaryFast` answers that shared buffer itself, its `length` an own property set to the
 * value's size while the typed array underneath spans the whole 16 MiB buffer (lmdb-js read.js,
 * `makeReusableBuffer`). Methods that read the typed array's own length (`subarray(start)` on
 * Node 24 and later, `Buffer.concat`, `toString`) then see 16 MiB; the view made here has the
 * value's true length, so nothing derived from it can run past the value (docs/STORAGE.md,
 * "Reading values without a copy").
 */
export function readEventValue(dbs: StoreDatabases, createdAt: number): Buffer | undefined {
  const shared = dbs.events.getBinaryFast(createdAt);
  return shared && Buffer.from(shared.buffer, shared.byteOffset, shared.length);
}

/** A place in the segment log: a segment number and a byte offset in it. */
export interface LogPosition {
  segment: number;
  offset: number;
}

/** Where the `meta` database keeps the log position the index covers. */
export const LOG_POSITION_KEY = 'logPosition';

/** The log position the index covers, read in the current transaction or read snapshot (undefined: none yet). */
export function indexedLogPosition(dbs: StoreDatabases): LogPosition | undefined {
  return dbs.meta.get(LOG_POSITION_KEY) as LogPosition | undefined;
}

/** The counters as last committed (reads inside a write transaction see that transaction). */
export function readCounters(dbs: StoreDatabases): Counters {
  return { ...EMPTY_COUNTERS, ...(dbs.meta.get('counters') as Partial<Counters> | undefined) };
}

/**
 * Counts what a store written before a counter existed does not have (today `uploadsPending`,
 * from the `U` index) and commits it; a no-op on a store that has every counter.
 */
export async function completeCounters(dbs: StoreDatabases, uploadsQueued: () => number): Promise<void> {
  const stored = dbs.meta.get('counters') as Partial<Counters> | undefined;
  if (stored === undefined || stored.uploadsPending !== undefined) return;
  await dbs.root.transaction(() => dbs.meta.putSync('counters', { ...readCounters(dbs), uploadsPending: uploadsQueued() }));
}

/** Adds `delta` to the counters; call inside a write transaction. */
export function addToCounters(dbs: StoreDatabases, delta: Partial<Counters>): void {
  const next = readCounters(dbs);
  for (const key of Object.keys(delta) as (keyof Counters)[]) next[key] += delta[key] ?? 0;
  dbs.meta.putSync('counters', next);
}
