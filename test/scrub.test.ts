/**
 * The scrub of the running store (src/store/engine/log-scrub.ts; docs/STORAGE.md, "The scrub"):
 * with SCRUB_PASS_HOURS set small, damage to a checkpointed frame of the log is found within a
 * pass, mended from the index's copy, and reported in /stats `scrub` and /metrics; a damaged
 * image, which has one copy, is named and confined. The whole service on port 0, a real LMDB and
 * segment log in a temp dir, real JPEGs.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { presentEventJson } from '../src/events/present.js';
import { ScrubPace } from '../src/lifecycle/scrub-runner.js';
import { BlockReader } from '../src/store/block/block-reader.js';
import { checkStore, EventStore, LogScrub, rebuildIndex } from '../src/store/index.js';
import { fixture, getJson, imageEvent, postJson, smallEvent } from './support/events.js';
import { scan } from './support/segment-scan.js';
import { startStore, tempDataDir } from './support/store-server.js';
import { until } from './support/waiting.js';
import { flipByte } from './support/flip-byte.js';

/** A pass over this test's log takes well under a second. */
const SCRUB = { SCRUB_PASS_HOURS: '0.0001' };

/** The one segment file of the store (every frame of these tests is in it). */
function segmentOf(dataDir: string): string {
  const [name] = fs.readdirSync(path.join(dataDir, 'blobs')).filter((n) => n.startsWith('seg-'));
  return path.join(dataDir, 'blobs', name);
}

t.test('a flipped byte and a zeroed page in checkpointed record frames are found within a pass and mended from the index', async (t) => {
  const store = await startStore(SCRUB);
  const ids: string[] = [];
  for (let i = 0; i < 30; i++) ids.push((await postJson(`${store.url}/v2/events`, smallEvent({ device_id: `cam-${i % 3}` }))).body.id);
  t.equal((await postJson(`${store.url}/admin/cleanup`, '')).status, 200, 'a cleanup checkpoints the head');
  const file = segmentOf(store.dataDir);
  const records = (await scan(file)).filter((f) => f.kind === 'record');
  flipByte(file, records[3].offset + 20);
  // A zeroed 4 KiB page: the frames it held, and the one it cut, are gone.
  const page = Math.ceil(records[15].offset / 4096) * 4096;
  const fd = fs.openSync(file, 'r+');
  fs.writeSync(fd, Buffer.alloc(4096), 0, 4096, page);
  fs.closeSync(fd);
  const zeroed = records.filter((f) => f.offset + f.length > page && f.offset - 36 < page + 4096).map((f) => f.id);
  t.ok(zeroed.length >= 2, `the page held ${zeroed.length} record frames`);

  let scrub: any;
  await until('the scrub to mend both', async () => {
    scrub = (await getJson(`${store.url}/stats`)).body.scrub;
    return scrub.repaired >= 1 && scrub.recent.flatMap((f: any) => f.event_ids).length >= 1 + zeroed.length;
  });
  const named = scrub.recent.flatMap((f: any) => f.event_ids);
  for (const id of [records[3].id, ...zeroed]) t.ok(named.includes(id), `event ${id} is named`);
  t.match(scrub.recent[0], { copy: 'log_copy', repaired: true, file: path.basename(file) });
  t.equal(scrub.unrepairable, 0);
  const metrics = await (await fetch(`${store.url}/metrics`)).text();
  t.match(metrics, /edge_events_scrub_repaired_total [1-9]/);
  for (const id of ids) t.equal((await getJson(`${store.url}/v2/events/${id}`)).status, 200, `event ${id} is served`);
  await store.stop();

  const check = await checkStore(store.dataDir);
  t.match(check.indexAgainstLog, { indexOnly: 0, bothCopies: 30 }, 'every event has its two copies again');
});

t.test('a changed byte in an index record\'s presented JSON is found by the scrub and by check, and --repair serves the event as it was', async (t) => {
  // npm run disk-faults found it: the record decoded, so the scrub took it for whole, while reads
  // served the stored JSON with the byte changed (record-codec.ts `wholeRecord`). A finalized
  // draft is the record LMDB holds with its JSON (docs/STORAGE.md, "Blocks").
  const first = await startStore(SCRUB);
  const ids: string[] = [];
  for (let i = 0; i < 10; i++) ids.push((await postJson(`${first.url}/v2/events`, smallEvent({ device_id: `cam-${i}`, draft: i === 4 }))).body.id);
  t.equal((await postJson(`${first.url}/admin/cleanup`, '')).status, 200, 'a cleanup checkpoints the head: the draft is in a block');
  t.equal((await postJson(`${first.url}/v2/events/${ids[4]}/finalize`, {})).status, 200);
  const target = (await getJson(`${first.url}/v2/events/${ids[4]}`)).body;
  await first.stop();
  const dataMdb = path.join(first.dataDir, 'db', 'data.mdb');
  const key = Buffer.from(`"created_at":"${target.created_at}"`);
  const at = fs.readFileSync(dataMdb).indexOf(key);
  t.ok(at > 0, 'the finalized record\'s presented JSON is in the index file');
  flipByte(dataMdb, at + '"created_at'.length); // its closing quote

  const store = await startStore({ ...SCRUB, DATA_DIR: first.dataDir });
  let scrub: any;
  await until('the scrub to name it', async () => (scrub = (await getJson(`${store.url}/stats`)).body.scrub).recent.some((f: any) => f.copy === 'index_copy'));
  t.match(scrub.recent.find((f: any) => f.copy === 'index_copy'), { repaired: false, event_ids: [ids[4]] });
  await store.stop();

  const check = await checkStore(first.dataDir, presentEventJson);
  t.match(check.indexAgainstLog, { recordsNotReadingBack: 1 }, 'check reads every record back');
  t.equal(check.rebuild, 'records of the index do not read back as their events');
  await rebuildIndex(first.dataDir, { sinks: [], present: presentEventJson });
  const repaired = await startStore({ DATA_DIR: first.dataDir });
  t.teardown(repaired.stop);
  t.same((await getJson(`${repaired.url}/v2/events/${ids[4]}`)).body, target, 'the event as it was created');
});

t.test('a changed byte in a block\'s record is found by the scrub and by check, and --repair serves the event as it was', async (t) => {
  const first = await startStore(SCRUB);
  const ids: string[] = [];
  for (let i = 0; i < 10; i++) ids.push((await postJson(`${first.url}/v2/events`, smallEvent({ device_id: `device-${i}` }))).body.id);
  const target = (await getJson(`${first.url}/v2/events/${ids[4]}`)).body;
  await first.stop();
  // The block that holds it: checkpoints may have come between the creates on a busy machine.
  const blocks = fs.readdirSync(path.join(first.dataDir, 'blocks')).map((name) => path.join(first.dataDir, 'blocks', name));
  const block = blocks.find((file) => fs.readFileSync(file).includes(Buffer.from('device-4')))!;
  const at = block ? fs.readFileSync(block).indexOf(Buffer.from('device-4')) : -1;
  t.ok(at > 0, 'the record is in a block file a checkpoint wrote');
  flipByte(block, at + 2);

  const store = await startStore({ ...SCRUB, DATA_DIR: first.dataDir });
  let scrub: any;
  await until('the scrub to name it', async () => (scrub = (await getJson(`${store.url}/stats`)).body.scrub).recent.some((f: any) => f.copy === 'index_copy'));
  t.match(scrub.recent.find((f: any) => f.copy === 'index_copy'), { repaired: false, event_ids: [ids[4]] });
  t.equal((await getJson(`${store.url}/v2/events/${ids[5]}`)).status, 200, 'the block\'s other events are served');
  const damaged = await getJson(`${store.url}/v2/events/${ids[4]}`);
  t.match(damaged, { status: 500, body: { detail: /a block in blocks\/\) is damaged/ } }, 'the damaged one is refused (index_damaged), never served changed');
  await store.stop();

  const check = await checkStore(first.dataDir, presentEventJson);
  t.match(check.indexAgainstLog, { recordsNotReadingBack: 1 }, 'check reads the block\'s record back against its CRC32C');
  t.equal(check.rebuild, 'records of the index do not read back as their events');
  await rebuildIndex(first.dataDir, { sinks: [], present: presentEventJson });
  const repaired = await startStore({ DATA_DIR: first.dataDir });
  t.teardown(repaired.stop);
  t.same((await getJson(`${repaired.url}/v2/events/${ids[4]}`)).body, target, 'the event as it was created');
});

t.test('a changed byte in a block\'s postings, which the open does not read, is named by the scrub', async (t) => {
  const first = await startStore(SCRUB);
  for (let i = 0; i < 10; i++) await postJson(`${first.url}/v2/events`, smallEvent({ device_id: `device-${i}` }));
  await first.stop();
  const [name] = fs.readdirSync(path.join(first.dataDir, 'blocks'));
  const file = path.join(first.dataDir, 'blocks', name);
  const reader = BlockReader.open(file);
  const postings = reader.toc.sections.postings;
  reader.close();
  t.ok(postings.length > 2, `the block has ${postings.length} bytes of postings`);
  flipByte(file, postings.offset + 1);

  const store = await startStore({ ...SCRUB, DATA_DIR: first.dataDir });
  t.teardown(store.stop);
  let finding: any;
  await until('the scrub to name the block', async () => (finding = (await getJson(`${store.url}/stats`)).body.scrub.recent.find((f: any) => f.file === `blocks/${name}`)) !== undefined);
  t.match(finding, { copy: 'index_copy', repaired: false, offset: postings.offset, detail: /postings section fails its CRC32C/ });
});

t.test('a damaged image, which has one copy, is named, quarantined and no longer served', async (t) => {
  const store = await startStore(SCRUB);
  t.teardown(store.stop);
  const created = (await postJson(`${store.url}/v2/events`, imageEvent())).body;
  t.equal((await postJson(`${store.url}/admin/cleanup`, '')).status, 200);
  const file = segmentOf(store.dataDir);
  const image = (await scan(file)).find((f) => f.kind === 'image')!;
  flipByte(file, image.offset + 500);
  let scrub: any;
  await until('the scrub to find it', async () => (scrub = (await getJson(`${store.url}/stats`)).body.scrub).unrepairable >= 1);
  t.match(scrub.recent[0], { copy: 'file', repaired: false, file_id: created.image_ids[0], event_ids: [created.id] });
  t.equal((await fetch(`${store.url}/images/${created.image_ids[0]}`)).status, 404, 'its download answers 404, never wrong bytes');
  t.equal((await getJson(`${store.url}/v2/events/${created.id}`)).body.current_file_count, 0, 'the event keeps its record');
  t.ok(fs.readdirSync(path.join(store.dataDir, 'quarantine')).some((n) => n.endsWith('.bin')), 'the bytes are kept in quarantine/');
  t.equal(fixture('cat.jpg').length, image.length, 'the image frame was the JPEG\'s');
});

t.test('a store without events is scrubbed in no pass: an empty log counts none', async (t) => {
  const store = await EventStore.open(tempDataDir(), { sinks: [], present: presentEventJson });
  t.teardown(() => store.close());
  const scrub = new LogScrub(store, () => Promise.resolve(0), () => t.fail('no finding in an empty log'));
  const pace = new ScrubPace(scrub, 168, new Int32Array(new SharedArrayBuffer(4)));
  for (let tick = 0; tick < 5; tick++) t.equal(await pace.tick(), undefined, `tick ${tick}: no step`);
  t.same(scrub.status, { ...scrub.status, passes: 0, lastPassAt: null, verifiedBytes: 0 }, 'no pass counted, none said to have run');
});
