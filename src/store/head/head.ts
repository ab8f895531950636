/**
 * The head (docs/STORAGE.md, "The head"): what is durable in the segment log and not
 * yet checkpointed into LMDB: creates, and updates to events (finalize, attach: record-update.ts).
 * It lives in memory on the HTTP thread, which merges it into every read it answers (point reads,
 * file lookups, lists, searches, counts, counters); a checkpoint commits the oldest batches to
 * LMDB (their creates' puts, then one transaction with their updates and the log position) and
 * drops them from the head as soon as that transaction completes. Until then a batch may be in
 * both, part-way or whole, which every read tolerates: point reads ask the head first, cursors
 * read LMDB only below the head's oldest create (store-view.ts `withHead`), counters and updates
 * go by the log position LMDB covers.
 *
 * An update may be to an event in the head or to one already in LMDB. Reads apply the head's
 * updates to LMDB's record as they read it, so an update made meanwhile in LMDB by the lifecycle
 * worker (a cleanup deleting the event or one of its files) is never hidden.
 */
import type { AppendedFrame } from '../log/blob-log.js';
import { SortedValuesCursor, type CreatedAtCursor, type Direction } from '../index/created-at-cursors.js';
import { HeadIndex } from './head-index.js';
import type { Counters, LogPosition } from '../index/lmdb-env.js';
import type { FileEntry, FileKind } from '../log/log-entries.js';
import type { EventRecord } from '../record/event-record.js';
import { decodeRecord, encodeRecord, type RecordPresenter } from '../index/record-codec.js';
import { applyUpdate, attachedFile, updateCounts, type RecordUpdate } from '../index/record-update.js';

/** A file of a create and where its frame landed. */
export interface PlacedFile {
  fileId: string;
  kind: FileKind;
  contentType: string;
  at: AppendedFrame;
}

/** A create whose frames are durable in the log: its record, stored value and files. */
export interface LoggedCreate {
  record: EventRecord;
  /** The record as the `events` database stores it (record-codec.ts). */
  value: Buffer;
  files: PlacedFile[];
  /**
   * Where its record frame is (the data's offset and length, bytes; docs/STORAGE.md, "Two copies
   * of every record"); set once appended.
   */
  frame?: { segment: number; offset: number; length: number };
  /** The frame is a record copy a rebuild replays (its files placed anywhere), not the create's own. */
  copy?: boolean;
}

/** What a checkpoint or a replay step indexes (checkpoint-writer.ts): creates, then updates to events created before them or among them. */
export interface LoggedEntries {
  creates: LoggedCreate[];
  updates: RecordUpdate[];
}

/**
 * Creates and updates appended to the log together (or replayed from it together: recovery.ts),
 * waiting in the head for their checkpoint;
 * the updates are to events created before this batch, in log order.
 */
export interface HeadBatch extends LoggedEntries {
  /** Where the batch's last frame ends in the log: what a checkpoint of it moves LMDB's log position to. */
  end: LogPosition;
}

/** An update in the head and where its batch ends in the log. */
interface HeadUpdate {
  update: RecordUpdate;
  end: LogPosition;
}

/** What the head adds to LMDB's counters (lmdb-env.ts `Counters`). */
type CounterDelta = Pick<Counters, 'events' | 'images' | 'drafts' | 'files' | 'liveBlobBytes' | 'uploadsPending'>;

const NO_DELTA: CounterDelta = { events: 0, images: 0, drafts: 0, files: 0, liveBlobBytes: 0, uploadsPending: 0 };

/** True when LMDB's log position `covered` is at or past `end`, the end of a batch. */
function isCovered(end: LogPosition, covered: LogPosition | undefined): boolean {
  if (!covered) return false;
  return covered.segment > end.segment || (covered.segment === end.segment && covered.offset >= end.offset);
}

/** The head, in memory; see the module comment. */
export class Head {
  private batches: HeadBatch[] = [];
  /** What each batch adds to the counters, in the order of `batches`. */
  private deltas: CounterDelta[] = [];
  /** When each batch entered the head (`performance.now()`, ms), in the order of `batches`. */
  private arrivals: number[] = [];
  /** created_at of every create in the head, ascending (the log assigns them in increasing order). */
  private order: number[] = [];
  private readonly creates = new Map<number, LoggedCreate>();
  private readonly ids = new Map<string, number>();
  private readonly files = new Map<string, FileEntry>();
  /** Bytes of the stored records in the head (its memory, blobs aside): what the size trigger of a checkpoint weighs. */
  bytes = 0;

  /**
   * Updates per event (created_at, µs), in log order: of events in the head and of events in
   * LMDB alike.
   */
  private readonly updates = new Map<number, HeadUpdate[]>();
  /** created_at of the events in LMDB (not in the head) with updates in the head, ascending. */
  private updatedOrder: number[] = [];
  /** Records of the head's creates with their updates applied, as stored (record-codec.ts), until the next update to them. */
  private readonly updatedValues = new Map<number, Buffer>();
  private updateCount = 0;
  /** The head's own index of its creates, updates applied (head-index.ts): what plans read of the head. */
  readonly index = new HeadIndex(() => this.order);

  constructor(private readonly shipping: boolean, private readonly present: RecordPresenter) {}

  /** Nothing is waiting for a checkpoint. */
  get empty(): boolean {
    return this.batches.length === 0;
  }

  /** Creates and updates in the head: what the size triggers of a checkpoint count. */
  get entries(): number {
    return this.order.length + this.updateCount;
  }

  /** When the oldest batch entered the head (`performance.now()`, ms); what a checkpoint's wait counts from. */
  get since(): number | undefined {
    return this.arrivals[0];
  }

  /** Batches in the head, oldest first (a checkpoint commits a prefix of them). */
  get pending(): readonly HeadBatch[] {
    return this.batches;
  }

  /**
   * Adds a batch whose frames are durable in the log; its creates are visible from now on.
   * `arrivedAt` is when it entered the head (`performance.now()`, ms).
   */
  add(batch: HeadBatch, arrivedAt: number): void {
    this.batches.push(batch);
    this.arrivals.push(arrivedAt);
    const delta = { ...NO_DELTA };
    this.deltas.push(delta);
    for (const create of batch.creates) {
      const { record, value } = create;
      this.order.push(record.created_at);
      this.creates.set(record.created_at, create);
      this.ids.set(record.id, record.created_at);
      for (const file of create.files) {
        const { at } = file;
        this.files.set(file.fileId, {
          segment: at.segment, offset: at.offset, length: at.length, kind: file.kind,
          contentType: file.contentType, event: record.created_at, crc: at.crc,
        });
      }
      this.bytes += value.length;
      this.count(delta, create);
      this.index.set(record.created_at, record);
    }
    this.updateCount += batch.updates.length;
    for (const update of batch.updates) {
      const { createdAt } = update;
      const list = this.updates.get(createdAt);
      if (list) list.push({ update, end: batch.end });
      else {
        this.updates.set(createdAt, [{ update, end: batch.end }]);
        if (!this.creates.has(createdAt)) insertSorted(this.updatedOrder, createdAt);
      }
      this.updatedValues.delete(createdAt);
      if (update.type === 'attach') this.files.set(update.file.file_id, attachedFile(update));
    }
    for (const createdAt of new Set(batch.updates.map((update) => update.createdAt))) {
      if (this.creates.has(createdAt)) this.index.set(createdAt, this.updatedCreate(createdAt));
    }
  }

  /** The record of the head's create at `createdAt` with the head's updates to it applied (a copy; geometry left out, as the head keeps it). */
  private updatedCreate(createdAt: number): EventRecord {
    const record = structuredClone(this.creates.get(createdAt)!.record);
    for (const { update } of this.updates.get(createdAt) ?? []) applyUpdate(record, update);
    return record;
  }

  /**
   * Drops the first `n` batches: their checkpoint has committed them to LMDB, and reads now find
   * them there (lmdb-js resets its read transaction before it resolves a commit: write.js `resolveCommit`).
   */
  drop(n: number): void {
    this.deltas.splice(0, n);
    this.arrivals.splice(0, n);
    for (const batch of this.batches.splice(0, n)) {
      for (const create of batch.creates) {
        const { record, value } = create;
        this.creates.delete(record.created_at);
        this.ids.delete(record.id);
        this.index.delete(record.created_at);
        for (const file of create.files) this.files.delete(file.fileId);
        this.bytes -= value.length;
        // Updated by a later batch still in the head: LMDB holds the event now, the head its update.
        if (this.updates.has(record.created_at)) {
          this.updatedValues.delete(record.created_at);
          insertSorted(this.updatedOrder, record.created_at);
        }
      }
      this.order.splice(0, batch.creates.length);
      this.updateCount -= batch.updates.length;
      for (const update of batch.updates) {
        const { createdAt } = update;
        const list = this.updates.get(createdAt)!;
        list.shift(); // the oldest: batches leave the head oldest first
        this.updatedValues.delete(createdAt);
        if (update.type === 'attach') this.files.delete(update.file.file_id);
        if (list.length > 0) continue;
        this.updates.delete(createdAt);
        const at = this.updatedOrder.indexOf(createdAt);
        if (at >= 0) this.updatedOrder.splice(at, 1);
      }
    }
  }

  /** Empties the head without a checkpoint (a failed reset's caller has checkpointed first). */
  clear(): void {
    this.drop(this.batches.length);
  }

  /** The create of the event created at `createdAt` (µs) is in the head. */
  holds(createdAt: number): boolean {
    return this.creates.has(createdAt);
  }

  /** created_at of event `id` when it is in the head. */
  createdAtOf(id: string): number | undefined {
    return this.ids.get(id);
  }

  /**
   * The stored value (record-codec.ts) of the create at `createdAt` when it is in the head, with
   * the head's updates to it applied.
   */
  value(createdAt: number): Buffer | undefined {
    const create = this.creates.get(createdAt);
    if (!create) return undefined;
    const updates = this.updates.get(createdAt);
    if (!updates) return create.value;
    let value = this.updatedValues.get(createdAt);
    if (!value) {
      const record = decodeRecord(create.value);
      for (const { update } of updates) applyUpdate(record, update);
      value = encodeRecord(record, this.present);
      this.updatedValues.set(createdAt, value);
    }
    return value;
  }

  /** The head holds updates to the event created at `createdAt` (µs), wherever the event is. */
  isUpdated(createdAt: number): boolean {
    return this.updates.has(createdAt);
  }

  /**
   * The index key prefixes a plan finds the create at `createdAt` under (index-keys.ts
   * `plannedPrefixKeys` of its record as created), from the head's own index; undefined when the
   * head holds no such create or has updated it (its index then holds the record as updated).
   */
  createdPrefixes(createdAt: number): string[] | undefined {
    return this.isUpdated(createdAt) ? undefined : this.index.prefixKeysOf(createdAt);
  }

  /** The head holds updates to some event. */
  get hasUpdates(): boolean {
    return this.updates.size > 0;
  }

  /**
   * `stored`, LMDB's value of the event created at `createdAt` (µs), with the head's updates to
   * it that LMDB's position `covered` does not cover applied; `stored` itself when there are
   * none. `covered` must come from the same LMDB snapshot as `stored` (lmdb-env.ts
   * `indexedLogPosition`): a checkpoint that has just committed an update, before the head drops
   * it, is then applied once.
   */
  overlay(createdAt: number, stored: Buffer, covered: LogPosition | undefined): Buffer {
    const record = this.overlaidRecord(createdAt, stored, covered);
    return record ? encodeRecord(record, this.present) : stored;
  }

  /**
   * As `overlay`, but the record itself (decoded, a copy of its own), or undefined when no update
   * applied, so `stored` is the answer.
   */
  overlaidRecord(createdAt: number, stored: Buffer, covered: LogPosition | undefined): EventRecord | undefined {
    const updates = this.updates.get(createdAt)?.filter(({ end }) => !isCovered(end, covered));
    if (!updates || updates.length === 0) return undefined;
    const record = decodeRecord(stored);
    let updated = false;
    for (const { update } of updates) updated = applyUpdate(record, update) || updated;
    return updated ? record : undefined;
  }

  /** Where file `fileId` lives in the log when its create or its attach is in the head (its event may since be deleted: a cleanup). */
  file(fileId: string): FileEntry | undefined {
    return this.files.get(fileId);
  }

  /** Oldest and newest created_at in the head (µs), or undefined when it is empty. */
  get oldest(): number | undefined {
    return this.order[0];
  }

  get newest(): number | undefined {
    return this.order[this.order.length - 1];
  }

  /**
   * Counters read from LMDB with the head's creates and updates added (`uploadsPending` counts
   * them only when shipping). `covered` is the log position the same LMDB snapshot covers
   * (lmdb-env.ts `indexedLogPosition`): a batch a checkpoint has just committed, not yet dropped,
   * is counted once, by LMDB. An update counts only while its event exists (`stored`: the event
   * created at a created_at is in LMDB), as its checkpoint applies it: a cleanup may delete an
   * event the head has updated.
   */
  addTo(counters: Counters, covered: LogPosition | undefined, stored: (createdAt: number) => boolean): Counters {
    const sum = { ...counters };
    for (let i = this.batches.length - 1; i >= 0 && !isCovered(this.batches[i].end, covered); i--) {
      const d = this.deltas[i];
      sum.events += d.events;
      sum.images += d.images;
      sum.drafts += d.drafts;
      sum.files += d.files;
      sum.liveBlobBytes += d.liveBlobBytes;
      sum.uploadsPending += d.uploadsPending;
      for (const update of this.batches[i].updates) {
        if (!this.creates.has(update.createdAt) && !stored(update.createdAt)) continue;
        for (const [key, n] of Object.entries(updateCounts(update, this.shipping))) sum[key as keyof Counters] += n;
      }
    }
    return sum;
  }

  /**
   * A cursor over the events in LMDB the head has updated, with created_at in [lo, hi] (µs), in
   * `direction`, those whose record as `recordOf` reads it (LMDB's with the updates applied;
   * undefined once deleted) exists and passes `accepts` (when given): merged with an LMDB cursor
   * that skips them (`isUpdated`), whose index entries may be stale.
   */
  updatedCursor(lo: number, hi: number, direction: Direction, recordOf: (createdAt: number) => EventRecord | undefined, accepts?: (record: EventRecord) => boolean): CreatedAtCursor {
    return new SortedValuesCursor(this.updatedOrder, lo, hi, direction, (createdAt) => {
      const record = recordOf(createdAt);
      return record !== undefined && (!accepts || accepts(record));
    });
  }

  private count(d: CounterDelta, { record, files }: LoggedCreate): void {
    d.events++;
    d.images += record.images.length;
    if (record.draft) d.drafts++;
    else if (this.shipping) d.uploadsPending++;
    d.files += files.length;
    for (const file of files) d.liveBlobBytes += file.at.length;
  }
}

/** Inserts `value` into ascending `values`, keeping them ascending. */
function insertSorted(values: number[], value: number): void {
  let at = values.length;
  while (at > 0 && values[at - 1] > value) at--;
  values.splice(at, 0, value);
}
