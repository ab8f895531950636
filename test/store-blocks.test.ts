/**
 * Blocks in the running store (docs/STORAGE.md, "Blocks in the running store"): a checkpoint
 * writes its creates as one block file the catalogue names, and LMDB takes none of their records;
 * reads find them there after a restart; a block file a crash left (a checkpoint's whose commit
 * never came) is removed at open, and one the catalogue lost is refused by name; merges make one block of many and drop
 * a block whose rows are all deleted, with every read the same before and after; a damaged block
 * is refused by name and `check --repair` rebuilds it from the log. A real store in a temp dir.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { presentEventJson } from '../src/events/present.js';
import { mergeStep } from '../src/store/engine/block-merges.js';
import { deleteRecords } from '../src/store/engine/event-deletion.js';
import { EventStore } from '../src/store/engine/event-store.js';
import { finalizeEvent } from '../src/store/engine/event-updates.js';
import type { NewEvent } from '../src/store/engine/prepared-create.js';
import { countEvents, scanEvents, type EventQuery } from '../src/store/read/event-query.js';
import { StoreView, storeHandles } from '../src/store/read/store-view.js';
import { tempDataDir } from './support/store-server.js';
import { foldUpdates, writeCheckpointBlock } from '../src/store/engine/checkpoint-block.js';
import { indexedLogPosition, openDatabases } from '../src/store/index/lmdb-env.js';
import { decodeRecord, encodeRecord } from '../src/store/index/record-codec.js';
import { StoredEvents } from '../src/store/read/stored-events.js';
import { runCleanup, storageTarget } from '../src/lifecycle/cleanup.js';
import { openLocalStore } from './support/local-store.js';
import { smallEvent } from './support/events.js';
import { flipByte } from './support/flip-byte.js';
import { checkStore, rebuildIndex } from '../src/store/index.js';

const OPTIONS = { sinks: [], present: presentEventJson, checkpointMs: 60_000 };

function newEvent(device: string, draft = false): NewEvent {
  return {
    fields: {
      solution: null, workflow_id: null, workflow_version: null, inference_timestamp: '2026-12-07T01:00:00Z',
      device_id: device, stream_id: null, image_id: null, event_schema: 'custom', event_data: {},
      custom_metadata: { site: 'north' }, display_image_position: null, draft,
    },
    images: [],
  };
}

const query = (overrides: Partial<EventQuery> = {}): EventQuery => ({
  fields: {}, metadata: [], startTime: undefined, endTime: undefined, includeDrafts: true, direction: 'desc', limit: 1000, ...overrides,
});

/** The ids a list of `q` answers, newest first. */
function listIds(store: StoreView, q: EventQuery = query()): string[] {
  const ids: string[] = [];
  scanEvents(store, q, { records: 1_000_000, bytes: 1 << 30 }, { add: (json) => ids.push(JSON.parse(Buffer.from(json).toString()).id) > 0 });
  return ids;
}

/** Creates `count` events on devices cam-0..cam-2 in turn, then checkpoints them. @returns their ids, oldest first */
async function checkpointed(store: EventStore, count: number, draft = false): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push((await store.create(newEvent(`cam-${i % 3}`, draft))).id);
  await store.checkpointed();
  return ids;
}

const blockFiles = (dataDir: string): string[] => fs.readdirSync(path.join(dataDir, 'blocks')).sort();

t.test('a checkpoint writes its creates as one block, LMDB holds none of their records, and a restart reads them there', async (t) => {
  const dataDir = tempDataDir();
  let store = await EventStore.open(dataDir, OPTIONS);
  const ids = await checkpointed(store, 30);
  const { dbs, stored } = store[storeHandles];
  t.equal(dbs.events.getCount(), 0, 'no record in LMDB\'s events');
  t.equal(dbs.index.getCount(), 0, 'no index entry in LMDB');
  t.same([...dbs.blocks.getRange()].map(({ value }) => [value.rows, value.level]), [[30, 0]], 'one level-0 block of 30 rows in the catalogue');
  t.equal(blockFiles(dataDir).length, 1);
  t.equal(stored.countBefore(Infinity), 30);
  await store.close();

  store = await EventStore.open(dataDir, OPTIONS);
  t.teardown(() => store.close());
  t.same(listIds(store), [...ids].reverse(), 'listed newest first from the block');
  t.same(listIds(store, query({ fields: { device_id: ['cam-1'] } })), ids.filter((_, i) => i % 3 === 1).reverse(), 'by device, from its postings');
  t.match(countEvents(store, query({ fields: { device_id: ['cam-2'] } })), { total: 30, filtered: 10 }, 'counted');
  t.equal(store.getEvent(ids[7])?.device_id, 'cam-1', 'read by id');
  t.same(JSON.parse(store.getEventJson(ids[7])!.toString()).custom_metadata, { site: 'north' }, 'its JSON presented at the read');

  // The first deletion hides a row: the very next read by created_at, with this thread's blocks
  // open since before it, does not find the event.
  const { stored: opened, dbs: reopenedDbs } = store[storeHandles];
  const createdAt = opened.createdAtOf(ids[3])!;
  t.ok(store.getRecord(createdAt), 'read before the deletion');
  await deleteRecords(new StoreView(reopenedDbs, dataDir, OPTIONS), [createdAt], 'retention', () => undefined, (events) => store.logTombstones(events));
  t.equal(store.getRecord(createdAt), undefined, 'gone at the next read');
});

t.test('at open, what a crash left in blocks/ is removed, and a block the catalogue lost is refused by name', async (t) => {
  const dataDir = tempDataDir();
  let store = await EventStore.open(dataDir, OPTIONS);
  const ids = await checkpointed(store, 5);
  await store.close();
  const [named] = blockFiles(dataDir);
  const blocksDir = path.join(dataDir, 'blocks');
  // A checkpoint's block whose commit never came covers the log past the index's log position.
  const dbs = openDatabases(dataDir);
  const stored = new StoredEvents(dbs, blocksDir);
  const position = indexedLogPosition(dbs)!;
  const creates = [...stored.createdAts()].map((createdAt) => {
    const record = { ...decodeRecord(stored.value(createdAt)!), created_at: createdAt + 1_000_000 };
    return { record, value: encodeRecord(record, presentEventJson), files: [] };
  });
  const leftover = await writeCheckpointBlock(stored, creates, { segment: position.segment + 1, offset: 0 }, { present: presentEventJson, folds: foldUpdates(creates, []) });
  stored.close();
  await dbs.root.close();
  fs.writeFileSync(path.join(blocksDir, 'blk-3-4-L0.eeb.tmp'), 'a write cut short');
  store = await EventStore.open(dataDir, OPTIONS);
  t.same(blockFiles(dataDir), [named], `the block the catalogue names is left; ${leftover.entry.name} and the .tmp are gone`);
  t.same(listIds(store), [...ids].reverse());
  await store.close();

  // A block before the log position the catalogue does not name: a page of the catalogue lost.
  fs.copyFileSync(path.join(blocksDir, named), path.join(blocksDir, 'blk-1-2-L0.eeb'));
  await t.rejects(EventStore.open(dataDir, OPTIONS), { name: 'IndexDamaged', message: /names no block blk-1-2-L0\.eeb.*edge-events check --repair/ });
  t.ok(fs.existsSync(path.join(blocksDir, 'blk-1-2-L0.eeb')), 'and kept');
});

t.test('merges make one block of many, drop one whose rows are all deleted, and every read is the same before and after', async (t) => {
  const dataDir = tempDataDir();
  const store = await EventStore.open(dataDir, OPTIONS);
  t.teardown(() => store.close());
  const { dbs, stored } = store[storeHandles];
  const ids: string[] = [];
  for (let i = 0; i < 8; i++) ids.push(...await checkpointed(store, 4, i === 2));
  t.equal(dbs.blocks.getCount(), 8, 'a block a checkpoint');
  t.equal(stored.countBefore(stored.createdAtOf(ids[10])!), 10, 'counted before an event in the middle of a block');
  t.equal(stored.countBefore(Infinity), 32);
  const before = { all: listIds(store), cam0: listIds(store, query({ fields: { device_id: ['cam-0'] } })), asc: listIds(store, query({ direction: 'asc' })) };
  const flushed = async () => { await dbs.root.flushed; };

  t.match(await mergeStep(stored, presentEventJson, flushed), { blocks: 8, rows: 32 }, 'eight level-0 blocks merged');
  t.same([...dbs.blocks.getRange()].map(({ value }) => [value.rows, value.level]), [[32, 1]], 'into one of level 1');
  t.equal(blockFiles(dataDir).length, 1, 'the files it replaced are gone');
  t.same({ all: listIds(store), cam0: listIds(store, query({ fields: { device_id: ['cam-0'] } })), asc: listIds(store, query({ direction: 'asc' })) }, before, 'the same answers');
  t.equal(await mergeStep(stored, presentEventJson, flushed), undefined, 'nothing more is due');

  // A draft of the block finalized: it moves to LMDB, its row hidden.
  await finalizeEvent(store, ids[8]);
  await store.checkpointed();
  t.ok(dbs.events.doesExist(stored.createdAtOf(ids[8])!), 'the finalized draft is in LMDB');
  t.equal(store.getEvent(ids[8])?.draft, false);
  t.same(listIds(store), before.all, 'listed once');

  // Every other event deleted: the block's rows are all hidden, and the next merge drops it.
  const view = new StoreView(dbs, dataDir, OPTIONS);
  const doomed = ids.filter((id) => id !== ids[8]).map((id) => stored.createdAtOf(id)!);
  await deleteRecords(view, doomed, 'retention', () => undefined, (events) => store.logTombstones(events));
  t.same(listIds(store), [ids[8]], 'only the finalized event is left');
  t.match(await mergeStep(stored, presentEventJson, flushed), { blocks: 1, rows: 1, folded: 1 }, 'the sparse block written again, the finalized event folded back');
  t.equal(dbs.events.getCount(), 0, 'LMDB holds no event');
  t.equal(dbs.blockHidden.getCount(), 0, 'the hidden rows forgotten');
  t.same(listIds(store), [ids[8]]);
  t.equal(store.getEvent(ids[8])?.draft, false, 'as finalized');
  t.same(listIds(store, query({ fields: { device_id: [store.getEvent(ids[8])!.device_id!] } })), [ids[8]], 'found by its postings in the new block');

  // The last event deleted: the next merge drops the block without a write.
  await deleteRecords(view, [stored.createdAtOf(ids[8])!], 'retention', () => undefined, (events) => store.logTombstones(events));
  t.match(await mergeStep(stored, presentEventJson, flushed), { blocks: 1, rows: 0, folded: 0 }, 'the block whose rows are all deleted goes without a write');
  t.equal(dbs.blocks.getCount(), 0);
  t.equal(dbs.blockHidden.getCount(), 0, 'its hidden rows forgotten');
  t.same(blockFiles(dataDir), []);
  t.same(listIds(store), []);
});

t.test('a block whose table of contents is damaged: the open refuses naming it and check --repair, and the repair gives every event back', async (t) => {
  const dataDir = tempDataDir();
  let store = await EventStore.open(dataDir, OPTIONS);
  const ids = await checkpointed(store, 12);
  await store.close();
  const [name] = blockFiles(dataDir);
  const file = path.join(dataDir, 'blocks', name);
  flipByte(file, fs.statSync(file).size - 10);
  await t.rejects(EventStore.open(dataDir, OPTIONS), { name: 'IndexDamaged', message: new RegExp(`the index blocks/${name} .*edge-events check --repair`) });
  const check = await checkStore(dataDir, presentEventJson);
  t.ok(check.rebuild, `check says to rebuild: ${check.rebuild}`);
  await rebuildIndex(dataDir, { sinks: [], present: presentEventJson });
  store = await EventStore.open(dataDir, OPTIONS);
  t.teardown(() => store.close());
  t.same(listIds(store), [...ids].reverse(), 'every event, from the log');
});

t.test('a storage cleanup of events in blocks deletes down to the target, not every event: a block counts its live rows', async (t) => {
  let local = await openLocalStore();
  for (let i = 0; i < 4000; i += 200) await Promise.all(Array.from({ length: 200 }, () => local.create(smallEvent())));
  await local.store.checkpointed();
  const full = local.store.storageBytes();
  await local.close();
  const limit = Math.floor(full * 0.8);
  t.ok(limit >= 1024 * 1024, `${full} bytes stored: a limit of 80% of them is one MAX_STORAGE_BYTES takes`);
  local = await openLocalStore({ DATA_DIR: local.dataDir, MAX_STORAGE_BYTES: String(limit) });
  t.teardown(local.close);
  const result = await runCleanup(local.lifecycle, local.config, 'MANUAL', local.hooks);
  const left = local.store.counters().events;
  t.ok(result.records_deleted.storage > 0, `${result.records_deleted.storage} records deleted for storage`);
  t.ok(left > 2000, `${left} of 4,000 events left`);
  t.ok(local.store.storageBytes() <= storageTarget(limit), `${local.store.storageBytes()} bytes stored, within the target ${storageTarget(limit)}`);
});

t.test('a draft created, given a file and finalized between two checkpoints goes into its block as it now is; LMDB takes nothing of it', async (t) => {
  const dataDir = tempDataDir();
  const store = await EventStore.open(dataDir, OPTIONS);
  t.teardown(() => store.close());
  const { id } = await store.create(newEvent('cam-0', true));
  await finalizeEvent(store, id);
  const [other] = await checkpointed(store, 1, true);
  const { dbs, stored } = store[storeHandles];
  t.equal(dbs.events.getCount(), 0, 'no record in LMDB');
  t.ok(stored.inBlock(stored.createdAtOf(id)!), 'in the block');
  t.equal(store.getEvent(id)?.draft, false, 'finalized in its row');
  t.same(listIds(store, query({ includeDrafts: false })), [id], 'not among the drafts');
  t.match(store.counters(), { events: 2, drafts: 1 }, 'counted once, one draft left');
  t.equal(store.getEvent(other)?.draft, true);
});
