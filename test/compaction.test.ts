/**
 * Segment compaction (src/store/engine/event-deletion.ts; docs/STORAGE.md, "Reclaiming space"): an old
 * segment whose live share fell under a quarter has its live blobs copied forward, then is
 * deleted, on a real LMDB and segment log in a temp dir.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { runCleanup } from '../src/lifecycle/cleanup.js';
import { SEGMENT_ROLL_BYTES } from '../src/store/log/blob-log.js';
import { recycledFileName, segmentFileName } from '../src/store/log/segment-files.js';
import { fixture, imageEvent } from './support/events.js';
import { clockPast, openLocalStore } from './support/local-store.js';
import { storeHandles } from '../src/store/read/store-view.js';

// Found by the disk-full harness (npm run disk-full; docs/RELIABILITY.md), commit 026ab2a.
t.test('an old segment whose live share fell low is compacted, giving its space back (found by disk-full)', async (t) => {
  // docs/STORAGE.md, "Reclaiming space": an old segment whose live share falls under a quarter is
  // compacted. Before the fix nothing compacted: on a full disk, a retention cleanup that deleted
  // most of a segment freed no space. The first segment is filled with old events up to just
  // under SEGMENT_ROLL_BYTES, so the first survivor is appended to it and keeps it alive.
  // runCleanup is handed `now` and `running`: the old events are made a day old by moving them, not by waiting.
  const local = await openLocalStore({ RETENTION_DAYS: '1' });
  t.teardown(local.close);
  const image = fixture('retina.jpg'); // 269,564 bytes: about 248 events fill a 64 MiB segment
  const body = imageEvent({}, 'retina.jpg');
  const segmentOf = (imageId: string) => local.store.getFile(imageId)!.segment;
  const first = await local.create(body);
  const old = [first.id];
  const segment = segmentOf(first.image_ids[0]);
  const firstSegment = path.join(local.dataDir, 'blobs', segmentFileName(segment));
  const perEvent = fs.statSync(firstSegment).size; // an append is durable, so on disk, before its 201
  // Sixteen at a time (group-committed together), then one at a time up to the last that fits.
  for (const group of [16, 1]) {
    while (fs.statSync(firstSegment).size + group * perEvent < SEGMENT_ROLL_BYTES) {
      old.push(...(await Promise.all(Array.from({ length: group }, () => local.create(body)))).map((c) => c.id));
    }
  }
  const boundaryMs = Math.floor(Math.max(...old.map((id) => local.createdAt(id))) / 1000) + 1;
  clockPast(boundaryMs * 1000); // `now` is whole milliseconds: the survivors go into a later one
  const survivors = [];
  for (let i = 0; i < 6; i++) survivors.push(await local.create(body));
  const next = segment + 1;
  t.same([...new Set(old.map((id) => segmentOf(local.store.getEvent(id)!.images[0].file_id!)))], [segment], `the ${old.length} old events fill the first segment`);
  t.same(survivors.map((s) => segmentOf(s.image_ids[0])), [segment, next, next, next, next, next], 'the first survivor is its last append');

  const cleanup = await runCleanup(local.lifecycle, local.config, 'MANUAL', local.hooks, local.ranUntil(boundaryMs + 86_400_000));
  t.equal(cleanup.records_deleted.total, old.length, 'the old events deleted; the first segment keeps one live image');
  t.not(segmentOf(survivors[0].image_ids[0]), segment, 'that image was copied forward');
  t.notOk(fs.existsSync(firstSegment), 'and the first segment deleted');
  const blobsDir = path.join(local.dataDir, 'blobs');
  // The first segment rolled, so on a disk with room it is kept for the log to overwrite
  // (docs/STORAGE.md, "Recycled segments"): dead bytes, outside the segments.
  t.same(fs.readdirSync(blobsDir).filter((name) => name.startsWith('recycled-')), [recycledFileName(segment)], 'kept as a recycled file');
  const inSegments = fs.readdirSync(blobsDir).filter((name) => name.startsWith('seg-')).reduce((sum, name) => sum + fs.statSync(path.join(blobsDir, name)).size, 0);
  t.ok(inSegments < 20 * image.length, `the segments hold ${(inSegments / 2 ** 20).toFixed(1)} MiB for ${survivors.length} live images of ${image.length} bytes`);
  let intact = 0;
  for (const { image_ids } of survivors) {
    const file = local.store.getFile(image_ids[0])!;
    const bytes = Buffer.alloc(file.length);
    await local.store[storeHandles].blobs.read(file.segment, file.offset, bytes);
    if (bytes.equals(image)) intact++;
  }
  t.equal(intact, 6, 'every surviving image keeps its bytes');
});
