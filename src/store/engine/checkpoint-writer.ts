/**
 * The LMDB entries of what the log holds (docs/STORAGE.md, "The index"): creates and updates to
 * events (record-update.ts), written by a checkpoint of the head and by recovery when it
 * replays frames the index had not covered. Both go through `indexLogged`, so a replayed create
 * or update gets exactly the entries a live one gets.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { PutOptions } from 'lmdb';
import { draftKey, EMPTY, fileAgeKey, fileIdsOf, indexKeysOf } from '../index/index-keys.js';
import { enterLedger } from '../ledger/sink-ledger.js';
import { addToCounters, indexedLogPosition, LOG_POSITION_KEY, type LogPosition, type StoreDatabases } from '../index/lmdb-env.js';
import type { FileEntry } from '../log/log-entries.js';
import type { HeadBatch, LoggedCreate, LoggedEntries } from '../head/head.js';
import { IndexKeyOrder } from '../index/index-key-order.js';
import { decodeRecord, encodeRecord, type RecordPresenter } from '../index/record-codec.js';
import { applyUpdate, attachedFile, encodeUpdate, updateCounts, type RecordUpdate } from '../index/record-update.js';
import { FRAME_HEADER_BYTES } from '../log/segment-frames.js';
import type { StoredEvents } from '../read/stored-events.js';
import { FrameTally } from './frame-accounting.js';
import { enterBlockSync, foldUpdates, goesToBlock, writeCheckpointBlock, type WrittenBlock } from './checkpoint-block.js';
import { hideRowSync, moveToLmdbSync } from './block-rows.js';

/** How a store indexes. */
export interface IndexOptions {
  /** Sinks are configured: finalized events enter the shipping ledger. */
  shipping: boolean;
  /** The presenter records are stored with (store-view.ts `StoreOptions.present`). */
  present: RecordPresenter;
  /**
   * The index key prefixes of a create's record as created, when known already (the head's
   * `createdPrefixes`): a block's postings then cost no second pass over the record.
   */
  prefixesOf?: (createdAt: number) => readonly string[] | undefined;
}

/**
 * Creates gathered between two turns of the event loop (docs/STORAGE.md, "The head"): a
 * checkpoint of thousands of creates yields between runs of this many, so the HTTP thread answers
 * requests meanwhile instead of stalling for the whole checkpoint.
 */
const GATHER_RUN_CREATES = 256;

/** Puts issued in one turn of the event loop (same section): those of about 200 bench creates. */
const PUT_RUN_ENTRIES = 4096;

/**
 * Creates whose entries are put in key order together (docs/STORAGE.md, "Checkpoint commits"):
 * a checkpoint of up to CHECKPOINT_BATCH_ENTRIES creates in one window, a larger replay in
 * windows of this many, so the entries gathered stay a few MB.
 */
const ORDER_WINDOW_CREATES = 2048;

/**
 * The entries of a window of creates, gathered until `putWindow` issues them. The creates' ids
 * and records are read from the creates themselves as they are put: what a window holds lives
 * through several turns of the event loop, so every young-generation GC in between copies it
 * (native-bench/PROFILE.md, "The checkpoint's garbage").
 */
interface Window {
  creates: LoggedCreate[];
  files: [fileId: string, entry: FileEntry][];
  index: IndexKeyOrder;
}

/**
 * Commits `creates` and `updates`. Contract (why it holds: docs/STORAGE.md, "Checkpoint commits",
 * "Blocks"):
 * - creates that go to a block (checkpoint-block.ts `goesToBlock`) are written as one block file,
 *   with the checkpoint's updates to them applied (`foldUpdates`), before the commit, which
 *   enters it in the catalogue; LMDB then takes only their files' locations and files-by-age
 *   entries (and the shipping ledger's);
 * - otherwise the creates' file locations, ids, index entries (in key order) and records go first, as plain
 *   puts, ORDER_WINDOW_CREATES creates a window and PUT_RUN_ENTRIES puts a turn of the event loop,
 *   so a record in LMDB has every entry of its create there too;
 * - once they have committed, one transaction applies the segment accounting, the counters, the
 *   shipping ledger and every update (to the record as that transaction reads it), and moves the
 *   log position to the last of `batchEnds` (each batch's end counts for its segment's committed
 *   length), and counts each create's record frame and each update's frame live in its segment
 *   (frame-accounting.ts; docs/STORAGE.md, "Two copies of every record"); until it commits, recovery replays these creates and updates, and the counters,
 *   which add the head's batches past the position, count them once.
 * Readers that merge the head skip LMDB's entries of the head's creates (store-view.ts
 * `withHead`), which may be part-way in.
 * @throws the lmdb error of a failed commit (the batch's counters, updates and position are then
 *   not in the index; some of its creates' puts may be: a later checkpoint or replay puts them again)
 */
export async function indexLogged(
  stored: StoredEvents, { creates, updates }: LoggedEntries, batchEnds: readonly LogPosition[], updateSegments: readonly number[], { shipping, present, prefixesOf }: IndexOptions,
): Promise<void> {
  const { dbs } = stored;
  const logEnd = batchEnds[batchEnds.length - 1];
  const toBlock = goesToBlock(stored, creates);
  const folds = toBlock ? foldUpdates(creates, updates) : undefined;
  const frames = new FrameTally();
  const bySegment = new Map<number, { end: number; bytes: number; blobs: number }>();
  const committed: Promise<boolean>[] = [];
  let drafts = 0;
  let images = 0;
  let files = 0;
  let liveBytes = 0;
  const window: Window = { creates: [], files: [], index: new IndexKeyOrder() };
  for (const [n, create] of creates.entries()) {
    if (n > 0 && n % ORDER_WINDOW_CREATES === 0) await putWindow(dbs, window, committed);
    else if (n > 0 && n % GATHER_RUN_CREATES === 0) await nextTurn();
    const { record, files: own } = create;
    const createdAt = record.created_at;
    liveBytes += gatherFiles(create, window, bySegment);
    files += own.length;
    if (create.frame) {
      const { segment, offset, length } = create.frame;
      frames.added(segment, length + FRAME_HEADER_BYTES, true, create.copy ? undefined : createdAt, offset + length);
    }
    if (toBlock) {
      for (const fileId of fileIdsOf(record)) window.index.add(fileAgeKey(createdAt, fileId), createdAt);
    } else {
      window.creates.push(create);
      for (const key of indexKeysOf(record)) window.index.add(key, createdAt);
    }
    if (record.draft) drafts++;
    images += record.images.length;
  }
  await putWindow(dbs, window, committed);
  // Each batch's end counts for its own segment: batches before a roll end in an older segment,
  // with record frames after its last image, which a restart must not cut as an unlogged tail.
  for (const end of batchEnds) {
    const logged = bySegment.get(end.segment) ?? { end: 0, bytes: 0, blobs: 0 };
    logged.end = Math.max(logged.end, end.offset);
    bySegment.set(end.segment, logged);
  }
  await Promise.all(committed);
  const block: WrittenBlock | undefined = folds ? await writeCheckpointBlock(stored, creates, logEnd, { prefixesOf, present, folds }) : undefined;
  await dbs.root.transaction(() => {
    if (block) enterBlockSync(dbs, block);
    else hideInBlocksSync(stored, creates);
    advanceLogSync(dbs, bySegment, logEnd);
    addToCounters(dbs, { events: creates.length, images, drafts, files, liveBlobBytes: liveBytes });
    if (shipping) for (const { record } of creates) if (!record.draft) enterLedger(dbs, record.created_at);
    for (const { record, frame, copy } of creates) if (copy && frame) dbs.recordFrames.putSync(record.created_at, { home: frame.segment, updates: [] });
    updates.forEach((update, i) => applyLoggedUpdateSync(stored, update, updateSegments[i], frames, { shipping, present }, folds?.applied.has(i) ?? false));
    frames.apply(dbs);
  });
}

/**
 * Adds what a checkpoint logged to each segment's entry (`bySegment`: where its frames end, the
 * bytes and blobs it added) and moves LMDB's log position to `logEnd` unless it is past it; call
 * inside the checkpoint's write transaction.
 */
function advanceLogSync(dbs: StoreDatabases, bySegment: ReadonlyMap<number, { end: number; bytes: number; blobs: number }>, logEnd: LogPosition): void {
  for (const [number, added] of bySegment) {
    const segment = dbs.segments.get(number) ?? { committed: 0, liveBytes: 0, liveBlobs: 0 };
    dbs.segments.putSync(number, {
      ...segment,
      committed: Math.max(segment.committed, added.end),
      liveBytes: segment.liveBytes + added.bytes,
      liveBlobs: segment.liveBlobs + added.blobs,
    });
  }
  const position = indexedLogPosition(dbs);
  if (!position || position.segment < logEnd.segment || (position.segment === logEnd.segment && position.offset < logEnd.offset)) {
    dbs.meta.putSync(LOG_POSITION_KEY, logEnd);
  }
}

/**
 * Applies one update logged in `segment` (applyUpdateSync), and counts its frame in `frames`: live
 * when its event was there to take it, with the segment added to the event's `record_frames`
 * (docs/STORAGE.md, "Two copies of every record"); call inside the write transaction.
 */
function applyLoggedUpdateSync(stored: StoredEvents, update: RecordUpdate, segment: number, frames: FrameTally, { shipping, present }: IndexOptions, folded: boolean): void {
  const { dbs } = stored;
  const applied = folded ? foldedUpdateSync(dbs, update, shipping) : applyUpdateSync(stored, update, shipping, present);
  frames.added(segment, encodeUpdate(update).length + FRAME_HEADER_BYTES, applied);
  if (!applied) return;
  const entry = dbs.recordFrames.get(update.createdAt) ?? { updates: [] };
  dbs.recordFrames.putSync(update.createdAt, { ...entry, updates: [...entry.updates, segment] });
}

/**
 * Gathers the file locations of `create` into `window`, and counts each file's bytes live in its
 * segment (`bySegment`: where its frames end, bytes and blobs).
 * @returns the bytes of its files
 */
function gatherFiles(create: LoggedCreate, window: Window, bySegment: Map<number, { end: number; bytes: number; blobs: number }>): number {
  let bytes = 0;
  for (const file of create.files) {
    const { at } = file;
    window.files.push([file.fileId, { segment: at.segment, offset: at.offset, length: at.length, kind: file.kind, contentType: file.contentType, event: create.record.created_at, crc: at.crc }]);
    const segment = bySegment.get(at.segment) ?? { end: 0, bytes: 0, blobs: 0 };
    segment.end = Math.max(segment.end, at.offset + at.length);
    segment.bytes += at.length;
    segment.blobs++;
    bySegment.set(at.segment, segment);
    bytes += at.length;
  }
  return bytes;
}

/**
 * Issues the puts `window` gathered, in the order `indexLogged` gives, PUT_RUN_ENTRIES per turn
 * of the event loop from the next, adding their promises to `committed`; leaves `window` empty.
 */
async function putWindow(dbs: StoreDatabases, window: Window, committed: Promise<boolean>[]): Promise<void> {
  await nextTurn();
  let n = 0;
  for (const put of windowPuts(dbs, window)) {
    // lmdb-js answers the plain puts of one commit with the same promise (write.js `commitPromise`):
    // one reference each is enough to wait for them all.
    if (put !== committed[committed.length - 1]) committed.push(put);
    if (++n % PUT_RUN_ENTRIES === 0) await nextTurn();
  }
}

/** Issues the puts of `window` one by one as it is walked, in the order `indexLogged` gives; empties `window`. */
function* windowPuts(dbs: StoreDatabases, window: Window): Generator<Promise<boolean>, void, undefined> {
  for (const [fileId, entry] of window.files.splice(0)) yield dbs.files.put(fileId, entry);
  const creates = window.creates.splice(0);
  for (const { record } of creates) yield dbs.eventIds.put(record.id, record.created_at);
  for (const key of window.index.take()) yield dbs.index.put(key, EMPTY);
  for (const { record, value } of creates) yield putCreated(dbs, record.created_at, value);
}

/**
 * Puts a create's record into `events`, keyed by its `created_at` (µs), at the end of the B-tree
 * with LMDB's `MDB_APPEND` (docs/STORAGE.md, "Records fill their pages"). LMDB splits a full
 * leaf page in the middle unless the put appends; records of about 1.8 KB, two to a 4 KiB page,
 * put in key order would then end one to a page, which doubles the pages the index stores and
 * the pages each checkpoint writes. An append whose key is not past the last one (a create that
 * came out of order, or one a replay puts again after a failed checkpoint had put it) fails with
 * `MDB_KEYEXIST`, which lmdb-js answers as `false` and not as an error: it is then put in place.
 * lmdb-js's asynchronous `put` takes the same options object as `putSync` (lmdb-js README,
 * "db.putSync"; write.js `put` sets `MDB_APPEND` for `append`); its typings list only `putSync`'s.
 * @returns true once the record is in a commit
 * @throws the lmdb error of a failed commit
 */
async function putCreated(dbs: StoreDatabases, createdAt: number, value: Buffer): Promise<boolean> {
  const put = dbs.events.put as (key: number, value: Buffer, options: PutOptions) => Promise<boolean>;
  return (await put.call(dbs.events, createdAt, value, { append: true })) || dbs.events.put(createdAt, value);
}

/**
 * Commits batches of the head, oldest first (a checkpoint, event-store.ts `commitHead`, or
 * a replay past the checkpoint's size trigger, recovery.ts): their creates, then their updates, in
 * one `indexLogged` that brings LMDB's log position to where the last batch ends, and each
 * segment's committed length to where the last batch in it ends.
 * @throws as `indexLogged`
 */
export async function indexBatches(stored: StoredEvents, batches: readonly HeadBatch[], options: IndexOptions): Promise<void> {
  const creates = batches.flatMap((b) => b.creates);
  const updates = batches.flatMap((b) => b.updates);
  const updateSegments = batches.flatMap((b) => b.updates.map(() => b.end.segment));
  await indexLogged(stored, { creates, updates }, batches.map((b) => b.end), updateSegments, options);
}

/**
 * Applies one update to its event's record, with the entries and counters it moves; call inside a
 * write transaction. An event in a block moves to LMDB, updated (`moveToLmdbSync`). An event
 * deleted meanwhile (by a cleanup) takes no update; the segment of a file attached to it is
 * entered with no live blob, so the lifecycle worker deletes it.
 * @returns whether the event was there to take it
 */
function applyUpdateSync(stored: StoredEvents, update: RecordUpdate, shipping: boolean, present: RecordPresenter): boolean {
  const { dbs } = stored;
  const { createdAt } = update;
  const inBlock = !dbs.events.doesExist(createdAt) && stored.inBlock(createdAt);
  const value = stored.value(createdAt);
  const record = value && decodeRecord(value);
  const applied = record !== undefined && applyUpdate(record, update);
  if (update.type === 'attach') {
    const { size_bytes: size } = update.file;
    dbs.segments.putSync(update.segment, {
      committed: attachedFile(update).offset + size, liveBytes: applied ? size : 0, liveBlobs: applied ? 1 : 0, sealed: true,
    });
  }
  if (!applied) return false;
  if (inBlock) moveToLmdbSync(dbs, record, present);
  else dbs.events.putSync(createdAt, encodeRecord(record, present));
  if (update.type === 'finalize') dbs.index.removeSync(draftKey(createdAt));
  updateEntriesSync(dbs, update, shipping);
  return true;
}

/**
 * An update already in its create's block row (checkpoint-block.ts `foldUpdates`): the attached
 * file's segment entered, and what `updateEntriesSync` changes; call inside a write transaction.
 * @returns true: it was applied
 */
function foldedUpdateSync(dbs: StoreDatabases, update: RecordUpdate, shipping: boolean): true {
  if (update.type === 'attach') {
    const { size_bytes: size } = update.file;
    dbs.segments.putSync(update.segment, { committed: attachedFile(update).offset + size, liveBytes: size, liveBlobs: 1, sealed: true });
  }
  updateEntriesSync(dbs, update, shipping);
  return true;
}

/**
 * What an applied update changes besides its event's record: the counters, the shipping ledger
 * (a finalize), the attached file's location and files-by-age entry (an attach); call inside a
 * write transaction.
 */
function updateEntriesSync(dbs: StoreDatabases, update: RecordUpdate, shipping: boolean): void {
  const { createdAt } = update;
  // The ledger counts uploadsPending itself.
  addToCounters(dbs, updateCounts(update, false));
  if (update.type === 'finalize') {
    if (shipping) enterLedger(dbs, createdAt);
  } else {
    dbs.files.putSync(update.file.file_id, attachedFile(update));
    dbs.index.putSync(fileAgeKey(createdAt, update.file.file_id), EMPTY);
  }
}

/**
 * Hides the block rows of `creates` indexed in LMDB (a rebuild's record copies of events a block
 * written earlier in the same replay holds), so each event is read from one place; call inside
 * the write transaction that commits them.
 */
function hideInBlocksSync(stored: StoredEvents, creates: readonly LoggedCreate[]): void {
  for (const { record } of creates) if (stored.inBlock(record.created_at)) hideRowSync(stored.dbs, record.created_at);
}
