/**
 * Segment maintenance the lifecycle worker asks of the writer (docs/STORAGE.md, "Reclaiming
 * space"): retiring a segment with nothing live, so the worker may delete it, and compacting one
 * (segment-compaction.ts). Both run with the log stage paused and the head checkpointed,
 * so no append or checkpoint meets them; creates submitted meanwhile wait.
 */
import type { StoredEvents } from '../read/stored-events.js';
import type { StoreDatabases } from '../index/lmdb-env.js';
import type { SegmentAppender } from '../log/blob-log.js';
import type { BlobReader } from '../log/blob-reader.js';
import type { RecordPresenter } from '../index/record-codec.js';
import { isSparse } from './event-deletion.js';
import { holdsLive } from '../log/log-entries.js';

/** What maintenance and reset (reset.ts) need of the writer (event-store.ts gives it). */
export interface MaintenanceAccess {
  readonly dbs: StoreDatabases;
  /** What checkpoints committed: the live blocks and LMDB's events (stored-events.ts). */
  readonly stored: StoredEvents;
  readonly appender: SegmentAppender;
  readonly blobs: BlobReader;
  /** DATA_DIR/blobs, where the segments are. */
  readonly blobsDir: string;
  /** The presenter records are stored with. */
  readonly present: RecordPresenter;
  /** A segment number never used before in this store. */
  allocateSegment(): number;
  /** Runs `work` with no batch of the log stage under way and the head checkpointed. */
  paused(work: () => Promise<void>): Promise<void>;
  /** Runs `writes` in one LMDB transaction and waits until it is flushed. */
  commitDurably(writes: () => void): Promise<void>;
}

/**
 * Stops appending to `segment` if nothing lives in it (no live blob, no frame a live event
 * depends on) or little does (event-deletion.ts `isSparse`: the worker compacts it next), and seals
 * it, so the lifecycle worker may delete it: on a small disk every blob may sit in the active
 * segment, which is otherwise never reclaimed. The next create opens a new segment.
 * @throws the fs or lmdb error of closing the segment or of the commit
 */
export async function retireSegment(store: MaintenanceAccess, segment: number): Promise<void> {
  await store.paused(async () => {
    const { dbs, appender } = store;
    const entry = dbs.segments.get(segment);
    if (!entry || (holdsLive(entry) && !isSparse(entry))) return;
    if (appender.currentSegment === segment) await appender.close();
    await store.commitDurably(() => {
      const now = dbs.segments.get(segment);
      if (now && (!holdsLive(now) || isSparse(now))) dbs.segments.putSync(segment, { ...now, sealed: true });
    });
  });
}
