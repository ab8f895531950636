/**
 * An index of 16 KiB pages, as LMDB makes on a Raspberry Pi 5, whose kernel has 16 KiB pages (LMDB
 * takes the OS page size for a new file; lmdb-js README, `pageSize`). Nothing in the store may
 * assume 4 KiB pages: the start-up's checks of data.mdb read the page size from its meta page
 * (docs/STORAGE.md, "A damaged index"), and `edge-events check` walks pages of that size. The
 * index is made with lmdb-js's `pageSize` before the store first opens it, on this 4 KiB kernel.
 */
import fs from 'node:fs';
import path from 'node:path';
import { open } from 'lmdb';
import t from 'tap';
import { inspectIndexFile } from '../src/store/index/index-file-check.js';
import { runCli } from './support/cli-process.js';
import { fixture, getJson, imageEvent, postJson, smallEvent } from './support/events.js';
import { startStore, tempDataDir } from './support/store-server.js';

const PAGE_BYTES = 16 * 1024;

t.test('a store whose index has 16 KiB pages stores, checkpoints, starts again and checks sound', async (t) => {
  const dataDir = tempDataDir();
  fs.mkdirSync(path.join(dataDir, 'db'), { recursive: true });
  await open({ path: path.join(dataDir, 'db'), pageSize: PAGE_BYTES }).close();

  // Checkpoints at once, so that the index holds the creates before the stop.
  const env = { DATA_DIR: dataDir, INDEX_CHECKPOINT_MS: '20', INDEX_CHECKPOINT_MAX_MS: '20' };
  let store = await startStore(env);
  // Records of every size: small ones, images, and about 200 KB of detections (overflow pages).
  const detections = Array.from({ length: 2000 }, (_, i) => ({ class: `part-${i % 7}`, x: i, y: i, width: 10, height: 10, confidence: 0.5 }));
  const bodies = Array.from({ length: 60 }, (_, n) => n % 3 === 0 ? imageEvent({ customMetadata: { n } })
    : n % 3 === 1 ? smallEvent({ custom_metadata: { n }, images: [{ label: 'big', object_detections: detections }] })
      : smallEvent({ custom_metadata: { n } }));
  const ids: string[] = [];
  const statuses = new Set<number>();
  for (const body of bodies) {
    const created = await postJson(`${store.url}/v2/events`, body);
    statuses.add(created.status);
    ids.push(created.body.id);
  }
  t.same([...statuses], [201], '60 creates stored');
  await store.stop();
  t.match(inspectIndexFile(dataDir), { state: 'sound', pageSize: PAGE_BYTES }, 'data.mdb has 16 KiB pages, as its meta page says');

  store = await startStore(env);
  const listed = await getJson(`${store.url}/v2/events?limit=100&sort_direction=asc`);
  t.same(listed.body.events.map((e: { id: string }) => e.id), ids, 'every event, in order, after a start on it');
  const withImage = await getJson(`${store.url}/v2/events/${ids[0]}`);
  const image = await fetch(`${store.url}/images/${withImage.body.images[0].file_id}`);
  t.same(Buffer.from(await image.arrayBuffer()), fixture('cat.jpg'), 'its image byte for byte');
  const big = await getJson(`${store.url}/v2/events/${ids[1]}`);
  t.equal(big.body.images[0].object_detections.length, 2000, 'a record over its page size whole');
  const search = await getJson(`${store.url}/v2/events/search?q=${encodeURIComponent('class:part-3')}&limit=100`);
  t.equal(search.status, 200);
  t.equal(search.body.events.length, 20, 'the search index answers from it');
  await store.stop();

  const check = await runCli(['check', '--data-dir', dataDir]);
  t.equal(check.code, 0, check.stdout);
  t.match(check.stdout, /Index db\/data\.mdb: sound \([\d,]+ bytes, pages of 16,384 bytes/);
});
