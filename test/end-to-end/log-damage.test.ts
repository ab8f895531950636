/**
 * Damage in the log (docs/STORAGE.md, "Damage in the log"): a byte flipped in the middle of a
 * segment, as an SD card or eMMC returns it, costs the creates whose frames it hit and nothing
 * more. The replay after a kill -9 goes past the damage, keeps every intact acknowledged event
 * after it, copies the damaged bytes into quarantine/ and reports them in the log, /stats and
 * /metrics; a torn tail is still cut without a word.
 */
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import { openDatabases } from '../../src/store/index/lmdb-env.js';
import { FRAME_HEADER_BYTES, type ScannedFrame } from '../../src/store/log/segment-frames.js';
import { segmentFileName, segmentNumberOf } from '../../src/store/log/segment-files.js';
import { fixture, getJson, imageEvent, postJson, smallEvent } from '../support/events.js';
import { scan } from '../support/segment-scan.js';
import { spawnStore, type SpawnedStore } from '../../scripts/lib/spawned-store.js';
import { tempDataDir } from '../support/store-server.js';
import { until } from '../support/waiting.js';
import { launchBrowser } from '../support/browser.js';
import { flipByte } from '../support/flip-byte.js';

/** No checkpoint and no cleanup within a test: every create stays in the log alone until the kill. */
const NO_CHECKPOINT = { PORT: '0', INDEX_CHECKPOINT_MS: '60000', INDEX_CHECKPOINT_MAX_MS: '300000', CLEANUP_INTERVAL_SECONDS: '3600' };

async function kill(store: SpawnedStore): Promise<void> {
  const exited = once(store.child, 'exit');
  store.child.kill('SIGKILL');
  await exited;
}

/** The log's segment files in `dataDir`, by number. */
function segmentFiles(dataDir: string): string[] {
  const blobs = path.join(dataDir, 'blobs');
  return fs.readdirSync(blobs).filter((name) => segmentNumberOf(name) !== undefined).sort().map((name) => path.join(blobs, name));
}

/** The log lines of a spawned store with `msg` in them, parsed. */
function logLines(store: SpawnedStore, msg: string): Record<string, unknown>[] {
  return store.output().split('\n').filter((line) => line.includes(msg)).map((line) => JSON.parse(line) as Record<string, unknown>);
}

/**
 * Creates `count` events, sequentially; every `imageEvery`-th one with an image. Resolves with their ids, in log order.
 * Waits first for the start-up cleanup, whose checkpoint would commit creates made meanwhile.
 */
async function createEvents(store: SpawnedStore, count: number, imageEvery = 0): Promise<string[]> {
  await until('the start-up cleanup is done', async () => (await getJson(`${store.url}/stats`)).body.last_cleanup !== null);
  const ids: string[] = [];
  for (let n = 0; n < count; n++) {
    const body = imageEvery > 0 && n % imageEvery === 0 ? imageEvent({ customMetadata: { n } }) : smallEvent({ custom_metadata: { n } });
    const res = await postJson(`${store.url}/v2/events`, body);
    if (res.status !== 201) throw new Error(`create ${n} answered ${res.status}`);
    ids.push(res.body.id);
  }
  return ids;
}

/** The ids of `ids` a store no longer answers for. */
async function missing(store: SpawnedStore, ids: string[]): Promise<string[]> {
  const gone: string[] = [];
  for (const id of ids) if ((await getJson(`${store.url}/v2/events/${id}`)).status !== 200) gone.push(id);
  return gone;
}

/**
 * A store killed with SIGKILL after `count` acknowledged creates (`createEvents`), none of them
 * checkpointed: its data directory, the environment to start it again with, and the ids.
 * `restart` starts it again and stops it when the test ends.
 */
async function crashedStore(t: Test, count: number, imageEvery = 0) {
  const dataDir = tempDataDir();
  const env = { ...NO_CHECKPOINT, DATA_DIR: dataDir };
  const store = await spawnStore(env);
  t.teardown(() => void store.child.kill('SIGKILL'));
  const ids = await createEvents(store, count, imageEvery);
  await kill(store);
  const restart = async () => {
    const again = await spawnStore(env);
    t.teardown(() => void again.child.kill('SIGKILL'));
    return again;
  };
  return { dataDir, ids, restart };
}

t.test('a byte flipped mid-segment loses only the create it hit: the replay keeps every create after it and quarantines the bytes', async (t) => {
  const { dataDir, ids, restart } = await crashedStore(t, 120);

  const [segment] = segmentFiles(dataDir);
  const records = (await scan(segment)).filter((frame) => frame.kind === 'record');
  t.equal(records.length, 120, 'every create is in the log');
  const hit = records[40]; // one byte of its data: its header still names it
  flipByte(segment, hit.offset + Math.floor(hit.length / 2));
  const headerHit = records[80]; // its magic: the replay has to find the next frame by itself
  flipByte(segment, headerHit.offset - FRAME_HEADER_BYTES);
  const sizeBefore = fs.statSync(segment).size;

  let store = await restart();
  const lost = await missing(store, ids);
  t.same(lost.sort(), [ids[40], ids[80]].sort(), 'only the two creates whose frames were hit are lost');
  t.ok(fs.statSync(segment).size >= records[119].offset + records[119].length, 'the segment keeps its frames after the damage');
  t.ok(fs.statSync(segment).size <= sizeBefore);

  const damage = logLines(store, 'damaged bytes');
  t.equal(damage.length, 2, 'each damaged range is logged at error');
  t.ok(damage.every((line) => line.level === 50), 'at error level');
  t.same(damage[0].lostEvents, [ids[40]], 'the first names the create its frame held');
  t.equal(damage[0].offset, hit.offset - FRAME_HEADER_BYTES, 'from the damaged frame\'s header');
  t.equal(damage[0].end, hit.offset + hit.length, 'to its end');

  const stats = (await getJson(`${store.url}/stats`)).body.log_damage;
  t.equal(stats.quarantined_ranges, 2);
  t.equal(stats.events_lost, 1, 'the create whose header was hit is lost unnamed; the other by its id');
  t.ok(stats.recent.some((entry: { lost_events: string[] }) => entry.lost_events.includes(ids[40])));
  const quarantined = path.join(dataDir, stats.recent[0].file);
  t.equal(fs.statSync(quarantined).size, stats.recent[0].end - stats.recent[0].offset, 'the damaged bytes are copied whole into quarantine/');
  const metrics = await (await fetch(`${store.url}/metrics`)).text();
  t.match(metrics, /^edge_events_log_damage_quarantined_ranges 2$/m, '/metrics counts the ranges');

  const browser = await launchBrowser();
  t.teardown(() => browser.close());
  const page = await browser.newPage();
  await page.goto(`${store.url}/`);
  const card = page.locator('#log-damage');
  await until('the operator page shows the damage', () => card.isVisible());
  t.equal(await card.locator('.figure').innerText(), '1 events lost', 'the operator page leads with the creates lost');
  t.match(await card.locator('.note').innerText(), /^2 damaged ranges \(.+\) moved to quarantine\/; newest in segment /);

  // The report outlives the replay that found it.
  await kill(store);
  store = await restart();
  t.equal((await getJson(`${store.url}/stats`)).body.log_damage.quarantined_ranges, 2, 'quarantine/ is read again at the next start');
  t.same(await missing(store, ids.filter((id) => id !== ids[40] && id !== ids[80])), [], 'and every other create is still there');
});

t.test('an image that fails its CRC mid-segment loses its create alone, reported by id', async (t) => {
  const { dataDir, ids, restart } = await crashedStore(t, 12, 3);

  const [segment] = segmentFiles(dataDir);
  const frames = await scan(segment);
  const images = frames.filter((frame: ScannedFrame) => frame.kind === 'image');
  t.equal(images.length, 4);
  flipByte(segment, images[1].offset + 1000); // the create n = 3's image
  const store = await restart();
  t.same(await missing(store, ids), [ids[3]], 'only the create whose image was hit is lost');
  const imageId = (await scan(segment)).find((frame) => frame.kind === 'image' && frame.offset > images[1].offset)!.id;
  const bytes = Buffer.from(await (await fetch(`${store.url}/images/${imageId}`)).arrayBuffer());
  t.ok(bytes.equals(fixture('cat.jpg')), 'an image after the damage is served byte-exact');
  const report = (await getJson(`${store.url}/stats`)).body.log_damage;
  t.same(report.recent[0].lost_events, [ids[3]]);
});

t.test('a torn tail is cut without a word, as before', async (t) => {
  const { dataDir, ids, restart } = await crashedStore(t, 20);

  const [segment] = segmentFiles(dataDir);
  const last = (await scan(segment)).at(-1)!;
  flipByte(segment, last.offset + 3); // the last append, torn by the kill
  const store = await restart();
  t.same(await missing(store, ids), [ids[19]], 'the torn create is gone');
  t.same(logLines(store, 'damaged bytes'), [], 'no damage reported');
  t.equal((await getJson(`${store.url}/stats`)).body.log_damage.quarantined_ranges, 0);
  t.equal(fs.statSync(segment).size, last.offset - FRAME_HEADER_BYTES, 'cut at the torn frame');
  t.equal((await postJson(`${store.url}/v2/events`, smallEvent())).status, 201, 'and the log goes on after it');
});

t.test('bytes the index counted on, gone from a segment cut short or missing, are reported with the files they held', async (t) => {
  const dataDir = tempDataDir();
  const env = { PORT: '0', DATA_DIR: dataDir, CLEANUP_INTERVAL_SECONDS: '3600' };
  const stop = async (store: SpawnedStore) => {
    const exited = once(store.child, 'exit');
    store.child.kill('SIGTERM'); // a clean stop: every create checkpointed into the index
    await exited;
  };
  const first = await spawnStore(env);
  t.teardown(() => void first.child.kill('SIGKILL'));
  const ids = await createEvents(first, 10, 2);
  await stop(first);

  const [segment] = segmentFiles(dataDir);
  const written = fs.statSync(segment).size;
  const cut = Math.floor(written / 2);
  const images = (await scan(segment)).filter((frame) => frame.kind === 'image');
  t.equal(images.length, 5);
  const pastCut = images.filter((frame) => frame.offset + frame.length > cut).map((frame) => frame.id).sort();
  t.ok(pastCut.length > 0 && pastCut.length < 5, `${pastCut.length} of the 5 images lie past byte ${cut}`);
  fs.truncateSync(segment, cut);

  let store = await spawnStore(env);
  t.teardown(() => void store.child.kill('SIGKILL'));
  const report = (await getJson(`${store.url}/stats`)).body.log_damage;
  t.equal(report.quarantined_ranges, 1);
  t.match(report.recent[0], { segment: segmentNumberOf(path.basename(segment)), offset: cut, end: written, missing: true, lost_events: [] });
  t.same([...report.recent[0].lost_files].sort(), pastCut, 'the files the index placed past the cut are named');
  t.equal(logLines(store, 'bytes of the log the index says were written are gone').length, 1, 'logged at error');
  t.same(await missing(store, ids), [], 'every event is still there, without the files named');
  const kept = images.find((frame) => !pastCut.includes(frame.id))!;
  const download = await fetch(`${store.url}/images/${kept.id}`);
  t.same(Buffer.from(await download.arrayBuffer()), fixture('cat.jpg'), 'a file before the cut is served as it was');
  const after = await postJson(`${store.url}/v2/events`, smallEvent());
  t.equal(after.status, 201, 'the log goes on');
  await kill(store);

  store = await spawnStore(env);
  t.same(await missing(store, [after.body.id]), [], 'and what it appended after the gone bytes is replayed after a kill -9');
  await stop(store);

  const grown = fs.statSync(segment).size;
  fs.rmSync(segment);
  store = await spawnStore(env);
  const gone = (await getJson(`${store.url}/stats`)).body.log_damage.recent.find((entry: { offset: number }) => entry.offset === 0);
  t.match(gone, { missing: true, end: grown }, 'a missing segment file: every byte the index counted on');
  // Those past the cut left the index at the start after it (the start-up cleanup drops files that do not read back).
  t.same([...gone.lost_files].sort(), images.map((frame) => frame.id).filter((id) => !pastCut.includes(id)).sort(), 'every file the index still placed in it named');
});

t.test('a segment the log moved on from, cut off inside a frame of its replayed part, reports that frame\'s create lost', async (t) => {
  const { dataDir, ids, restart } = await crashedStore(t, 20, 4);
  const [segment] = segmentFiles(dataDir);
  const number = segmentNumberOf(path.basename(segment))!;
  // The log moves on to a new segment, as a roll does: an empty file and its entry in the index.
  fs.writeFileSync(path.join(path.dirname(segment), segmentFileName(number + 1)), '');
  const dbs = openDatabases(dataDir);
  await dbs.root.transaction(() => dbs.segments.putSync(number + 1, { committed: 0, liveBytes: 0, liveBlobs: 0 }));
  await dbs.root.close();
  const records = (await scan(segment)).filter((frame) => frame.kind === 'record');
  const hit = records.find((frame) => frame.id === ids[14])!;
  fs.truncateSync(segment, hit.offset + 10); // its header and 10 bytes of its data are left

  const store = await restart();
  const report = (await getJson(`${store.url}/stats`)).body.log_damage;
  t.equal(report.quarantined_ranges, 1);
  t.match(report.recent[0], { segment: number, offset: hit.offset - FRAME_HEADER_BYTES, end: hit.offset + hit.length, lost_events: [ids[14]], missing: false });
  t.equal(logLines(store, 'damaged bytes').length, 1, 'logged at error');
  t.same(await missing(store, ids.slice(0, 14)), [], 'the creates before the cut are replayed');
});
