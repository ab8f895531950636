/**
 * Segment files the index does not know (docs/STORAGE.md, "Segment files the index does not
 * know"): one that holds records of events is the log, kept whatever the index says, the open
 * refusing with `check --repair` named; one a reclaim removed from the index and a crash kept from
 * being unlinked is removed. Real LMDB, real segment log, in temp dirs.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { presentEventJson } from '../src/events/present.js';
import { checkStore } from '../src/store/engine/store-check.js';
import { EventStore } from '../src/store/engine/event-store.js';
import { rebuildIndex } from '../src/store/engine/index-rebuild.js';
import { LOG_POSITION_KEY, openDatabases } from '../src/store/index/lmdb-env.js';
import { segmentFileName } from '../src/store/log/segment-files.js';
import { storeHandles } from '../src/store/read/store-view.js';
import { imageEvent, smallEvent } from './support/events.js';
import { openLocalStore } from './support/local-store.js';

const OPTIONS = { sinks: [], present: presentEventJson };

t.test('a segment whose entry the index lost is kept: the open refuses naming check --repair, check names it, and the repair gives every event back', async (t) => {
  const local = await openLocalStore();
  const images = [];
  for (let i = 0; i < 5; i++) images.push(await local.create(imageEvent({}, 'retina.jpg')));
  const ids = images.map((c) => c.id);
  for (let i = 0; i < 10; i++) ids.push((await local.create(smallEvent({ device_id: 'cam-a' }))).id);
  await local.store.checkpointed();
  const [first] = [...local.store[storeHandles].dbs.segments.getKeys()];
  // A storage cleanup deletes the images: the segment, sparse, is retired, and the log moves on to a new one.
  await local.lifecycle.deleteFiles(images.map((c) => ({ createdAt: local.createdAt(c.id), fileId: c.image_ids[0] })));
  await local.hooks.retireSegment(first);
  for (let i = 0; i < 5; i++) ids.push((await local.create(smallEvent({ device_id: 'cam-b' }))).id);
  await local.close();
  const file = path.join(local.dataDir, 'blobs', segmentFileName(first));

  // The index loses the segment's entry, as a page of it that a card dropped or read back older.
  const dbs = openDatabases(local.dataDir);
  t.ok((dbs.meta.get(LOG_POSITION_KEY) as { segment: number }).segment > first, 'the log position is past the segment: the open does not replay it');
  await dbs.root.transaction(() => dbs.segments.removeSync(first));
  await dbs.root.close();

  await t.rejects(EventStore.open(local.dataDir, OPTIONS), {
    name: 'IndexDamaged',
    message: new RegExp(`has no entry for blobs/${segmentFileName(first)}, which holds records of events.*check --repair`),
  }, 'the open refuses');
  t.ok(fs.existsSync(file), 'the segment file is kept');

  const report = await checkStore(local.dataDir);
  t.same(report.indexAgainstLog?.unknownSegments, [first], 'check names the segment');
  t.equal(report.damage, true);
  t.equal(report.rebuild, 'segment files holding records of events have no entry in the index');

  await rebuildIndex(local.dataDir, OPTIONS);
  const rebuilt = await EventStore.open(local.dataDir, OPTIONS);
  t.teardown(() => rebuilt.close());
  t.same(ids.filter((id) => !rebuilt.getEvent(id)), [], 'every event is back after the repair');
});

t.test('a segment a reclaim removed from the index, its file left by a crash before the unlink, is removed at the next open', async (t) => {
  const local = await openLocalStore();
  const images = [];
  for (let i = 0; i < 5; i++) images.push(await local.create(imageEvent({}, 'retina.jpg')));
  const small = await local.create(smallEvent({ device_id: 'cam-a' }));
  await local.store.checkpointed();
  const [first] = [...local.store[storeHandles].dbs.segments.getKeys()];
  const file = path.join(local.dataDir, 'blobs', segmentFileName(first));
  const kept = `${file}.before-the-unlink`;
  fs.linkSync(file, kept);

  await local.lifecycle.deleteFiles(images.map((c) => ({ createdAt: local.createdAt(c.id), fileId: c.image_ids[0] })));
  const reclaimed = await local.lifecycle.reclaimSegments(local.hooks.retireSegment, local.hooks.compactSegment, true);
  t.same(reclaimed, [first], 'the segment is compacted and removed');
  await local.close();
  fs.renameSync(kept, file); // as if the store had died between the commit and the unlink

  const store = await EventStore.open(local.dataDir, OPTIONS);
  t.teardown(() => store.close());
  t.notOk(fs.existsSync(file), 'the file the reclaim named is removed');
  t.ok(store.getEvent(small.id), 'the event whose record was copied forward reads back');
});
