/**
 * The index writer thread (docs/STORAGE.md, "The index head"): a checkpoint of
 * WRITER_THREAD_MIN_CREATES creates or more puts them into LMDB on a thread of its own, a smaller
 * one on the HTTP thread; a thread that dies fails its checkpoint, whose creates stay in the head,
 * and the next checkpoint starts another. A real store in a temp dir, read back after a reopen.
 */
import t, { type Test } from 'tap';
import { loadConfig } from '../src/config.js';
import { createEvent } from '../src/events/create-event.js';
import { presentEventJson } from '../src/events/present.js';
import { EventStore } from '../src/store/event-store.js';
import { WRITER_THREAD_MIN_CREATES } from '../src/store/index-writer.js';
import { imageEvent, smallEvent } from './support/events.js';
import { tempDataDir } from './support/store-server.js';

const OPTIONS = { sinks: [], present: presentEventJson, checkpointMs: 3_600_000, checkpointMaxMs: 3_600_000 };
const config = loadConfig({ LOG_LEVEL: 'silent' });

/** Creates `count` events in `store` (every tenth with a real JPEG); their ids. */
async function createMany(store: EventStore, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const body = i % 10 === 0 ? imageEvent({ eventData: { result: 'pass', externalId: `unit-${i}` } }) : smallEvent({ event_data: { value: `n-${i}` } });
    ids.push((await createEvent(store, config, body)).id);
  }
  return ids;
}

/** Images among `count` events of `createMany`. */
const imagesOf = (count: number) => Math.ceil(count / 10);

/** Reopens the store in `dataDir`: nothing to replay, and every id read from LMDB with its `images` image files. */
async function allInLmdb(t: Test, dataDir: string, ids: string[], images: number): Promise<void> {
  const store = await EventStore.open(dataDir, OPTIONS);
  t.teardown(() => store.close());
  t.equal(store.opened.replayed, 0, 'nothing left to replay: the checkpoints committed every create');
  t.equal(store.counters().events, ids.length, 'the counters count each create once');
  const missing = ids.filter((id) => store.getEvent(id) === undefined);
  t.same(missing, [], 'every event read back');
  const stored = ids.flatMap((id) => store.getEvent(id)!.images);
  t.equal(stored.length, images, 'with their images');
  t.ok(stored.every((image) => store.getFile(image.file_id!)?.kind === 'image'), 'whose files are indexed');
}

t.test('a checkpoint of many creates puts them on the index writer thread, one of a few on the HTTP thread', async (t) => {
  const dataDir = tempDataDir();
  const store = await EventStore.open(dataDir, OPTIONS);
  const few = await createMany(store, 3);
  await store.checkpointed();
  t.equal(store.indexWriter.threadCheckpoints, 0, `${few.length} creates: put on the HTTP thread`);
  t.equal(store.indexWriter.thread, undefined, 'and no thread started for them');

  const many = await createMany(store, WRITER_THREAD_MIN_CREATES);
  await store.checkpointed();
  t.equal(store.indexWriter.threadCheckpoints, 1, `${many.length} creates: put on the writer thread`);
  await store.close();
  t.equal(store.indexWriter.thread, undefined, 'closing the store stops the thread');
  await allInLmdb(t, dataDir, [...few, ...many], imagesOf(few.length) + imagesOf(many.length));
});

t.test('a writer thread that dies fails its checkpoint; the creates stay readable in the head and the next checkpoint commits them', async (t) => {
  const dataDir = tempDataDir();
  const store = await EventStore.open(dataDir, OPTIONS);
  const first = await createMany(store, WRITER_THREAD_MIN_CREATES);
  await store.checkpointed();
  const thread = store.indexWriter.thread!;
  t.ok(thread, 'the first checkpoint started the thread');

  const second = await createMany(store, WRITER_THREAD_MIN_CREATES);
  // Terminated before the put is posted: the thread never sees it, and its exit fails the put.
  void thread.terminate();
  await t.rejects(store.checkpointed(), /index writer thread exited/, 'the checkpoint fails with the thread');
  t.equal(store.indexWriter.thread, undefined, 'the dead thread is let go');
  t.ok(second.every((id) => store.getEvent(id) !== undefined), 'its creates are still served from the head');

  await store.checkpointed();
  t.not(store.indexWriter.thread, undefined, 'the next checkpoint started another thread');
  t.equal(store.indexWriter.threadCheckpoints, 2, 'which put the creates');
  await store.close();
  await allInLmdb(t, dataDir, [...first, ...second], 2 * imagesOf(WRITER_THREAD_MIN_CREATES));
});
