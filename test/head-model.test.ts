/**
 * The head against a model (docs/STORAGE.md, "The head"): random sequences of
 * creates, finalizes (by the producer and by the auto-finalize sweep), attaches, deletions,
 * resets, checkpoints, merges of blocks, restarts and crashes run on a real store in a temp dir
 * and on a plain in-memory model. After every step, every list, count, search (newest and oldest
 * first), point read and file lookup must equal the model's answer, and every event deleted or
 * reset away must be gone from point reads too, whether the events and their changes are still in
 * the head, in blocks, moved to LMDB by a change, or some of each. A crash is a close whose last
 * checkpoint fails (fault injection), so the next open replays the head from the log.
 */
import fc from 'fast-check';
import t, { type Test } from 'tap';
import type { EventStore } from '../src/store/engine/event-store.js';
import type { NewEvent } from '../src/store/engine/prepared-create.js';
import { countEvents, scanEvents, scanPlan, type EventQuery } from '../src/store/read/event-query.js';
import { planSearch, type SearchCondition } from '../src/store/read/event-search.js';
import type { Direction } from '../src/store/index/created-at-cursors.js';
import { StagingFile } from '../src/store/log/staging-file.js';
import { presentEventJson } from '../src/events/present.js';
import { draftKey, EMPTY, indexKeysOf } from '../src/store/index/index-keys.js';
import { decodeRecord } from '../src/store/index/record-codec.js';
import { tempDataDir } from './support/store-server.js';
import { storeHandles } from '../src/store/read/store-view.js';
import { mergeStep } from '../src/store/engine/block-merges.js';

const DEVICES = ['cam-a', 'cam-b', 'cam-c'];

/**
 * The store, whose checkpoints fail while `checkpointsFail` is true (fault injection): a close
 * then leaves the head to the log, as a crash does, and the next open replays it. One mock import
 * for the file (test/support/store-api.ts), by resolved URL: tap resolves a relative one from the
 * source-mapped caller, test/, not from the compiled test that runs.
 */
let checkpointsFail = false;
const real = await import('../src/store/engine/checkpoint-writer.js');
const { AppError, EventStore: CrashableStore, StoreView, attachStagedBlob, deleteRecords, finalizeEvent } = await t.mockImport<typeof import('./support/store-api.js')>(import.meta.resolve('./support/store-api.js'), {
  [import.meta.resolve('../src/store/engine/checkpoint-writer.js')]: {
    ...real,
    indexBatches: (...args: Parameters<typeof real.indexBatches>) => (checkpointsFail ? Promise.reject(new Error('EIO: injected')) : real.indexBatches(...args)),
  },
});

interface ModelEvent {
  id: string;
  createdAt: number;
  device: string;
  line: number;
  draft: boolean;
  /** Finalized by the auto-finalize sweep (`auto_finalized_at` set). */
  autoFinalized: boolean;
  /** Ids of the videos attached, in order. */
  videos: string[];
}

/** What deletions and resets took: no read may find any of it again. */
interface Gone {
  ids: string[];
  files: string[];
}

type Command =
  | { kind: 'create'; device: number; line: number; draft: boolean }
  | { kind: 'finalize'; pick: number; auto: boolean }
  | { kind: 'attach'; pick: number }
  | { kind: 'change during a checkpoint'; pick: number; attach: boolean }
  | { kind: 'crash' }
  | { kind: 'delete'; pick: number }
  | { kind: 'checkpoint' }
  | { kind: 'merge' }
  | { kind: 'restart' }
  | { kind: 'reset' };

const command: fc.Arbitrary<Command> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('create' as const), device: fc.nat(2), line: fc.integer({ min: 1, max: 2 }), draft: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('finalize' as const), pick: fc.nat(), auto: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('attach' as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('change during a checkpoint' as const), pick: fc.nat(), attach: fc.boolean() }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'crash' as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'checkpoint' as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'merge' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'restart' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'reset' as const }) },
);

/**
 * The results of an event's one image: a polygon of `line + 2` points of class `line-<line>`, one
 * of them per line, and a keypoint group. The head keeps its records without their geometry
 * (prepared-create.ts `headRecord`): searches by class and by count, and point reads of the
 * geometry, must not tell.
 */
function resultsOf(line: number): NewEvent['images'][number]['results'] {
  const box = { x: 10, y: 10, width: 4, height: 4, confidence: 0.9 };
  const polygon = Array.from({ length: line + 2 }, (_, i) => [i, line * 10 + i]);
  return {
    label: null, object_detections: [], classifications: [],
    instance_segmentations: Array.from({ length: line }, () => ({ ...box, class: `line-${line}`, points: polygon })),
    keypoints: [{ ...box, class: 'hand', keypoints: [{ id: 0, x: line, y: 2, occluded: false }] }],
    metadata: {},
  };
}

function newEvent(device: string, line: number, draft: boolean): NewEvent {
  return {
    fields: {
      solution: null, workflow_id: null, workflow_version: null, inference_timestamp: '2026-11-22T01:00:00Z',
      device_id: device, stream_id: null, image_id: null, event_schema: 'custom', event_data: {},
      custom_metadata: { line }, display_image_position: null, draft,
    },
    images: [{ results: resultsOf(line), image: null, input: null }],
  };
}

function query(overrides: Partial<EventQuery>): EventQuery {
  return { fields: {}, metadata: [], startTime: undefined, endTime: undefined, includeDrafts: true, direction: 'desc', limit: 1000, ...overrides };
}

/** The lists the store is asked after every step, each with the model's filter. */
function listQueries(model: ModelEvent[]): { name: string; query: EventQuery; keep: (e: ModelEvent) => boolean }[] {
  const middle = model.length > 0 ? model[Math.floor(model.length / 2)].createdAt : 0;
  return [
    { name: 'all, newest first', query: query({}), keep: () => true },
    { name: 'all, oldest first', query: query({ direction: 'asc' }), keep: () => true },
    { name: 'device_id=cam-a', query: query({ fields: { device_id: ['cam-a'] } }), keep: (e) => e.device === 'cam-a' },
    { name: 'device_ids=cam-b,cam-c, oldest first', query: query({ fields: { device_id: ['cam-b', 'cam-c'] }, direction: 'asc' }), keep: (e) => e.device !== 'cam-a' },
    { name: 'include_drafts=false', query: query({ includeDrafts: false }), keep: (e) => !e.draft },
    { name: 'device_id=cam-a, finalized only (drafts finalized in the head leave its drafts index)', query: query({ fields: { device_id: ['cam-a'] }, includeDrafts: false }), keep: (e) => e.device === 'cam-a' && !e.draft },
    { name: 'device_id=nope (no entry, in the head or in LMDB)', query: query({ fields: { device_id: ['nope'] } }), keep: () => false },
    { name: 'metadata line eq 2 and device cam-b', query: query({ fields: { device_id: ['cam-b'] }, metadata: [{ key: 'line', op: 'eq', value: '2' }] }), keep: (e) => e.line === 2 && e.device === 'cam-b' },
    { name: 'metadata line gt 1', query: query({ metadata: [{ key: 'line', op: 'gt', value: '1' }] }), keep: (e) => e.line > 1 },
    { name: 'from the middle on', query: query({ startTime: middle }), keep: (e) => e.createdAt >= middle },
    { name: 'up to the middle, finalized only, oldest first', query: query({ endTime: middle, includeDrafts: false, direction: 'asc' }), keep: (e) => e.createdAt <= middle && !e.draft },
  ];
}

/** The searches asked after every step, each with the model's filter. */
const SEARCHES: { name: string; condition: SearchCondition; keep: (e: ModelEvent) => boolean }[] = [
  { name: 'device:cam-a OR device:cam-c', condition: { kind: 'or', any: [{ kind: 'field', field: 'device_id', value: 'cam-a' }, { kind: 'field', field: 'device_id', value: 'cam-c' }] }, keep: (e) => e.device !== 'cam-b' },
  { name: 'draft:true', condition: { kind: 'draft', draft: true }, keep: (e) => e.draft },
  { name: 'draft:false device:cam-c', condition: { kind: 'and', all: [{ kind: 'draft', draft: false }, { kind: 'field', field: 'device_id', value: 'cam-c' }] }, keep: (e) => !e.draft && e.device === 'cam-c' },
  { name: 'class:line-1 device:cam-a', condition: { kind: 'and', all: [{ kind: 'class', className: 'line-1' }, { kind: 'field', field: 'device_id', value: 'cam-a' }] }, keep: (e) => e.line === 1 && e.device === 'cam-a' },
  { name: '-device:cam-a', condition: { kind: 'not', condition: { kind: 'field', field: 'device_id', value: 'cam-a' } }, keep: (e) => e.device !== 'cam-a' },
  { name: 'meta.line:1 device:cam-b', condition: { kind: 'and', all: [{ kind: 'metadata', condition: { key: 'line', op: 'eq', value: '1' } }, { kind: 'field', field: 'device_id', value: 'cam-b' }] }, keep: (e) => e.line === 1 && e.device === 'cam-b' },
  { name: '*', condition: { kind: 'all' }, keep: () => true },
  { name: 'class:line-2', condition: { kind: 'class', className: 'line-2' }, keep: (e) => e.line === 2 },
  { name: 'annotations:3', condition: { kind: 'annotations', min: 3, max: 3 }, keep: (e) => e.line === 2 },
];

const BUDGET = { records: 1_000_000, bytes: 1 << 30 };

function listIds(store: EventStore, q: EventQuery): string[] {
  const ids: string[] = [];
  // Pages of 3, each continued from the previous one's next value, as a client pages.
  let next: number | null | undefined;
  do {
    const bound = next ?? undefined;
    const page = q.direction === 'asc' ? { ...q, limit: 3, startTime: bound ?? q.startTime } : { ...q, limit: 3, endTime: bound ?? q.endTime };
    next = scanEvents(store, page, BUDGET, { add: (json) => ids.push(JSON.parse(Buffer.from(json).toString()).id) > 0 });
  } while (next !== null);
  return ids;
}

function searchIds(store: EventStore, condition: SearchCondition, direction: Direction): string[] {
  const ids: string[] = [];
  const plan = planSearch(store, condition, { searchIndexReady: store.searchIndexReady, direction });
  scanPlan(store, plan, direction, 1000, BUDGET, { add: (json) => ids.push(JSON.parse(Buffer.from(json).toString()).id) > 0 });
  return ids;
}

/** Compares every read of the store with the model; returns the first difference, or undefined. */
function difference(store: EventStore, model: ModelEvent[], gone: Gone = { ids: [], files: [] }): string | undefined {
  for (const id of gone.files) if (store.openFile(id)) return `file ${id} of a deleted event: still served`;
  for (const id of gone.ids) if (store.getEvent(id) || store.getEventJson(id)) return `point read ${id}: a deleted event still answers`;
  const newestFirst = [...model].reverse();
  for (const { name, query: q, keep } of listQueries(model)) {
    const expected = (q.direction === 'asc' ? model : newestFirst).filter(keep).map((e) => e.id);
    const got = listIds(store, q);
    if (JSON.stringify(got) !== JSON.stringify(expected)) return `list ${name}: got ${got.length} ${JSON.stringify(got)}, expected ${expected.length} ${JSON.stringify(expected)}`;
    const counts = countEvents(store, q);
    const matching = model.filter(keep);
    const want = { total: model.length, filtered: matching.length, oldest: matching[0]?.createdAt ?? null, newest: matching.at(-1)?.createdAt ?? null };
    if (JSON.stringify(counts) !== JSON.stringify(want)) return `count ${name}: got ${JSON.stringify(counts)}, expected ${JSON.stringify(want)}`;
  }
  for (const { name, condition, keep } of SEARCHES) {
    for (const direction of ['desc', 'asc'] as const) {
      const expected = (direction === 'asc' ? model : newestFirst).filter(keep).map((e) => e.id);
      const got = searchIds(store, condition, direction);
      if (JSON.stringify(got) !== JSON.stringify(expected)) return `search ${name} (${direction}): got ${JSON.stringify(got)}, expected ${JSON.stringify(expected)}`;
    }
  }
  for (const e of model) {
    const record = store.getEvent(e.id);
    const seen = record && { created_at: record.created_at, draft: record.draft, auto: record.auto_finalized_at !== null, videos: record.videos.map((v) => v.file_id), results: record.images[0] };
    const want = { created_at: e.createdAt, draft: e.draft, auto: e.autoFinalized, videos: e.videos, results: { file_id: null, input_file_id: null, ...resultsOf(e.line) } };
    if (JSON.stringify(seen) !== JSON.stringify(want)) return `point read ${e.id}: ${JSON.stringify(seen)}, expected ${JSON.stringify(want)}`;
    const json = store.getEventJson(e.id);
    const presented = json && (JSON.parse(json.toString()) as { draft: boolean; auto_finalized_at: string | null });
    if (!presented || presented.draft !== e.draft || (presented.auto_finalized_at !== null) !== e.autoFinalized) return `point read (JSON) ${e.id}: ${json?.toString()}`;
    for (const video of e.videos) if (store.openFile(video)?.size !== VIDEO.length) return `file ${video} of ${e.id}: not found`;
  }
  const counters = store.counters();
  const drafts = model.filter((e) => e.draft).length;
  const files = model.reduce((n, e) => n + e.videos.length, 0);
  const want = { events: model.length, drafts, files, liveBlobBytes: files * VIDEO.length };
  const got = { events: counters.events, drafts: counters.drafts, files: counters.files, liveBlobBytes: counters.liveBlobBytes };
  if (JSON.stringify(got) !== JSON.stringify(want)) return `counters: ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`;
  return undefined;
}

/** The bytes of every attached video (the store never looks inside an attachment). */
const VIDEO = Buffer.from('a video attachment, as the store keeps it');
/** Where a deletion's changes go here: nowhere (the worker forwards them to the HTTP thread's feed, which this test does not read). */
const unannounced = () => undefined;

/** Attaches a video to `e` as the model says it must go: listed on a draft, refused on a finalized event. */
async function attachAs(e: ModelEvent, store: EventStore): Promise<void> {
  const attached = await attachVideo(store, e.id).catch((err: unknown) => err);
  if (e.draft && typeof attached !== 'string') throw new Error(`attach to draft ${e.id}: ${String(attached)}`);
  if (!e.draft && !(attached instanceof AppError && attached.code === 'event_finalized')) throw new Error(`attach to finalized ${e.id}: ${String(attached)}`);
  if (typeof attached === 'string') e.videos.push(attached);
}

/** Stages VIDEO as an upload and attaches it to event `id`. */
async function attachVideo(store: EventStore, id: string): Promise<string> {
  const staging = new StagingFile(store.stagingDir);
  staging.write(VIDEO);
  const staged = await staging.finish('video');
  return (await attachStagedBlob(store, id, staged, { kind: 'video', label: 'clip', contentType: 'video/mp4' })).file_id;
}

t.test('a video attached in the head to an event a cleanup then deletes goes with the event, live and after a crash', async (t) => {
  const dataDir = tempDataDir();
  const options = { sinks: [], present: presentEventJson, checkpointMs: 60_000, onBackgroundError: () => undefined };
  let store: EventStore = await CrashableStore.open(dataDir, options);
  t.teardown(() => store.close());
  const draft = await store.create(newEvent('cam-a', 1, true));
  await store.checkpointed();
  const video = await attachVideo(store, draft.id);
  t.equal(store.openFile(video)?.size, VIDEO.length, 'the attach is in the head');
  // The lifecycle worker deletes through a view with no head.
  await deleteRecords(new StoreView(store[storeHandles].dbs, dataDir, options), [draft.created_at], 'retention', unannounced, (events) => store.logTombstones(events));
  t.equal(store.openFile(video), undefined, 'its video is not served once the event is gone');
  t.same([store.counters().events, store.counters().files], [0, 0], 'nor counted');

  checkpointsFail = true;
  await store.close();
  checkpointsFail = false;
  store = await CrashableStore.open(dataDir, options);
  t.equal(store.opened.changesReplayed, 1, 'the attach is replayed from the log');
  t.equal(store.openFile(video), undefined, 'and dropped: its event is deleted');
  t.same([store.counters().events, store.counters().files, store.counters().liveBlobBytes], [0, 0, 0]);
});

t.test('lists, counts, searches, point reads and files equal the model with events and changes in the head, in LMDB, or both', async (t) => {
  let runs = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 30 }), async (commands) => {
      runs++;
      const dataDir = tempDataDir();
      // No timed checkpoint within a run: only the commands move events from the head to LMDB.
      const options = { sinks: [], present: presentEventJson, checkpointMs: 60_000, onBackgroundError: () => undefined };
      let store: EventStore = await CrashableStore.open(dataDir, options);
      let model: ModelEvent[] = [];
      /** Events deleted or reset away, and their videos. */
      const gone: Gone = { ids: [], files: [] };
      try {
        for (const [step, c] of commands.entries()) {
          if (c.kind === 'create') {
            const device = DEVICES[c.device];
            const created = await store.create(newEvent(device, c.line, c.draft));
            model.push({ id: created.id, createdAt: created.created_at, device, line: c.line, draft: c.draft, autoFinalized: false, videos: [] });
          } else if (c.kind === 'finalize' && model.length > 0) {
            const e = model[c.pick % model.length];
            const outcome = await finalizeEvent(store, e.id, c.auto);
            if (outcome.alreadyFinalized === e.draft) throw new Error(`finalize ${e.id}: alreadyFinalized ${outcome.alreadyFinalized} for a draft=${e.draft}`);
            // Only the finalize that ends the draft says how it was finalized.
            if (e.draft) e.autoFinalized = c.auto;
            e.draft = false;
          } else if (c.kind === 'attach' && model.length > 0) {
            await attachAs(model[c.pick % model.length], store);
          } else if (c.kind === 'change during a checkpoint' && model.length > 0) {
            // The checkpoint takes the head as it is and commits it while the change enters the
            // head behind it: its event may leave the head's creates with the change still there.
            const e = model[c.pick % model.length];
            const checkpoint = store.checkpointed();
            if (c.attach) await attachAs(e, store);
            else {
              await finalizeEvent(store, e.id);
              e.draft = false;
            }
            await checkpoint;
          } else if (c.kind === 'delete' && model.length > 0) {
            // The lifecycle worker deletes only what it sees: events already checkpointed.
            const e = model[c.pick % model.length];
            if (store[storeHandles].stored.createdAtOf(e.id) !== undefined) {
              // Through a view with no head, as the worker's: the head may hold a change to the event.
              await deleteRecords(new StoreView(store[storeHandles].dbs, dataDir, options), [e.createdAt], 'retention', unannounced, (events) => store.logTombstones(events));
              model = model.filter((m) => m !== e);
              gone.ids.push(e.id);
              gone.files.push(...e.videos);
            }
          } else if (c.kind === 'checkpoint') {
            await store.checkpointed();
          } else if (c.kind === 'merge') {
            // A block with hidden rows alone, else the three oldest: merges at every step, not only at the fan-in.
            await mergeStep(store[storeHandles].stored, presentEventJson, async () => undefined, (blocks, hiddenIn) => {
              const sparse = blocks.find((block) => hiddenIn(block) > 0);
              return sparse ? [sparse] : blocks.length >= 2 ? blocks.slice(0, 3) : undefined;
            });
          } else if (c.kind === 'restart') {
            await store.close();
            store = await CrashableStore.open(dataDir, options);
          } else if (c.kind === 'crash') {
            checkpointsFail = true;
            await store.close().finally(() => { checkpointsFail = false; });
            store = await CrashableStore.open(dataDir, options);
          } else if (c.kind === 'reset') {
            await store.clearAll();
            gone.ids.push(...model.map((m) => m.id));
            gone.files.push(...model.flatMap((m) => m.videos));
            model = [];
          }
          const diff = difference(store, model, gone);
          if (diff) throw new Error(`after step ${step} (${JSON.stringify(c)}): ${diff}`);
        }
      } finally {
        await store.close();
      }
    }),
    { numRuns: 40 },
  );
  t.equal(runs >= 40, true, 'every run compared');
});

/**
 * A store in a temp dir whose head holds `count` creates (no checkpoint for a minute), and its
 * model: devices in turn, lines 1 and 2 in turn, every `draftEvery`-th create a draft.
 */
async function storeWithHead(t: Test, count: number, draftEvery: number): Promise<{ store: EventStore; model: ModelEvent[] }> {
  const store = await CrashableStore.open(tempDataDir(), { sinks: [], present: presentEventJson, checkpointMs: 60_000 });
  t.teardown(() => store.close());
  const model: ModelEvent[] = [];
  for (let n = 0; n < count; n++) {
    const device = DEVICES[n % DEVICES.length];
    const line = 1 + (n % 2);
    const draft = n % draftEvery === 0;
    const created = await store.create(newEvent(device, line, draft));
    model.push({ id: created.id, createdAt: created.created_at, device, line, draft, autoFinalized: false, videos: [] });
  }
  return { store, model };
}

/**
 * A record LMDB holds without its id or one of its index entries, or undefined: what a reader of
 * LMDB alone (the lifecycle worker) must never meet (checkpoint-writer.ts `indexLogged` puts records last).
 */
function partWayRecord(store: EventStore, model: ModelEvent[]): string | undefined {
  for (const e of model) {
    const value = store[storeHandles].dbs.events.getBinary(e.createdAt);
    if (!value) continue;
    if (store[storeHandles].dbs.eventIds.get(e.id) !== e.createdAt) return `record ${e.id} in LMDB before its id`;
    const missing = indexKeysOf(decodeRecord(value)).find((key) => !store[storeHandles].dbs.index.doesExist(key));
    if (missing) return `record ${e.id} in LMDB before its index entry ${JSON.stringify(missing)}`;
  }
  return undefined;
}

t.test('a checkpoint of more creates than one turn of puts: every read equals the model at every turn until it commits, and LMDB holds no record before its entries', async (t) => {
  // 990 creates in the head (the searches read 1,000 at most): a checkpoint gathers them in four
  // turns (256 creates a turn), then issues their 5,000-odd puts in two (4,096 a turn).
  const { store, model } = await storeWithHead(t, 990, 5);
  let committed = false;
  const checkpoint = store.checkpointed().then(() => { committed = true; });
  let turns = 0;
  while (!committed) {
    const diff = difference(store, model);
    if (diff) throw new Error(`at turn ${turns} of the checkpoint: ${diff}`);
    const part = partWayRecord(store, model);
    if (part) throw new Error(`at turn ${turns} of the checkpoint: ${part}`);
    turns++;
    await new Promise((resolve) => setImmediate(resolve));
  }
  await checkpoint;
  t.equal(turns >= 3, true, `reads compared at ${turns} turns while the checkpoint ran`);
  t.equal(difference(store, model), undefined, 'after the checkpoint');
  t.equal(model.every((e) => store[storeHandles].stored.createdAtOf(e.id) !== undefined), true, 'every create is checkpointed');
});

t.test('entries of creates the head holds, part-way in LMDB in any order (a checkpoint cut short), are never read from LMDB', async (t) => {
  const { store, model } = await storeWithHead(t, 12, 3);
  t.equal(difference(store, model), undefined, 'before: every create in the head alone');
  // A draft's record and its other index entries put, its drafts-index entry not (yet): what a
  // checkpoint whose puts were issued in another order, and were cut short, leaves in LMDB.
  const puts: Promise<boolean>[] = [];
  for (const e of model) {
    const value = store.eventValue(e.createdAt)!;
    puts.push(store[storeHandles].dbs.events.put(e.createdAt, value), store[storeHandles].dbs.eventIds.put(e.id, e.createdAt));
    for (const key of indexKeysOf(decodeRecord(value))) if (key[0] !== draftKey(e.createdAt)[0]) puts.push(store[storeHandles].dbs.index.put(key, EMPTY));
  }
  await Promise.all(puts);
  t.equal(difference(store, model), undefined, 'every read equals the model');
  await store.checkpointed();
  t.equal(difference(store, model), undefined, 'after the checkpoint that puts them whole');
});
