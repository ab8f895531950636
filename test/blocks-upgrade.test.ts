/**
 * The upgrade into blocks (docs/STORAGE.md, "The upgrade into blocks"): a store of the engine
 * before blocks, every record, id and index entry in LMDB, opens, serves, and has its events
 * moved into blocks a step at a time by the lifecycle worker; every read answers the same before,
 * during and after, an event updated or deleted while a step writes its block keeps its change,
 * and `check` finds nothing wrong. The fixture is a data folder the engine at 9c5da2a wrote (the
 * engine the blocks replace), as test/record-copies.test.ts reads it.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { presentEventJson } from '../src/events/present.js';
import { upgradeStep } from '../src/store/engine/blocks-upgrade.js';
import { decodeRecord, encodeRecord } from '../src/store/index/record-codec.js';
import { countEvents, type EventQuery } from '../src/store/read/event-query.js';
import { storeHandles, type StoreView } from '../src/store/read/store-view.js';
import { checkStore } from '../src/store/index.js';
import { asEarlierEngine } from './support/earlier-engine.js';
import { fixturesDir, imageEvent, smallEvent } from './support/events.js';
import { openLocalStore, type LocalStore } from './support/local-store.js';
import { tempDataDir } from './support/store-server.js';

const query = (overrides: Partial<EventQuery> = {}): EventQuery => ({
  fields: {}, metadata: [], startTime: undefined, endTime: undefined, includeDrafts: true, direction: 'desc', limit: 1000, ...overrides,
});

/** What a reader sees of `ids`: each event's JSON as served (null when there is none), and counts by device. */
function reads(store: StoreView, ids: readonly string[], devices: readonly string[]): unknown {
  return {
    events: ids.map((id) => store.getEventJson(id)?.toString() ?? null),
    counts: devices.map((device) => countEvents(store, query({ fields: { device_id: [device] } })).filtered),
    all: countEvents(store, query()).total,
  };
}

/** Events LMDB holds, and block files, of a store. */
function where(local: LocalStore): { lmdb: number; blocks: number } {
  const { dbs, stored } = local.lifecycle[storeHandles];
  return { lmdb: dbs.events.getKeysCount(), blocks: stored.blocks().blocks.length };
}

/** Runs the worker's upgrade steps until none is left. @returns how many ran, and the events they moved */
async function upgradeAll(local: LocalStore): Promise<{ steps: number; moved: number }> {
  let steps = 0;
  let moved = 0;
  for (let report = await local.lifecycle.upgradeToBlocks(); report; report = await local.lifecycle.upgradeToBlocks()) {
    steps++;
    moved += report.moved;
  }
  return { steps, moved };
}

t.test('a store the engine at 9c5da2a wrote moves into blocks while it serves; every read the same, check clean', async (t) => {
  const dataDir = tempDataDir();
  execFileSync('tar', ['-xzf', path.join(fixturesDir, 'stores', 'engine-9c5da2a.tar.gz'), '-C', dataDir]);
  const made = JSON.parse(fs.readFileSync(path.join(fixturesDir, 'stores', 'engine-9c5da2a.json'), 'utf8')) as {
    orphanSmall: string[]; orphanImage: string[]; draft: string; live: string[]; deleted: string[];
  };
  const ids = [...made.orphanSmall, ...made.orphanImage, made.draft, ...made.live, ...made.deleted];
  const devices = ['cam-0', 'cam-1', 'cam-2', 'cam-img', 'cam-draft', 'cam-live', 'cam-live-img'];
  let local = await openLocalStore({ DATA_DIR: dataDir });
  const events = made.orphanSmall.length + made.orphanImage.length + 1 + made.live.length;
  t.same(where(local), { lmdb: events, blocks: 0 }, 'every event in LMDB, no block');
  const fresh = await local.create(smallEvent({ device_id: 'cam-live' })); // served before the upgrade: its checkpoint writes a block
  t.same(where(local), { lmdb: events, blocks: 1 }, 'a create after the open goes to a block');
  const before = reads(local.store, ids, devices);

  const { moved } = await upgradeAll(local);
  t.equal(moved, events, 'every event the old engine stored is moved');
  t.same(where(local), { lmdb: 0, blocks: 2 }, 'LMDB holds no event; the moved ones in one block, the new create in its own');
  t.same(reads(local.store, ids, devices), before, 'every read answers as before');
  t.ok(local.store.getEvent(fresh.id), 'and the event created meanwhile is there');
  const image = local.store.getEvent(made.live[made.live.length - 1])!.images[0].file_id!;
  t.ok(local.store.openFile(image), 'a moved event\'s image is served');
  await local.close();

  const check = await checkStore(dataDir, presentEventJson);
  t.equal(check.damage, false, `check finds no damage: ${JSON.stringify(check.indexAgainstLog)}`);
  t.equal(check.rebuild, null);
  local = await openLocalStore({ DATA_DIR: dataDir });
  t.teardown(() => local.close());
  t.same(reads(local.store, ids, devices), before, 'and after a restart');
  t.equal(await local.lifecycle.upgradeToBlocks(), undefined, 'nothing left to upgrade');
});

t.test('steps go newest first; an event updated or deleted while a step writes its block keeps its change', async (t) => {
  const local = await openLocalStore();
  t.teardown(() => local.close());
  const ids: string[] = [];
  for (let i = 0; i < 45; i++) ids.push((await local.create(i % 5 === 0 ? imageEvent({ deviceId: `cam-${i % 3}` }) : smallEvent({ device_id: `cam-${i % 3}`, custom_metadata: { i } }))).id);
  await local.close();
  await asEarlierEngine(local.dataDir);
  const reopened = await openLocalStore({ DATA_DIR: local.dataDir });
  t.teardown(() => reopened.close());
  const { dbs, stored } = reopened.lifecycle[storeHandles];
  const devices = ['cam-0', 'cam-1', 'cam-2'];
  const before = reads(reopened.store, ids, devices) as { events: (string | null)[] };

  // The step reads its 10 events at once; the writer then changes two of them before its commit.
  const step = upgradeStep(stored, presentEventJson, async () => { await dbs.root.flushed; }, { events: 10, bytes: Infinity });
  const updated = reopened.createdAt(ids[44]);
  const record = decodeRecord(dbs.events.getBinary(updated)!);
  record.custom_metadata = { ...record.custom_metadata, changed: 'during the step' };
  dbs.events.putSync(updated, encodeRecord(record, presentEventJson));
  const deleted = reopened.createdAt(ids[40]);
  dbs.events.removeSync(deleted);
  dbs.eventIds.removeSync(ids[40]);
  t.match(await step, { moved: 8, changed: 2, remaining: 35 }, 'the two changed events are left to LMDB');
  t.match(JSON.parse(reopened.store.getEventJson(ids[44])!.toString()), { custom_metadata: { changed: 'during the step' } }, 'the update stands');
  t.equal(reopened.store.getEventJson(ids[40]), undefined, 'the deletion stands');

  const oldestOfFirst = stored.blocks().bounds()!.oldest;
  t.equal(oldestOfFirst, reopened.createdAt(ids[35]), 'the first step took the newest events');
  for (let report = await upgradeStep(stored, presentEventJson, async () => { await dbs.root.flushed; }, { events: 10, bytes: Infinity }); report;) {
    report = await upgradeStep(stored, presentEventJson, async () => { await dbs.root.flushed; }, { events: 10, bytes: Infinity });
  }
  t.equal(stored.blocks().blocks.length, 5, 'five blocks of at most 10 events');
  t.same([...dbs.events.getKeys()], [updated], 'LMDB keeps only the event updated during a step');
  const after = reads(reopened.store, ids, devices) as { events: (string | null)[] };
  t.same(after.events.filter((_, i) => i !== 40 && i !== 44), before.events.filter((_, i) => i !== 40 && i !== 44), 'every other event reads as before');
});

t.test('a reset while a step writes its block: the step enters nothing and removes its file', async (t) => {
  const local = await openLocalStore();
  for (let i = 0; i < 5; i++) await local.create(smallEvent());
  await local.close();
  await asEarlierEngine(local.dataDir);
  const reopened = await openLocalStore({ DATA_DIR: local.dataDir });
  t.teardown(() => reopened.close());
  const { dbs, stored } = reopened.lifecycle[storeHandles];
  const step = upgradeStep(stored, presentEventJson, async () => { await dbs.root.flushed; });
  await dbs.root.transaction(() => {
    dbs.events.clearSync(); // what a reset does to the events, before the step's commit
    dbs.eventIds.clearSync();
  });
  t.equal(await step, undefined, 'nothing done');
  t.equal(dbs.blocks.getCount(), 0, 'no block entered');
  t.same(fs.readdirSync(stored.blocksDir), [], 'and its file removed');
});
