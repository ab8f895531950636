/**
 * A damaged page of the index under the running store (docs/STORAGE.md, "A damaged index"; a start-up walks a small data.mdb whole and refuses it):
 * LMDB finds it when a read reaches it, and lmdb-js throws MDB_CORRUPTED. The answer names the
 * damage and the command that rebuilds the index from the log (docs/API.md, "Errors":
 * `index_damaged`), rather than an internal failure.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { inspectIndexFile } from '../src/store/index/index-file-check.js';
import { getJson, postJson, smallEvent } from './support/events.js';
import { startStore } from './support/store-server.js';

t.test('a read that meets a damaged index page answers 500 index_damaged, naming check --repair', async (t) => {
  const store = await startStore();
  t.teardown(() => store.stop());
  const ids: string[] = [];
  for (let n = 0; n < 300; n += 50) {
    const created = await Promise.all(Array.from({ length: 50 }, (_, k) => postJson(`${store.url}/v2/events`, smallEvent({ draft: true, custom_metadata: { n: n + k } }))));
    ids.push(...created.map((res) => res.body.id as string));
  }
  // Drafts checkpointed into a block, then finalized: LMDB holds them, with their presented JSON
  // (docs/STORAGE.md, "Blocks in the running store").
  t.equal((await postJson(`${store.url}/admin/cleanup`, '')).status, 200, 'a cleanup checkpoints the head');
  for (let n = 0; n < 300; n += 50) await Promise.all(ids.slice(n, n + 50).map((id) => postJson(`${store.url}/v2/events/${id}/finalize`, {})));
  t.equal((await postJson(`${store.url}/admin/cleanup`, '')).status, 200, 'and the finalizes');

  // Zero the page of the events database that holds one event's presented JSON, as a card that
  // returns a bad page months after the write does, under the running store: a start-up walks a
  // small data.mdb whole and would refuse it (index-file-check.ts `assertIndexOpenable`).
  const indexFile = path.join(store.dataDir, 'db', 'data.mdb');
  const index = fs.readFileSync(indexFile);
  const inspected = inspectIndexFile(store.dataDir);
  if (inspected.state !== 'sound') throw new Error(`data.mdb is ${inspected.state} before the damage`);
  const { pageSize } = inspected;
  const target = ids[150];
  const at = index.indexOf(`{"id":"${target}"`);
  t.ok(at > 0, `event ${target}'s record found in data.mdb`);
  const page = Math.floor(at / pageSize);
  const fd = fs.openSync(indexFile, 'r+');
  fs.writeSync(fd, Buffer.alloc(pageSize), 0, pageSize, page * pageSize);
  fs.closeSync(fd);

  const read = await getJson(`${store.url}/v2/events/${target}`);
  t.equal(read.status, 500);
  t.match(read.body.detail, /The index \(db\/data\.mdb or a block in blocks\/\) is damaged: stop the store and run `edge-events check --repair`/);
  // The damage stays where it is: later reads of intact events are answered.
  for (const id of [ids[0], ids[299], ids[10]]) t.equal((await getJson(`${store.url}/v2/events/${id}`)).status, 200, `intact event ${id} is read after it`);
  t.equal((await getJson(`${store.url}/v2/events/${target}`)).status, 500, 'the damaged one again answers index_damaged');
  t.equal((await getJson(`${store.url}/v2/events/${ids[1]}`)).status, 200, 'and an intact one after that still reads');
  const list = await getJson(`${store.url}/v2/events?limit=1000`);
  t.equal(list.status, 500, `a list that meets it answers index_damaged: ${JSON.stringify(list.body).slice(0, 200)}`);
  for (const id of [ids[0], ids[299], ids[2]]) t.equal((await getJson(`${store.url}/v2/events/${id}`)).status, 200, `intact event ${id} is read after the list`);
  t.equal((await getJson(`${store.url}/v2/events?limit=10`)).status, 200, 'a list of the newest, before the damage, is answered');
  const health = await getJson(`${store.url}/health`);
  t.match(health, { status: 200, body: { status: 'degraded', datastore: 'index_damaged' } }, '/health says degraded');
  t.match(health.body.error, /index \(db\/data\.mdb or a block in blocks\/\) is damaged/);
  t.match((await getJson(`${store.url}/stats`)).body.index_damage, { reads_failed: 3, last_error: /./ }, '/stats counts the reads that met it: two reads and a list');
  t.match(await (await fetch(`${store.url}/metrics`)).text(), /edge_events_index_damaged_reads_total 3/);
});
