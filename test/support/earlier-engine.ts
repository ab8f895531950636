/**
 * A data folder as a store of the engine before blocks left it (docs/STORAGE.md, "Blocks in the
 * running store"): every event's record, id and index entries in LMDB, no block. What tests of
 * the search index backfill and of upgrades start from.
 */
import fs from 'node:fs';
import { presentEventJson } from '../../src/events/present.js';
import { moveToLmdbSync } from '../../src/store/engine/block-rows.js';
import { blocksChanged, openDatabases } from '../../src/store/index/lmdb-env.js';
import { decodeRecord } from '../../src/store/index/record-codec.js';
import { blocksDirOf, StoredEvents } from '../../src/store/read/stored-events.js';

/** Moves every event the blocks of the closed store in `dataDir` hold into LMDB, and removes the blocks. */
export async function asEarlierEngine(dataDir: string): Promise<void> {
  const dbs = openDatabases(dataDir);
  const stored = new StoredEvents(dbs, blocksDirOf(dataDir));
  try {
    await dbs.root.transaction(() => {
      for (const createdAt of [...stored.createdAts()]) {
        if (stored.inBlock(createdAt)) moveToLmdbSync(dbs, decodeRecord(stored.value(createdAt)!), presentEventJson);
      }
      dbs.blocks.clearSync();
      dbs.blockHidden.clearSync();
      blocksChanged(dbs);
    });
  } finally {
    stored.close();
    await dbs.root.close();
  }
  fs.rmSync(blocksDirOf(dataDir), { recursive: true, force: true });
}
