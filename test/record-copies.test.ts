/**
 * Two copies of every record (docs/STORAGE.md, "Two copies of every record"): every live event's
 * whole record stays in the log for its life, whatever cleanups and compactions did, so a rebuild
 * of a lost index restores every event with its id, created_at, finalize and files, and brings back
 * none that was deleted. Real LMDB, real segment log, real images, in temp dirs.
 */
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import t from 'tap';
import { presentEventJson } from '../src/events/present.js';
import { runCheckCli } from '../src/check/check-command.js';
import { finalizeEvent } from '../src/store/engine/event-updates.js';
import { rebuildIndex } from '../src/store/engine/index-rebuild.js';
import { EventStore } from '../src/store/engine/event-store.js';
import { storeHandles } from '../src/store/read/store-view.js';
import { fixturesDir, imageEvent, smallEvent } from './support/events.js';
import { openLocalStore, type LocalStore } from './support/local-store.js';
import { tempDataDir } from './support/store-server.js';

const OPTIONS = { sinks: [], present: presentEventJson };

/** Every event of a store as a rebuild must give it back: id -> created_at, finalized, file count, files readable. */
async function snapshot(store: EventStore): Promise<Map<string, string>> {
  const seen = new Map<string, string>();
  for (const createdAt of [...store[storeHandles].stored.createdAts()]) {
    const record = store.getRecord(createdAt)!;
    const files: string[] = [];
    for (const image of record.images) {
      const file = image.file_id ? store.openFile(image.file_id) : undefined;
      files.push(file ? `${image.file_id}:${(await file.readAll()).length}` : `${image.file_id}:gone`);
    }
    for (const video of record.local_only_files) files.push(`${video.file_id}:${store.openFile(video.file_id) ? 'kept' : 'gone'}`);
    seen.set(record.id, JSON.stringify([record.created_at, record.finalized_at, record.current_file_count, files]));
  }
  return seen;
}

/** Loses the index as a card that dropped db/ would, rebuilds it from the log, and opens the store. */
async function loseIndexAndRebuild(dataDir: string): Promise<EventStore> {
  fs.rmSync(path.join(dataDir, 'db'), { recursive: true });
  await rebuildIndex(dataDir, OPTIONS);
  return EventStore.open(dataDir, OPTIONS);
}

/** Runs the reclaim a cleanup runs after deleting files (lifecycle-store.ts `reclaimSegments`). */
function reclaim(local: LocalStore, filesDeleted = true): Promise<number[]> {
  return local.lifecycle.reclaimSegments(local.hooks.retireSegment, local.hooks.compactSegment, filesDeleted);
}

t.test('after a compaction deleted the segment of their frames and the index is lost, a rebuild restores every live event and no deleted one', async (t) => {
  const local = await openLocalStore();
  const images = [];
  for (let i = 0; i < 5; i++) images.push(await local.create(imageEvent({}, 'retina.jpg'))); // 5 x 269,564 bytes: past 1 MiB
  const small = [];
  for (let i = 0; i < 20; i++) small.push(await local.create(smallEvent({ device_id: `cam-${i % 3}` })));
  const draft = await local.create(smallEvent({ device_id: 'cam-draft', draft: true }));
  await finalizeEvent(local.store, draft.id);
  await local.store.checkpointed();
  const { dbs } = local.store[storeHandles];
  const [first] = [...dbs.segments.getKeys()];

  // A storage cleanup deletes the images: little lives in the segment, which is compacted and deleted.
  await local.lifecycle.deleteFiles(images.map((c) => ({ createdAt: local.createdAt(c.id), fileId: c.image_ids[0] })));
  const reclaimed = await reclaim(local);
  t.same(reclaimed, [first], 'the segment of every frame so far is compacted and deleted');
  t.notOk(fs.existsSync(path.join(local.dataDir, 'blobs', `seg-${String(first).padStart(8, '0')}.blob`)));
  // Retention deletes three small events: tombstones keep them deleted.
  const deleted = small.slice(0, 3);
  await local.lifecycle.deleteRecords(deleted.map((c) => local.createdAt(c.id)), 'retention', local.hooks.logTombstones);
  const later = [];
  for (let i = 0; i < 5; i++) later.push(await local.create(smallEvent({ device_id: 'cam-later' })));
  const before = await snapshot(local.store);
  t.equal(before.size, 5 + 17 + 1 + 5);
  await local.close();

  const rebuilt = await loseIndexAndRebuild(local.dataDir);
  t.teardown(() => rebuilt.close());
  const after = await snapshot(rebuilt);
  t.same([...after.keys()].sort(), [...before.keys()].sort(), 'every live event is back, and no deleted one');
  t.same(after, before, 'each with its created_at, finalize, file count and files');
  t.equal(rebuilt.getEvent(draft.id)?.finalized_at !== null, true, 'the finalize copied with the record');
  for (const c of deleted) t.equal(rebuilt.getEvent(c.id), undefined, `deleted event ${c.id} stays deleted`);
});

t.test('a cleanup that frees the active segment keeps the only log copy of events without images', async (t) => {
  // The field case of issue 70: the cleanup retired the active segment, which held no live blob,
  // and deleted it with the record frames of every event in it; then db/ was lost.
  const local = await openLocalStore();
  const image = await local.create(imageEvent({}, 'retina.jpg'));
  const created = [];
  for (let i = 0; i < 40; i++) created.push(await local.create(smallEvent({ device_id: `cam-${i % 4}`, custom_metadata: { n: i } })));
  const { dbs } = local.store[storeHandles];
  const [first] = [...dbs.segments.getKeys()];
  t.ok(dbs.segments.get(first)!.liveFrames! >= 41, 'each record frame counts live in its segment');
  await local.lifecycle.deleteFiles([{ createdAt: local.createdAt(image.id), fileId: image.image_ids[0] }]);
  t.same(await reclaim(local), [first], 'the active segment is retired, its records copied forward, and deleted');
  await local.close();
  const rebuilt = await loseIndexAndRebuild(local.dataDir);
  t.teardown(() => rebuilt.close());
  t.same(created.map((c) => rebuilt.getEvent(c.id)?.custom_metadata.n), created.map((_, i) => i), 'all 40 back');
  t.equal(rebuilt.getEvent(image.id)?.current_file_count, 0, 'and the event whose image was deleted, without it');
});

t.test('a store made by the engine at 9c5da2a is upgraded at open: records only the index held are written back to the log, once', async (t) => {
  const dataDir = tempDataDir();
  execFileSync('tar', ['-xzf', path.join(fixturesDir, 'stores', 'engine-9c5da2a.tar.gz'), '-C', dataDir]);
  const made = JSON.parse(fs.readFileSync(path.join(fixturesDir, 'stores', 'engine-9c5da2a.json'), 'utf8')) as {
    orphanSmall: string[]; orphanImage: string[]; draft: string; live: string[]; deleted: string[];
  };
  const progress: number[] = [];
  const store = await EventStore.open(dataDir, { ...OPTIONS, onRecordCopiesProgress: (p) => progress.push(p.segmentsRead) });
  const upgraded = store.opened.upgraded;
  t.match(upgraded, { copied: made.orphanSmall.length + made.orphanImage.length + 1, eventsInLog: made.live.length }, 'each event only the index held gets a record copy');
  t.ok(progress.length > 0, 'progress is told');
  const before = await snapshot(store);
  await store.close();
  const again = await EventStore.open(dataDir, OPTIONS);
  t.equal(again.opened.upgraded, undefined, 'the next open does not upgrade again');
  await again.close();

  const rebuilt = await loseIndexAndRebuild(dataDir);
  t.teardown(() => rebuilt.close());
  const after = await snapshot(rebuilt);
  t.same(after, before, 'a rebuild gives back every event the old store had');
  for (const id of made.deleted) t.equal(rebuilt.getEvent(id), undefined, `deleted event ${id} stays deleted`);
  t.not(rebuilt.getEvent(made.draft)?.finalized_at, null, 'the finalized draft is finalized');
  t.equal(rebuilt.getEvent(made.orphanImage[0])?.current_file_count, 0, 'an event whose image a cleanup deleted stays without it');
});

t.test('edge-events check names the events the index alone holds, and --repair writes them back into the log', async (t) => {
  const dataDir = tempDataDir();
  execFileSync('tar', ['-xzf', path.join(fixturesDir, 'stores', 'engine-9c5da2a.tar.gz'), '-C', dataDir]);
  const made = JSON.parse(fs.readFileSync(path.join(fixturesDir, 'stores', 'engine-9c5da2a.json'), 'utf8')) as { orphanSmall: string[]; orphanImage: string[]; draft: string };
  const orphans = made.orphanSmall.length + made.orphanImage.length + 1;
  const run = async (...argv: string[]) => {
    let stdout = '';
    const code = await runCheckCli(['--data-dir', dataDir, ...argv], { stdout: { write: (text: string) => (stdout += text) }, stderr: { write: () => true }, env: {} });
    return { code, stdout };
  };
  const check = await run();
  t.equal(check.code, 1, 'the check fails');
  t.match(check.stdout, `DAMAGED: ${orphans} events of the index have no whole record frames in the log`);
  t.match(check.stdout, made.draft, 'naming them');
  const repair = await run('--repair', '--without-sinks');
  t.equal(repair.code, 0, repair.stdout);
  t.match(repair.stdout, `Repair: wrote the record copies of ${orphans} events the index alone held back into the log`);
  t.match(repair.stdout, /Copies: 36 events in both the index and the log; 0 events in the index alone/);
  t.match(repair.stdout, /No damage found\.\n$/);
});

t.test('check --repair of a damaged index salvages the records the log lacks, and names the events it could not give back', async (t) => {
  // The field probe's case A on a store of the engine before record copies: a zeroed page of the
  // index held records only the index had. The repair rebuilds from the log, salvages every record
  // the damaged index still reads, and never says "No damage found" when events were lost.
  const dataDir = tempDataDir();
  execFileSync('tar', ['-xzf', path.join(fixturesDir, 'stores', 'engine-9c5da2a.tar.gz'), '-C', dataDir]);
  const made = JSON.parse(fs.readFileSync(path.join(fixturesDir, 'stores', 'engine-9c5da2a.json'), 'utf8')) as { orphanSmall: string[]; orphanImage: string[]; draft: string; live: string[] };
  const indexFile = path.join(dataDir, 'db', 'data.mdb');
  const bytes = fs.readFileSync(indexFile);
  const target = made.orphanSmall[10];
  const page = Math.floor(bytes.indexOf(`{"id":"${target}"`) / 4096);
  t.ok(page > 1, `event ${target}'s record is on page ${page}`);
  const onPage = made.orphanSmall.filter((id) => Math.floor(bytes.indexOf(`{"id":"${id}"`) / 4096) === page);
  bytes.fill(0, page * 4096, (page + 1) * 4096);
  fs.writeFileSync(indexFile, bytes);

  let stdout = '';
  const code = await runCheckCli(['--data-dir', dataDir, '--repair', '--without-sinks'], { stdout: { write: (text: string) => (stdout += text) }, stderr: { write: () => true }, env: {} });
  t.equal(code, 1, 'events were lost: the repair does not pass');
  const orphans = [...made.orphanSmall, ...made.orphanImage, made.draft];
  t.match(stdout, `Salvaged ${orphans.length - onPage.length} records`, 'every other record only the index held is salvaged');
  t.match(stdout, `LOST: ${onPage.length} event`);
  for (const id of onPage) t.match(stdout, `event ${id}`, `lost event ${id} is named`);
  t.notMatch(stdout, 'No damage found');
  const store = await EventStore.open(dataDir, OPTIONS);
  t.teardown(() => store.close());
  for (const id of [...made.live, ...orphans.filter((id) => !onPage.includes(id))]) t.ok(store.getEvent(id), `event ${id} is back`);
  t.ok(store.openFile(store.getEvent(made.orphanImage[0])!.images[0].file_id!) === undefined, 'an image a cleanup had deleted stays deleted');
});
