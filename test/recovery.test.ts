/**
 * Recovery (docs/STORAGE.md, "Recovery"): after a crash LMDB opens at its last flushed commit
 * and the log after it is replayed into the head, which the first checkpoint commits, so
 * every acknowledged event is there with its exact image bytes; replay counts each create once;
 * segments only the log knows are kept; a clean stop replays nothing. The same after a real
 * kill -9 of the built store, with attaches, finalizes and resets: end-to-end/kill-recovery.test.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { EventStore } from '../src/store/engine/event-store.js';
import type { CreatedEvent } from '../src/store/engine/writer-options.js';
import { SegmentAppender } from '../src/store/log/blob-log.js';
import { segmentFileName } from '../src/store/log/segment-files.js';
import type { EventRecord } from '../src/store/record/event-record.js';
import { timeOrderedId } from '../src/store/record/ids.js';
import { blocksChanged, LOG_POSITION_KEY, openDatabases, type LogPosition } from '../src/store/index/lmdb-env.js';
import { encodeRecord, frameRecordBytes } from '../src/store/index/record-codec.js';
import { encodeRecordFrame } from '../src/store/log/record-frame.js';
import { fixture, getJson, imageEvent, postJson, smallEvent } from './support/events.js';
import { startStore, tempDataDir } from './support/store-server.js';
import { until } from './support/waiting.js';
import { presentEventJson } from '../src/events/present.js';
import { indexBatches } from '../src/store/engine/checkpoint-writer.js';
import { blocksDirOf, StoredEvents } from '../src/store/read/stored-events.js';
import { hideRowSync } from '../src/store/engine/block-rows.js';
import { StoreView, storeHandles } from '../src/store/read/store-view.js';
import { deleteRecords } from '../src/store/engine/event-deletion.js';

/** How the stores opened in this process directly (below, without startStore) are run: as the service runs its own, records keep their JSON. */
const STORE_OPTIONS = { sinks: [], present: presentEventJson };

/** The fields of a plain create handed to `EventStore.create` directly (no HTTP). */
const NEW_EVENT_FIELDS = {
  solution: null, workflow_id: null, workflow_version: null, inference_timestamp: '2026-11-22T01:00:00Z',
  device_id: 'cam-1', stream_id: null, image_id: null, event_schema: 'custom', event_data: {}, custom_metadata: {},
  display_image_position: null, draft: false,
};

/** The inference results of an image handed to `EventStore.create` directly. */
const IMAGE_RESULTS = { label: null, object_detections: [], classifications: [], instance_segmentations: [], keypoints: [], metadata: {} };

t.test('a replay over an index that holds the records but not their accounting counts each create once', async (t) => {
  // A flush can fall between the puts of a batch and the transaction that counts it and moves
  // the log position: the index then holds records the position does not cover. (A block enters
  // the catalogue in that transaction; a replay of events a block holds puts them in LMDB.)
  const first = await startStore();
  const ids: string[] = [];
  for (let i = 0; i < 30; i++) ids.push((await postJson(`${first.url}/v2/events`, i % 3 ? smallEvent() : imageEvent())).body.id);
  const before = (await getJson(`${first.url}/stats`)).body.current;
  await first.stop();

  const dbs = openDatabases(first.dataDir);
  const stored = new StoredEvents(dbs, blocksDirOf(first.dataDir));
  const position = dbs.meta.get(LOG_POSITION_KEY) as { segment: number; offset: number };
  // One record in the middle is missing too: its replay cannot append it after the last record
  // (checkpoint-writer.ts `putCreated`) and puts it in place.
  const missing = stored.createdAtOf(ids[15])!;
  t.ok(stored.inBlock(missing), 'the first store\'s checkpoint wrote a block');
  await dbs.root.transaction(() => {
    dbs.meta.putSync(LOG_POSITION_KEY, { segment: position.segment, offset: 0 });
    dbs.meta.removeSync('counters');
    dbs.segments.removeSync(position.segment);
    hideRowSync(dbs, missing);
  });
  stored.close();
  await dbs.root.close();

  const reopened = await EventStore.open(first.dataDir, STORE_OPTIONS);
  t.equal(reopened.opened.replayed, 30, 'every logged create was replayed');
  const replayed = reopened.counters();
  t.same([replayed.events, replayed.images], [before.total_events, before.total_images], 'counted once while the head holds them');
  for (const id of ids) t.ok(reopened.getEvent(id), `event ${id} kept`);
  await reopened.checkpointed();
  const counters = reopened.counters();
  t.same([counters.events, counters.images, reopened[storeHandles].stored.countBefore(Infinity)], [before.total_events, before.total_images, 30], 'counted once, stored once, once checkpointed');
  t.ok(reopened[storeHandles].stored.holds(missing), 'the missing record put back in its place');
  await reopened.close();
});

/** A new, empty store's data directory, and the log position its log starts at. */
async function emptyStore(): Promise<{ dataDir: string; position: LogPosition }> {
  const dataDir = tempDataDir();
  await (await EventStore.open(dataDir, STORE_OPTIONS)).close();
  const dbs = openDatabases(dataDir);
  const position = dbs.meta.get(LOG_POSITION_KEY) as LogPosition;
  await dbs.root.close();
  return { dataDir, position };
}

/** A finalized event without files, created at the n-th µs of a fixed second, for a hand-written log. */
function loggedRecord(n: number, metadata: Record<string, unknown> = {}): EventRecord {
  return {
    ...NEW_EVENT_FIELDS, id: timeOrderedId(), created_at: 1_795_000_000_000_000 + n, custom_metadata: { n, ...metadata },
    images: [], videos: [], local_only_files: [], original_file_count: 0, current_file_count: 0,
    finalized_at: 1_795_000_000_000_000 + n, auto_finalized_at: null,
  };
}

t.test('a log of the release before, whose record frames hold the presented JSON, replays beside today\'s frames with the same JSON', async (t) => {
  const { dataDir, position } = await emptyStore();
  const [older, newer] = [loggedRecord(1, { note: 'é\u2028"' }), loggedRecord(2, { note: 'é\u2028"' })];
  // The log of the release before: the frame holds the whole stored value, its JSON included.
  const appender = new SegmentAppender(path.join(dataDir, 'blobs'), () => position.segment);
  await appender.append([
    { id: older.id, kind: 'record', bytes: encodeRecordFrame({ record: encodeRecord(older, presentEventJson), files: [] }) },
    { id: newer.id, kind: 'record', bytes: encodeRecordFrame({ record: frameRecordBytes(encodeRecord(newer, presentEventJson)), files: [] }) },
  ]);
  await appender.close();

  const reopened = await EventStore.open(dataDir, STORE_OPTIONS);
  t.teardown(() => reopened.close());
  t.equal(reopened.opened.replayed, 2, 'both frames replayed');
  for (const [name, r] of [['older', older], ['newer', newer]] as const) {
    t.equal(reopened.getEventJson(r.id)?.toString(), presentEventJson(r), `the ${name} frame's event answers its JSON from the head`);
  }
  await reopened.checkpointed();
  for (const [name, r] of [['older', older], ['newer', newer]] as const) {
    t.equal(reopened.getEventJson(r.id)?.toString(), presentEventJson(r), `and once checkpointed (${name})`);
    t.ok(reopened[storeHandles].stored.inBlock(r.created_at), `which a block holds (${name})`);
  }
});

t.test('a replay of a segment in a recycled file stops at its former creates, and start-up keeps the recycled files', async (t) => {
  const { dataDir, position } = await emptyStore();
  const blobsDir = path.join(dataDir, 'blobs');
  const frameOf = (r: EventRecord) => ({ id: r.id, kind: 'record' as const, bytes: encodeRecordFrame({ record: frameRecordBytes(encodeRecord(r, presentEventJson)), files: [] }) });
  // A former life, segment 7 of an earlier store, kept twice as recycled files.
  const [former1, former2, current] = [loggedRecord(1), loggedRecord(2), loggedRecord(3)];
  const formerDir = tempDataDir();
  const formerLog = new SegmentAppender(formerDir, () => 7);
  await formerLog.append([frameOf(former1), frameOf(former2)]);
  await formerLog.close();
  const hourAgo = new Date(Date.now() - 3_600_000); // kept long enough ago to be taken (RECYCLED_MIN_AGE_MS)
  for (const name of ['recycled-00000007.blob', 'recycled-00000008.blob']) {
    fs.copyFileSync(path.join(formerDir, segmentFileName(7)), path.join(blobsDir, name));
    fs.utimesSync(path.join(blobsDir, name), hourAgo, hourAgo);
  }
  // The log's next segment takes one; its first create is exactly as long as the former first.
  const log = new SegmentAppender(blobsDir, () => position.segment);
  const appended = await log.append([frameOf(current)]);
  t.equal(frameOf(current).bytes.length, frameOf(former1).bytes.length, 'the former second frame starts where the new one ends');
  t.ok(fs.statSync(path.join(blobsDir, segmentFileName(position.segment))).size > appended.end, 'the former frames are there, past the end');

  const reopened = await EventStore.open(dataDir, STORE_OPTIONS); // as after a kill -9: the log's tail is not cut
  // `log` is left open, as a kill leaves it; its handles are closed once the test is over.
  t.teardown(async () => {
    await reopened.close();
    await log.close();
  });
  t.equal(reopened.opened.replayed, 1, 'one create replayed');
  t.ok(reopened.getEventJson(current.id), 'the new create is there');
  t.equal(reopened.getEventJson(former2.id), undefined, 'the former one is not');
  t.same(fs.readdirSync(blobsDir).filter((name) => name.startsWith('recycled-')), ['recycled-00000008.blob'], 'the other recycled file is kept');
  t.ok(reopened.allocateSegment() > 8, 'and no new segment takes its number');
});

t.test('a clean stop replays nothing', async (t) => {
  const first = await startStore();
  await postJson(`${first.url}/v2/events`, imageEvent());
  await first.stop();
  const reopened = await EventStore.open(first.dataDir, STORE_OPTIONS);
  t.equal(reopened.opened.replayed, 0);
  t.equal(reopened.counters().events, 1);
  await reopened.close();
});

/**
 * EventStore whose checkpoint's LMDB commit fails as `failCheckpoints` last said (fault
 * injection). One mock import for the file, by resolved URL: tap resolves a relative one from the
 * source-mapped caller, test/, not from the compiled test that runs.
 */
let fails: (commit: number) => boolean = () => false;
let commits = 0;
const real = await import('../src/store/engine/checkpoint-writer.js');
const { EventStore: FaultyStore } = await t.mockImport<typeof import('../src/store/engine/event-store.js')>(import.meta.resolve('../src/store/engine/event-store.js'), {
  [import.meta.resolve('../src/store/engine/checkpoint-writer.js')]: {
    ...real,
    indexBatches: (...args: Parameters<typeof real.indexBatches>) => (fails(++commits) ? Promise.reject(new Error('EIO: injected')) : real.indexBatches(...args)),
  },
});

/** From now, FaultyStore's checkpoints fail as `failing(commit number, from 1)` says. */
function failCheckpoints(failing: (commit: number) => boolean): void {
  commits = 0;
  fails = failing;
}

t.test('a checkpoint that fails keeps its creates in the head: still acknowledged and readable, committed by the next one', async (t) => {
  // Fault injection: the first checkpoint's LMDB commit fails (on a device: ENOSPC or EIO while
  // LMDB grows its file). Everything else is the real store on a real directory.
  failCheckpoints((commit) => commit === 1);
  const dataDir = tempDataDir();
  const errors: string[] = [];
  const store = await FaultyStore.open(dataDir, { ...STORE_OPTIONS, checkpointMs: 60_000, onBackgroundError: (err) => errors.push(String(err)) });
  const first = await store.create({ fields: NEW_EVENT_FIELDS, images: [] });
  await t.rejects(store.checkpointed(), /EIO: injected/, 'the checkpoint fails');
  t.equal(store.getEvent(first.id)?.id, first.id, 'the create is still read, from the head');
  t.equal(store[storeHandles].stored.createdAtOf(first.id), undefined, 'and is not checkpointed');
  const second = await store.create({ fields: NEW_EVENT_FIELDS, images: [] });
  t.equal(store.counters().events, 2, 'the counters include the head');
  await store.checkpointed();
  t.same([store[storeHandles].stored.createdAtOf(first.id) !== undefined, store[storeHandles].stored.createdAtOf(second.id) !== undefined], [true, true], 'the next checkpoint commits both');
  t.equal(store.counters().events, 2, 'counted once');
  await store.close();
  const reopened = await EventStore.open(dataDir, STORE_OPTIONS);
  t.same([reopened.opened.replayed, reopened.counters().events], [0, 2], 'a clean stop replays nothing');
  await reopened.close();
});

t.test('a background checkpoint that fails is tried again a tick later, on its own', async (t) => {
  failCheckpoints((commit) => commit === 1);
  const errors: string[] = [];
  const store = await FaultyStore.open(tempDataDir(), { ...STORE_OPTIONS, checkpointMs: 20, checkpointMaxMs: 20, onBackgroundError: (err, task) => errors.push(`${task}: ${String(err)}`) });
  t.teardown(() => store.close());
  const created = await store.create({ fields: NEW_EVENT_FIELDS, images: [] });
  await until('the create reached LMDB', () => store[storeHandles].stored.createdAtOf(created.id) !== undefined);
  t.match(errors, [/index checkpoint: Error: EIO: injected/], 'the first try failed and was reported once');
});

t.test('creates acknowledged while every checkpoint fails come back from the log at the next open', async (t) => {
  failCheckpoints(() => true);
  const dataDir = tempDataDir();
  const errors: string[] = [];
  const store = await FaultyStore.open(dataDir, { ...STORE_OPTIONS, checkpointMs: 60_000, onBackgroundError: (err, task) => errors.push(`${task}: ${String(err)}`) });
  const created = [await store.create({ fields: NEW_EVENT_FIELDS, images: [] }), await store.create({ fields: NEW_EVENT_FIELDS, images: [] })];
  await store.close();
  t.match(errors, [/index checkpoint: Error: EIO: injected/], 'the failed last checkpoint is reported, and the close goes on');
  const reopened = await EventStore.open(dataDir, { ...STORE_OPTIONS, checkpointMs: 60_000 });
  t.equal(reopened.opened.replayed, 2, 'the log replays both creates');
  t.same(created.map((c) => reopened[storeHandles].stored.createdAtOf(c.id)), [undefined, undefined], 'into the head, not checkpointed');
  t.same(created.map((c) => reopened.getEvent(c.id)?.id), created.map((c) => c.id), 'served from the head');
  t.equal(reopened.counters().events, 2);
  await reopened.checkpointed();
  t.same(created.map((c) => reopened[storeHandles].stored.createdAtOf(c.id) !== undefined), [true, true], 'the first checkpoint commits them');
  t.equal(reopened.counters().events, 2, 'counted once');
  await reopened.close();
});

t.test('a replay keeps a segment opened since the last checkpoint, which only its replayed frames know, and appends after them', async (t) => {
  let failing = false;
  failCheckpoints(() => failing);
  const dataDir = tempDataDir();
  const store = await FaultyStore.open(dataDir, { ...STORE_OPTIONS, checkpointMs: 60_000, onBackgroundError: () => undefined });
  const before = await store.create({ fields: NEW_EVENT_FIELDS, images: [] });
  await store.checkpointed();
  const [first] = [...store[storeHandles].dbs.segments.getKeys()];
  // A segment where nothing lives is sealed and the next create opens a new one (docs/STORAGE.md, "Reclaiming space").
  await deleteRecords(new StoreView(store[storeHandles].dbs, dataDir, STORE_OPTIONS), [before.created_at], 'retention', () => undefined, (events) => store.logTombstones(events));
  await store.retireSegment(first);
  failing = true;
  const created = await store.create({ fields: NEW_EVENT_FIELDS, images: [{ results: IMAGE_RESULTS, image: { bytes: fixture('cat.jpg'), contentType: 'image/jpeg' }, input: null }] });
  await store.close();
  failing = false;

  const reopened = await EventStore.open(dataDir, { ...STORE_OPTIONS, checkpointMs: 60_000 });
  t.equal(reopened.opened.replayed, 1, 'the create in the new segment is replayed');
  const file = reopened.getFile(created.image_ids[0]);
  t.ok(file && file.segment > first, `its image is in segment ${file?.segment}, after segment ${first}`);
  t.equal(reopened[storeHandles].dbs.segments.get(file!.segment), undefined, 'which LMDB does not know');
  t.ok(fs.existsSync(path.join(dataDir, 'blobs', segmentFileName(file!.segment))), 'and which recovery kept');
  t.same(await reopened.openFile(created.image_ids[0])!.readAll(), fixture('cat.jpg'), 'with the image');
  const after = await reopened.create({ fields: NEW_EVENT_FIELDS, images: [] });
  await reopened.close();

  const third = await EventStore.open(dataDir, STORE_OPTIONS);
  t.teardown(() => third.close());
  t.same([third.opened.replayed, third.counters().events], [0, 2], 'a clean stop after it replays nothing');
  t.same([before, created, after].map((c) => third.getEvent(c.id)?.id), [undefined, created.id, after.id], 'every event is there, and the deleted one is not');
  t.same(await third.openFile(created.image_ids[0])!.readAll(), fixture('cat.jpg'), 'and the image, not overwritten by the create after the replay');
});

t.test('a replay goes past a create whose file id was no UUID, reports it, and replays the creates after it (#31 item 8)', async (t) => {
  // A hub stored device-chosen ids unchecked before imports were checked (ids.ts): a blob frame
  // keeps an id as 16 bytes, so `not-a-uuid-file` reads back as another string.
  const dataDir = tempDataDir();
  const store = await EventStore.open(dataDir, STORE_OPTIONS);
  const images = [{
    results: { label: null, object_detections: [], classifications: [], instance_segmentations: [], keypoints: [], metadata: {} },
    image: { bytes: fixture('cat.jpg'), contentType: 'image/jpeg' },
    input: null,
  }];
  const legacy = await store.create({ fields: NEW_EVENT_FIELDS, images, ids: { event: '01900000-0000-7000-8000-00000000000a', images: [{ file: 'not-a-uuid-file', input: null }] } });
  const after: CreatedEvent[] = [];
  for (let i = 0; i < 3; i++) after.push(await store.create({ fields: NEW_EVENT_FIELDS, images }));
  await store.close();

  // As after a power cut before LMDB flushed any of them: the log position at the segment's start.
  const dbs = openDatabases(dataDir);
  const position = dbs.meta.get(LOG_POSITION_KEY) as { segment: number; offset: number };
  await dbs.root.transaction(() => {
    dbs.meta.putSync(LOG_POSITION_KEY, { segment: position.segment, offset: 0 });
    for (const { id } of [legacy, ...after]) dbs.eventIds.removeSync(id);
    dbs.events.clearSync();
    dbs.blocks.clearSync();
    blocksChanged(dbs);
    dbs.meta.removeSync('counters');
    dbs.segments.removeSync(position.segment);
  });
  await dbs.root.close();

  const reopened = await EventStore.open(dataDir, STORE_OPTIONS);
  t.teardown(() => reopened.close());
  t.equal(reopened.opened.replayed, 3, 'the three acknowledged creates after it are replayed');
  t.match(reopened.opened.skipped, [{ segment: position.segment, eventId: legacy.id, missingFiles: ['not-a-uuid-file'] }], 'the skipped create is reported');
  for (const { id } of after) {
    const record = reopened.getEvent(id);
    t.ok(record, `event ${id} is back`);
    t.same(await reopened.openFile(record!.images[0]!.file_id!)!.readAll(), fixture('cat.jpg'), 'with its image');
  }
  t.equal(reopened.getEvent(legacy.id), undefined, 'the skipped create is not half-indexed');
});

t.test('a checkpoint whose batches span a segment roll records where each segment\'s frames end, so a restart cuts none of them', async (t) => {
  // A batch of record frames only (no image) ended segment 1, the next batch began segment 2:
  // segment 1's length came from its image frames alone, and a restart cut its last records.
  const { dataDir } = await emptyStore();
  const dbs = openDatabases(dataDir);
  const stored = new StoredEvents(dbs, blocksDirOf(dataDir));
  t.teardown(() => {
    stored.close();
    return dbs.root.close();
  });
  await indexBatches(stored, [
    { creates: [], updates: [], end: { segment: 7, offset: 5000 } },
    { creates: [], updates: [], end: { segment: 8, offset: 300 } },
  ], { shipping: false, present: presentEventJson });
  t.equal(dbs.segments.get(7)?.committed, 5000, 'the older segment is committed to its last batch\'s end');
  t.equal(dbs.segments.get(8)?.committed, 300);
  t.same(dbs.meta.get(LOG_POSITION_KEY), { segment: 8, offset: 300 }, 'the position is the last batch\'s end');
});
