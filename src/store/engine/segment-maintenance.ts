/**
 * Segment maintenance the lifecycle worker asks of the writer (docs/STORAGE.md, "Reclaiming
 * space"): retiring a segment with no live blob, so the worker may delete it, and compacting one
 * whose live blobs are few. Both run with the log stage paused and the head checkpointed,
 * so no append or checkpoint meets them; creates submitted meanwhile wait.
 */
import type { StoreDatabases } from '../index/lmdb-env.js';
import type { SegmentAppender } from '../log/blob-log.js';
import type { BlobReader } from '../log/blob-reader.js';

/** What maintenance and reset (reset.ts) need of the writer (event-store.ts gives it). */
export interface MaintenanceAccess {
  readonly dbs: StoreDatabases;
  readonly appender: SegmentAppender;
  readonly blobs: BlobReader;
  /** DATA_DIR/blobs, where the segments are. */
  readonly blobsDir: string;
  /** A segment number never used before in this store. */
  allocateSegment(): number;
  /** Runs `work` with no batch of the log stage under way and the head checkpointed. */
  paused(work: () => Promise<void>): Promise<void>;
  /** Runs `writes` in one LMDB transaction and waits until it is flushed. */
  commitDurably(writes: () => void): Promise<void>;
}

/**
 * Stops appending to `segment` if it holds no live blob, and seals it, so the lifecycle worker
 * may delete it: on a small disk every blob may sit in the active segment, which is otherwise
 * never reclaimed. The next create opens a new segment.
 * @throws the fs or lmdb error of closing the segment or of the commit
 */
export async function retireSegment(store: MaintenanceAccess, segment: number): Promise<void> {
  await store.paused(async () => {
    const { dbs, appender } = store;
    if (dbs.segments.get(segment)?.liveBlobs !== 0) return;
    if (appender.currentSegment === segment) await appender.close();
    await store.commitDurably(() => {
      const entry = dbs.segments.get(segment);
      if (entry && entry.liveBlobs <= 0) dbs.segments.putSync(segment, { ...entry, sealed: true });
    });
  });
}

/**
 * Compacts `segment`: its live blobs are copied forward into the active segment and their
 * entries moved, so the segment holds no live blob and can be deleted. The worker asks it of a
 * segment whose live bytes are below a quarter of 64 MiB.
 * @throws the fs error of a read or an append (nothing moved), or the lmdb error of the commit
 *   (the copies stay in the log, unreferenced, and the entries where they were)
 */
export async function compactSegment(store: MaintenanceAccess, segment: number): Promise<void> {
  await store.paused(async () => {
    const { dbs } = store;
    const live = [...dbs.files.getRange()].filter(({ value }) => value.segment === segment);
    if (live.length === 0) return;
    const blobs = await Promise.all(live.map(async ({ key, value }) => {
      const bytes = Buffer.allocUnsafe(value.length);
      await store.blobs.read(segment, value.offset, bytes);
      return { id: key, kind: value.kind, bytes };
    }));
    const appended = await store.appender.append(blobs);
    await store.commitDurably(() => {
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
