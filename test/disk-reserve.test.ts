/**
 * The disk reserve (src/store/log/disk-reserve.ts; docs/OPERATIONS.md, "Keeping the disk bounded"): DATA_DIR/disk-reserve is
 * given back to a full disk before a cleanup, so the cleanup's LMDB commits succeed, and taken
 * again once twice its size is free.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { DiskReserve } from '../src/store/log/disk-reserve.js';
import { startStore, tempDataDir } from './support/store-server.js';
import { until } from './support/waiting.js';

// Found by the disk-full harness (npm run disk-full; docs/RELIABILITY.md), commit b83d27b.
t.test('on a disk filled to the last byte, cleanup gives the disk reserve back and then commits (found by disk-full)', async (t) => {
  // LMDB writes new pages before it frees old ones: with no free byte, the deletions of a
  // retention cleanup failed to commit (500) and only a reset gave service back.
  const dataDir = tempDataDir();
  const MiB = 1024 * 1024;
  let free = 100 * MiB;
  const reserve = new DiskReserve(dataDir, 8 * MiB, async () => free);
  t.equal(await reserve.take(), true, 'taken with room to spare');
  t.equal(fs.statSync(reserve.file).size, 8 * MiB);
  free = 16 * MiB;
  t.equal(await reserve.releaseIfLow(), false, 'kept while its size is still free');
  free = 0;
  t.equal(await reserve.releaseIfLow(), true, 'given back on a full disk');
  t.notOk(fs.existsSync(reserve.file));
  free = 12 * MiB;
  t.equal(await reserve.take(), false, 'not taken again until twice its size is free');
  t.notOk(fs.existsSync(reserve.file));
  t.notOk(fs.existsSync(`${reserve.file}.tmp`), 'nothing half-written');
  free = 16 * MiB;
  t.equal(await reserve.take(), true);

  // The running store holds its reserve (DISK_RESERVE_BYTES, default 8 MiB) once its first
  // cleanup has run; `npm run disk-full` (as root) shows the cleanup on a full tmpfs.
  const store = await startStore();
  t.teardown(store.stop);
  const file = path.join(store.dataDir, 'disk-reserve');
  await until('the worker took its disk reserve', () => fs.existsSync(file));
  t.equal(fs.statSync(file).size, 8 * MiB, 'DATA_DIR/disk-reserve holds 8 MiB');
});
