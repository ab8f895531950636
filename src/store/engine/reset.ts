/**
 * Reset (docs/API.md, "Cleanup and reset"): every event, file and index entry deleted, the
 * store's clock and its LMDB environment kept, and the log started again after every segment
 * there was, so that no replay finds the old creates.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { BLOCKS_VERSION_KEY, blocksChanged, LOG_POSITION_KEY, type LogPosition } from '../index/lmdb-env.js';
import { markSearchIndexCurrentSync } from '../index/search-index.js';
import type { MaintenanceAccess } from './segment-maintenance.js';
import { keepClockSync } from './store-clock.js';

/**
 * Deletes every event and file with the log stage paused (creates submitted meanwhile are
 * stored after it): closes the log's files, clears every database but the clock in one durable
 * commit, tells `cleared`, then removes the segment files and the block files (docs/STORAGE.md, "Blocks").
 * @param cleared called once the commit is flushed, before the files go (the writer marks its
 *   search index current and announces the reset)
 * @throws the fs or lmdb error (the store may then be partly cleared; a retry finishes it)
 */
export async function clearStore(store: MaintenanceAccess, cleared: () => void): Promise<void> {
  await store.paused(async () => {
    await store.appender.close();
    await store.blobs.close();
    const { dbs } = store;
    const restart: LogPosition = { segment: store.allocateSegment(), offset: 0 };
    await store.commitDurably(() => {
      const keepClock = keepClockSync(dbs);
      const blocksVersion = dbs.meta.get(BLOCKS_VERSION_KEY);
      for (const db of [dbs.events, dbs.eventIds, dbs.index, dbs.files, dbs.segments, dbs.meta, dbs.blocks, dbs.blockHidden]) db.clearSync();
      keepClock();
      // The version only grows, so no thread takes the blocks it has open for the new catalogue.
      dbs.meta.putSync(BLOCKS_VERSION_KEY, blocksVersion ?? 0);
      blocksChanged(dbs);
      dbs.meta.putSync(LOG_POSITION_KEY, restart);
      markSearchIndexCurrentSync(dbs);
    });
    cleared();
    for (const name of await fsp.readdir(store.blobsDir)) await fsp.rm(path.join(store.blobsDir, name), { force: true, recursive: true });
    await fsp.rm(store.stored.blocksDir, { force: true, recursive: true });
  });
}
