/**
 * The storage engine's facade for the HTTP thread: a StoreView (lookups, counters, file
 * locations) plus durable creates by group commit and the data directory lock. Queries live in
 * event-query.ts, changes to events in event-updates.ts, recovery in recovery.ts. The domain
 * (src/events) talks to the store only through these modules; nothing outside src/store sees LMDB.
 */
import { randomUUID } from 'node:crypto';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { fromDiskError } from '../errors.js';
import type { ImageResults, StoredImage } from '../events/types.js';
import { ensureBlobDirs, SegmentAppender, type BlobToAppend } from './blob-log.js';
import { lockDataDir } from './data-dir-lock.js';
import { GroupCommitter } from './group-commit.js';
import { EMPTY, indexKeysOf, uploadKey } from './index-keys.js';
import { addToCounters, completeCounters, openDatabases, type StoreDatabases } from './lmdb-env.js';
import { encodeRecord, type EventRecord } from './record-codec.js';
import { recoverStore } from './recovery.js';
import { StoreView, type StoreOptions } from './store-view.js';
import { nextUniqueMicros } from './timestamps.js';

/** An image of a create, decoded: its bytes and sniffed content type. */
export interface DecodedImage {
  bytes: Buffer;
  contentType: string;
}

/** A create request ready to store: the record's fields and the decoded images. */
export interface NewEvent {
  fields: Omit<EventRecord, 'id' | 'created_at' | 'images' | 'videos' | 'local_only_files' |
    'original_file_count' | 'current_file_count' | 'finalized_at' | 'auto_finalized_at'>;
  images: { results: ImageResults; image: DecodedImage | null; input: DecodedImage | null }[];
}

/** What a durable create returns. `created_at` in µs. */
export interface CreatedEvent {
  id: string;
  image_ids: string[];
  created_at: number;
  draft: boolean;
}


interface PreparedCreate {
  record: EventRecord;
  blobs: (BlobToAppend & { contentType: string })[];
}

/** The on-disk store under one DATA_DIR. */
export class EventStore extends StoreView {
  private readonly committer: GroupCommitter<PreparedCreate, void>;
  private nextSegment: number;

  private constructor(
    dbs: StoreDatabases,
    dataDir: string,
    private readonly appender: SegmentAppender,
    private readonly unlock: () => void,
    lastSegment: number,
    options: StoreOptions,
  ) {
    super(dbs, dataDir, options);
    this.nextSegment = lastSegment + 1;
    this.committer = new GroupCommitter((batch, release) => this.commitCreates(batch, release));
  }

  /**
   * Opens the store in `dataDir`, creating it when absent, and runs recovery (DESIGN.md,
   * "Recovery"): staging emptied, segment tails beyond their committed length truncated.
   * @throws DataDirLocked when another running store holds `dataDir`
   * @throws the fs or lmdb error when the data directory is unusable
   */
  static async open(dataDir: string, options: StoreOptions = { trackUploads: false }): Promise<EventStore> {
    const { blobsDir, stagingDir } = ensureBlobDirs(dataDir);
    const unlock = lockDataDir(dataDir);
    const dbs = openDatabases(dataDir);
    const { lastSegment, activeSegment, lastCreatedAt } = await recoverStore(dbs, blobsDir, stagingDir);
    await completeCounters(dbs, () => dbs.index.getKeysCount({ start: uploadKey(-Infinity), end: uploadKey(Infinity) }));
    nextUniqueMicros(lastCreatedAt);
    let store: EventStore | undefined;
    const appender = new SegmentAppender(blobsDir, () => store!.allocateSegment());
    store = new EventStore(dbs, dataDir, appender, unlock, lastSegment, options);
    if (activeSegment) await appender.resume(activeSegment.segment, activeSegment.committed);
    return store;
  }

  /**
   * Stores an event and its images durably: resolves only once the image bytes are
   * fdatasync'd and the record's LMDB commit is flushed (DESIGN.md, group commit).
   * @throws AppError disk_full (507) on ENOSPC, store_failure (500) otherwise
   */
  async create(event: NewEvent): Promise<CreatedEvent> {
    const prepared = this.prepare(event);
    await this.committer.submit(prepared);
    const { record } = prepared;
    return {
      id: record.id,
      image_ids: record.images.map((i) => i.file_id).filter((id): id is string => id !== null),
      created_at: record.created_at,
      draft: record.draft,
    };
  }

  /** A segment number never used before in this store. */
  allocateSegment(): number {
    return this.nextSegment++;
  }

  /**
   * Deletes every event and file (spec B, Reset). Creates submitted meanwhile wait and are
   * stored after it; the caller stops other writers (the lifecycle worker) first.
   * @throws the fs or lmdb error (the store may then be partly cleared; a retry finishes it)
   */
  async clearAll(): Promise<void> {
    await this.withCreatesPaused(async () => {
      await this.appender.close();
      await this.blobs.close();
      const { dbs } = this;
      await this.commitDurably(() => {
        for (const db of [dbs.events, dbs.eventIds, dbs.index, dbs.files, dbs.segments, dbs.meta]) db.clearSync();
      });
      for (const name of await fsp.readdir(this.blobsDir)) await fsp.rm(path.join(this.blobsDir, name), { force: true, recursive: true });
    });
  }

  /**
   * Stops appending to `segment` if it holds no live blob, and seals it, so the lifecycle worker
   * may delete it (DESIGN.md, "Space"): on a small disk every blob may sit in the active
   * segment, which is otherwise never reclaimed. Creates wait meanwhile; the next one opens a
   * new segment.
   */
  async retireSegment(segment: number): Promise<void> {
    await this.withCreatesPaused(async () => {
      const { dbs } = this;
      if (dbs.segments.get(segment)?.liveBlobs !== 0) return;
      if (this.appender.currentSegment === segment) await this.appender.close();
      await this.commitDurably(() => {
        const entry = dbs.segments.get(segment);
        if (entry && entry.liveBlobs <= 0) dbs.segments.putSync(segment, { ...entry, sealed: true });
      });
    });
  }

  /**
   * Compacts `segment` (DESIGN.md, "Space"): its live blobs are copied forward into the active
   * segment and their entries moved, so the segment holds no live blob and can be deleted.
   * Creates wait meanwhile. Live bytes of a compacted segment are below a quarter of 64 MiB.
   */
  async compactSegment(segment: number): Promise<void> {
    await this.withCreatesPaused(async () => {
      const { dbs } = this;
      const live = [...dbs.files.getRange()].filter(({ value }) => value.segment === segment);
      if (live.length === 0) return;
      const blobs = await Promise.all(live.map(async ({ key, value }) => {
        const bytes = Buffer.allocUnsafe(value.length);
        await this.blobs.read(segment, value.offset, bytes);
        return { fileId: key, kind: value.kind, bytes };
      }));
      const appended = await this.appender.append(blobs);
      await this.commitDurably(() => {
        let moved = 0;
        let movedBytes = 0;
        live.forEach(({ key }, i) => {
          const entry = dbs.files.get(key);
          if (!entry || entry.segment !== segment) return;
          const at = appended.placed[i];
          dbs.files.putSync(key, { ...entry, segment: at.segment, offset: at.offset, crc: at.crc });
          moved++;
          movedBytes += entry.length;
        });
        const old = dbs.segments.get(segment);
        if (old) dbs.segments.putSync(segment, { ...old, liveBytes: old.liveBytes - movedBytes, liveBlobs: old.liveBlobs - moved });
        const target = dbs.segments.get(appended.segment) ?? { committed: 0, liveBytes: 0, liveBlobs: 0 };
        dbs.segments.putSync(appended.segment, {
          ...target,
          committed: Math.max(target.committed, appended.end),
          liveBytes: target.liveBytes + movedBytes,
          liveBlobs: target.liveBlobs + moved,
        });
      });
    });
  }

  /**
   * Runs `work` with no create batch under way: batches in flight finish first, creates
   * submitted meanwhile wait and are committed after it (reset, segment retirement, compaction).
   */
  private async withCreatesPaused(work: () => Promise<void>): Promise<void> {
    await this.committer.pause();
    try {
      await work();
    } finally {
      this.committer.resume();
    }
  }

  /** Runs `writes` in one LMDB transaction and waits until the commit is flushed to disk. */
  private async commitDurably(writes: () => void): Promise<void> {
    await this.dbs.root.transaction(writes);
    await this.dbs.root.flushed;
  }

  /** Waits for queued creates, then closes files and the LMDB environment. */
  override async close(): Promise<void> {
    await this.committer.whenIdle();
    await this.appender.close();
    await super.close();
    this.unlock();
  }

  private prepare(event: NewEvent): PreparedCreate {
    const blobs: PreparedCreate['blobs'] = [];
    const addBlob = (image: DecodedImage | null): string | null => {
      if (!image) return null;
      const fileId = randomUUID();
      blobs.push({ fileId, kind: 'image', bytes: image.bytes, contentType: image.contentType });
      return fileId;
    };
    // Built field by field: spreading the validated input here made every record a slow
    // dictionary-mode object (measured: 40 µs per event more CPU).
    const images: StoredImage[] = event.images.map(({ results, image, input }) => ({
      file_id: addBlob(image),
      input_file_id: addBlob(input),
      label: results.label,
      object_detections: results.object_detections,
      classifications: results.classifications,
      instance_segmentations: results.instance_segmentations,
      keypoints: results.keypoints,
      metadata: results.metadata,
    }));
    const f = event.fields;
    const record: EventRecord = {
      id: randomUUID(),
      created_at: 0, // assigned at commit, in commit order
      solution: f.solution,
      workflow_id: f.workflow_id,
      workflow_version: f.workflow_version,
      inference_timestamp: f.inference_timestamp,
      device_id: f.device_id,
      stream_id: f.stream_id,
      image_id: f.image_id,
      event_schema: f.event_schema,
      event_data: f.event_data,
      custom_metadata: f.custom_metadata,
      images,
      videos: [],
      local_only_files: [],
      display_image_position: f.display_image_position,
      original_file_count: blobs.length,
      current_file_count: blobs.length,
      draft: f.draft,
      finalized_at: null,
      auto_finalized_at: null,
    };
    return { record, blobs };
  }

  /**
   * Makes one batch durable: its images appended and fdatasync'd, then its records committed in
   * one LMDB transaction and flushed. Once the transaction has committed, `release` lets the
   * next batch append and commit while this one's flush goes on (GroupCommitter), so appends and
   * commits keep submission order. A segment's committed length only grows; bytes of a batch
   * whose commit failed stay behind as dead space in the segment.
   */
  private async commitCreates(batch: PreparedCreate[], release: () => void): Promise<void[]> {
    const { dbs } = this;
    const blobs = batch.flatMap((p) => p.blobs);
    let appended;
    try {
      appended = blobs.length > 0 ? await this.appender.append(blobs) : undefined;
    } catch (err) {
      throw fromDiskError(err);
    }
    try {
      // Records and index entries go as plain puts: lmdb-js encodes them here and applies them
      // on its write thread, all in one transaction with the read-modify-write of the
      // accounting below, which must see every earlier commit (hence a transaction callback).
      let i = 0;
      let liveBytes = 0;
      let drafts = 0;
      let uploads = 0;
      let images = 0;
      for (const { record, blobs: own } of batch) {
        record.created_at = nextUniqueMicros();
        if (!record.draft) record.finalized_at = record.created_at;
        for (const blob of own) {
          const at = appended!.placed[i++];
          void dbs.files.put(blob.fileId, {
            segment: at.segment, offset: at.offset, length: at.length, kind: blob.kind,
            contentType: blob.contentType, event: record.created_at, crc: at.crc,
          });
          liveBytes += at.length;
        }
        void dbs.events.put(record.created_at, encodeRecord(record));
        void dbs.eventIds.put(record.id, record.created_at);
        for (const key of indexKeysOf(record, this.trackUploads)) void dbs.index.put(key, EMPTY);
        if (record.draft) drafts++;
        else if (this.trackUploads) uploads++; // indexKeysOf queued it for upload
        images += record.images.length;
      }
      await dbs.root.transaction(() => {
        if (appended) {
          const segment = dbs.segments.get(appended.segment) ?? { committed: 0, liveBytes: 0, liveBlobs: 0 };
          dbs.segments.putSync(appended.segment, {
            committed: Math.max(segment.committed, appended.end),
            liveBytes: segment.liveBytes + liveBytes,
            liveBlobs: segment.liveBlobs + blobs.length,
          });
        }
        addToCounters(dbs, { events: batch.length, images, drafts, files: blobs.length, liveBlobBytes: liveBytes, uploadsPending: uploads });
      });
      // `flushed` of the environment, read right after this commit, covers it.
      const flushed = dbs.root.flushed;
      release();
      await flushed;
    } catch (err) {
      throw fromDiskError(err);
    }
    return batch.map(() => undefined);
  }

}
