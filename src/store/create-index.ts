/**
 * The LMDB entries of what the log holds (docs/STORAGE.md, "The index"): creates and changes to
 * events (record-change.ts), written by a checkpoint of the index head and by recovery when it
 * replays frames the index had not covered. Both go through `indexLogged`, so a replayed create
 * or change gets exactly the entries a live one gets.
 */
import type { PutOptions } from 'lmdb';
import { draftKey, EMPTY, fileAgeKey, indexKeysOf } from './index-keys.js';
import { enterLedger } from './sink-ledger.js';
import { addToCounters, indexedLogPosition, LOG_POSITION_KEY, type LogPosition, type StoreDatabases } from './lmdb-env.js';
import type { HeadBatch, LoggedCreate, LoggedEntries } from './index-head.js';
import { decodeRecord, encodeRecord, type RecordPresenter } from './record-codec.js';
import { applyChange, attachedFile, changeCounts, type RecordChange } from './record-change.js';

/**
 * Puts creates' records, ids, file locations and index entries into LMDB and resolves once they
 * have committed: `putCreates` on the calling thread, or the index writer thread's
 * (index-writer.ts).
 * @throws the lmdb error of a failed commit
 */
export type CreatePuts = (creates: readonly LoggedCreate[]) => Promise<void>;

/** How a store indexes. */
export interface IndexOptions {
  /** Sinks are configured: finalized events enter the shipping ledger. */
  shipping: boolean;
  /** The presenter records are stored with (store-view.ts `StoreOptions.present`). */
  present: RecordPresenter;
  /** Where the creates' puts run (docs/STORAGE.md, "The index head"); `putCreates` on this thread when unset. */
  putCreates?: CreatePuts;
}

/**
 * Puts the records, ids, file locations and index entries of `creates` into LMDB as plain puts,
 * all in one turn of the event loop: lmdb-js encodes them on the calling thread and applies a
 * turn's puts on its write thread in one transaction (lmdb-js `write.js`, event-turn batching),
 * so a checkpoint writes each B-tree page its creates land on once. Resolves once all have
 * committed. Runs on the HTTP thread for a small checkpoint and for recovery, and on the index
 * writer thread for a large checkpoint (index-writer.ts), which would otherwise hold the HTTP
 * thread for about 25 µs per create.
 * @throws the lmdb error of a failed commit (some of the puts may have committed: a later
 *   checkpoint or replay puts them again, with the same values)
 */
export async function putCreates(dbs: StoreDatabases, creates: readonly LoggedCreate[]): Promise<void> {
  const puts: Promise<boolean>[] = [];
  for (const { record, value, files } of creates) {
    for (const file of files) {
      const { at } = file;
      puts.push(dbs.files.put(file.fileId, {
        segment: at.segment, offset: at.offset, length: at.length, kind: file.kind,
        contentType: file.contentType, event: record.created_at, crc: at.crc,
      }));
    }
    puts.push(putCreated(dbs, record.created_at, value), dbs.eventIds.put(record.id, record.created_at));
    for (const key of indexKeysOf(record)) puts.push(dbs.index.put(key, EMPTY));
  }
  await Promise.all(puts);
}

/**
 * Commits the LMDB entries of `creates` and `changes`: first the creates' puts (`options.putCreates`,
 * `putCreates` on this thread when unset); once they have committed, one transaction with the
 * segment accounting, the counters, the shipping ledger, every change (applied to the record as
 * that transaction reads it) and the log position `logEnd` they bring the index to (a
 * read-modify-write that must see every earlier commit). The position moves only in that last
 * transaction, so until it commits recovery replays these creates and changes, and counters,
 * which add the head's batches past the position, count them once (docs/STORAGE.md, "The index
 * head").
 * @throws the lmdb error of a failed commit (the batch's counters, changes and position are then
 *   not in the index; some of its creates' puts may be: a later checkpoint or replay puts them again)
 */
export async function indexLogged(dbs: StoreDatabases, { creates, changes }: LoggedEntries, logEnd: LogPosition, options: IndexOptions): Promise<void> {
  const { shipping, present } = options;
  const bySegment = new Map<number, { end: number; bytes: number; blobs: number }>();
  let drafts = 0;
  let images = 0;
  let files = 0;
  let liveBytes = 0;
  for (const { record, files: own } of creates) {
    for (const { at } of own) {
      const segment = bySegment.get(at.segment) ?? { end: 0, bytes: 0, blobs: 0 };
      segment.end = Math.max(segment.end, at.offset + at.length);
      segment.bytes += at.length;
      segment.blobs++;
      bySegment.set(at.segment, segment);
      liveBytes += at.length;
    }
    files += own.length;
    if (record.draft) drafts++;
    images += record.images.length;
  }
  const logged = bySegment.get(logEnd.segment) ?? { end: 0, bytes: 0, blobs: 0 };
  logged.end = Math.max(logged.end, logEnd.offset);
  bySegment.set(logEnd.segment, logged);
  if (creates.length > 0) await (options.putCreates ?? ((c) => putCreates(dbs, c)))(creates);
  await dbs.root.transaction(() => {
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
    addToCounters(dbs, { events: creates.length, images, drafts, files, liveBlobBytes: liveBytes });
    if (shipping) for (const { record } of creates) if (!record.draft) enterLedger(dbs, record.created_at);
    for (const change of changes) applyChangeSync(dbs, change, shipping, present);
  });
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
 * Commits batches of the index head, oldest first (a checkpoint, event-store.ts `commitHead`, or
 * a replay past the checkpoint's size trigger, recovery.ts): their creates, then their changes, in
 * one `indexLogged` that brings LMDB's log position to where the last batch ends; `options.putCreates`
 * says where the creates' puts run.
 * @throws as `indexLogged`
 */
export async function indexBatches(dbs: StoreDatabases, batches: readonly HeadBatch[], options: IndexOptions): Promise<void> {
  const creates = batches.flatMap((b) => b.creates);
  const changes = batches.flatMap((b) => b.changes);
  await indexLogged(dbs, { creates, changes }, batches[batches.length - 1].end, options);
}

/**
 * Applies one change to its event's record in LMDB, with the entries and counters it moves; call
 * inside a write transaction. An event deleted meanwhile (by a cleanup) takes no change; the
 * segment of a file attached to it is entered with no live blob, so the lifecycle worker deletes
 * it.
 */
function applyChangeSync(dbs: StoreDatabases, change: RecordChange, shipping: boolean, present: RecordPresenter): void {
  const { createdAt } = change;
  const stored = dbs.events.getBinary(createdAt);
  const record = stored && decodeRecord(stored);
  const applied = record !== undefined && applyChange(record, change);
  if (change.type === 'attach') {
    const { size_bytes: size } = change.file;
    dbs.segments.putSync(change.segment, {
      committed: attachedFile(change).offset + size, liveBytes: applied ? size : 0, liveBlobs: applied ? 1 : 0, sealed: true,
    });
  }
  if (!applied) return;
  dbs.events.putSync(createdAt, encodeRecord(record, present));
  // The ledger counts uploadsPending itself.
  addToCounters(dbs, changeCounts(change, false));
  if (change.type === 'finalize') {
    dbs.index.removeSync(draftKey(createdAt));
    if (shipping) enterLedger(dbs, createdAt);
  } else {
    dbs.files.putSync(change.file.file_id, attachedFile(change));
    dbs.index.putSync(fileAgeKey(createdAt, change.file.file_id), EMPTY);
  }
}
