/**
 * `edge-events check [--repair] [--json]` (docs/OPERATIONS.md, "Checking and repairing a data
 * folder"; src/store/engine/store-check.ts), run as the real binary on real stores' data folders: a
 * data.mdb cut short is named and rebuilt from the log with every acknowledged event back, once
 * the sinks are known (the environment's, or none with --without-sinks); a missing index likewise,
 * with the environment's sinks shipping every event again; damage in the log is named by segment, bytes and event, and left to
 * the log (a rebuild would lose what the index still holds); a location of the index that names
 * no frame is mended by a rebuild; events a cleanup deleted are not damage; a running store's
 * folder is refused.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { flipByte } from '../support/flip-byte.js';
import { openDatabases } from '../../src/store/index/lmdb-env.js';
import type { CheckReport } from '../../src/store/engine/check-report.js';
import { refusedStart } from '../../scripts/lib/spawned-store.js';
import { runCli } from '../support/cli-process.js';
import { fixture, getJson, imageEvent, smallEvent } from '../support/events.js';
import { openLocalStore } from '../support/local-store.js';
import { scan } from '../support/segment-scan.js';
import { startStore, tempDataDir } from '../support/store-server.js';

const EVENTS = 90;

// About fifteen runs of the real binary and four starts of the real server, each a process's
// start-up: on a busy 2-core box that is more than tap's default two minutes.
t.setTimeout(300_000);

/** A closed store's data folder with EVENTS events, every third with an image; their ids, oldest first. */
async function storeWithEvents(): Promise<{ dataDir: string; ids: string[]; imageIds: string[] }> {
  const local = await openLocalStore();
  const ids: string[] = [];
  const imageIds: string[] = [];
  for (let i = 0; i < EVENTS; i++) {
    const created = await local.create(i % 3 === 0 ? imageEvent({ customMetadata: { i } }) : smallEvent({ custom_metadata: { i } }));
    ids.push(created.id);
    imageIds.push(...created.image_ids);
  }
  await local.close();
  return { dataDir: local.dataDir, ids, imageIds };
}

function copyOf(dataDir: string): string {
  const copy = tempDataDir();
  fs.cpSync(dataDir, copy, { recursive: true });
  return copy;
}

const check = (dataDir: string, ...flags: string[]) => runCli(['check', '--data-dir', dataDir, ...flags]);

/** `check --json`'s report of `dataDir`. */
async function jsonCheck(dataDir: string, ...flags: string[]): Promise<{ code: number | null; check: CheckReport; repair: unknown; recheck: CheckReport | null }> {
  const { code, stdout, stderr } = await check(dataDir, '--json', ...flags);
  if (stdout === '') throw new Error(`no report: ${stderr}`);
  return { code, ...JSON.parse(stdout) };
}

/** Every event id the store in `dataDir` lists, served by the real server, and one image's bytes. */
async function listedByServer(dataDir: string, imageId: string): Promise<{ ids: string[]; image: Buffer }> {
  const store = await startStore({ DATA_DIR: dataDir });
  try {
    const { status, body } = await getJson(`${store.url}/v2/events?limit=1000`);
    if (status !== 200) throw new Error(`list answered ${status}`);
    const image = Buffer.from(await (await fetch(`${store.url}/images/${imageId}`)).arrayBuffer());
    return { ids: (body.events as { id: string }[]).map((e) => e.id), image };
  } finally {
    await store.stop();
  }
}

t.test('check and repair', async (t) => {
  const { dataDir: whole, ids, imageIds } = await storeWithEvents();
  const segment = path.join(whole, 'blobs', fs.readdirSync(path.join(whole, 'blobs')).find((name) => name.startsWith('seg-'))!);
  const catJpeg = fixture('cat.jpg');

  t.test('a whole store is clean', async (t) => {
    const { code, stdout } = await check(whole);
    t.equal(code, 0, stdout);
    t.match(stdout, /Index db\/data\.mdb: sound/);
    t.match(stdout, new RegExp(`Log blobs/: 1 segment, [\\d,]+ bytes: ${EVENTS + imageIds.length} frames \\(${EVENTS} records, 0 record copies, 0 changes, 0 tombstones, ${imageIds.length} images and files\\); every frame whole, every CRC32C matching\\.`));
    t.match(stdout, /Every file location leads to its whole frame\./);
    t.match(stdout, /No damage found\./);
    const { code: again, stdout: repaired } = await check(whole, '--repair');
    t.equal(again, 0);
    t.match(repaired, /Repair: nothing to repair\./);
    t.notOk(fs.readdirSync(whole).some((name) => name.startsWith('db.damaged-')), 'a sound index is never moved aside');
  });

  t.test('a data.mdb cut short: named, then rebuilt from the log with every event back', async (t) => {
    const dir = copyOf(whole);
    const dataMdb = path.join(dir, 'db', 'data.mdb');
    const cutAt = Math.floor(fs.statSync(dataMdb).size / 2 / 4096) * 4096;
    fs.truncateSync(dataMdb, cutAt);
    const plain = await check(dir);
    t.equal(plain.code, 1, 'damage: exit 1');
    t.match(plain.stdout, /Index db\/data\.mdb: DAMAGED: the file is [\d,]+ bytes, but the snapshot LMDB opens at .* the file was cut short\./);
    t.match(plain.stdout, /Index against the log: not checked/);
    t.match(plain.stdout, `the index file is damaged: \`edge-events check --repair --data-dir ${dir}\` rebuilds the index from the log`);
    const json = await jsonCheck(dir);
    t.equal(json.code, 1);
    t.match(json.check, { index: { state: 'damaged' }, log: { records: EVENTS, damageCount: 0 }, damage: true, rebuild: 'the index file is damaged' });
    t.equal(json.repair, null);

    const refused = await check(dir, '--repair');
    t.equal(refused.code, 1, 'no sink configured here, and no --without-sinks: refused');
    t.equal(refused.stdout, '');
    t.match(refused.stderr, /^error: --repair rebuilds the shipping ledger for the sinks configured, and this environment configures none \(no CLOUD_UPLOAD_URL, no NATS_URL\); nothing was changed\nhint: Run it with the environment the store runs with .*or add --without-sinks if the store ships to no sink\.\n$/);
    t.notOk(fs.readdirSync(dir).some((name) => name.startsWith('db.damaged-')), 'nothing moved aside');

    const repair = await check(dir, '--repair', '--without-sinks');
    t.equal(repair.code, 0, repair.stdout + repair.stderr);
    t.match(repair.stdout, /Repair: the index file is damaged: rebuilt the index from the log\./);
    t.match(repair.stdout, /Shipping ledger: none rebuilt \(--without-sinks\)\./);
    t.match(repair.stdout, new RegExp(`the index holds ${EVENTS} events \\(the log holds ${EVENTS} records\\)`));
    t.match(repair.stdout, /Checked again after the repair:\nIndex db\/data\.mdb: sound/);
    const aside = fs.readdirSync(dir).filter((name) => name.startsWith('db.damaged-'));
    t.equal(aside.length, 1, 'the damaged index is kept aside');
    t.equal(fs.statSync(path.join(dir, aside[0], 'data.mdb')).size, cutAt, 'as it was');
    t.notOk(fs.readdirSync(dir).some((name) => name.startsWith('blobs.before-rebuild-')), 'no segment file was removed, so none is kept');

    const listed = await listedByServer(dir, imageIds[0]);
    t.same([...listed.ids].sort(), [...ids].sort(), `all ${EVENTS} events are listed`);
    t.same(listed.image, catJpeg, 'and their images served');
  });

  t.test('a missing index: the store refused it; the repair rebuilds it', async (t) => {
    const dir = copyOf(whole);
    fs.rmSync(path.join(dir, 'db'), { recursive: true });
    const plain = await check(dir);
    t.equal(plain.code, 1);
    t.match(plain.stdout, /Index db\/data\.mdb: missing or empty, while the log has segments/);
    // A segment file no frame of the log names (as an upload whose attach frame was in a segment
    // already reclaimed): the open removes it, and the repair keeps it.
    fs.writeFileSync(path.join(dir, 'blobs', 'seg-00000009.blob'), Buffer.alloc(1000));
    const repair = await jsonCheck(dir, '--repair', '--without-sinks');
    t.equal(repair.code, 0);
    t.match(repair, {
      check: { rebuild: 'the index is missing while the log has segments' },
      repair: { movedTo: null, events: EVENTS, segmentFilesRemoved: ['seg-00000009.blob'], keptIn: /\/blobs\.before-rebuild-/ },
      recheck: { damage: false },
    });
    const { keptIn } = repair.repair as { keptIn: string };
    t.same(fs.readdirSync(keptIn), ['seg-00000009.blob'], 'only the removed file is kept: the links of the others are gone');
    t.equal(fs.statSync(path.join(keptIn, 'seg-00000009.blob')).size, 1000);
    t.notOk(fs.existsSync(path.join(dir, 'blobs', 'seg-00000009.blob')));
    t.same([...(await listedByServer(dir, imageIds[0])).ids].sort(), [...ids].sort());
  });

  t.test("with the store's sinks in the environment, the repair rebuilds their ledger: every finalized event is shipped again", async (t) => {
    const dir = copyOf(whole);
    fs.rmSync(path.join(dir, 'db'), { recursive: true });
    // The cloud sink of the store's env file, at a port nobody listens on: what it must ship stays pending.
    const env = { CLOUD_UPLOAD_URL: 'http://127.0.0.1:9/', DEFAULT_SOLUTION_ID: 'check-test' };
    const { code, stdout, stderr } = await runCli(['check', '--data-dir', dir, '--repair'], { env });
    t.equal(code, 0, stdout + stderr);
    t.match(stdout, /Shipping ledger rebuilt for cloud \(the sinks this environment configures\): each ships every finalized event again\./);
    const store = await startStore({ DATA_DIR: dir, ...env });
    t.teardown(() => store.stop());
    t.equal((await getJson(`${store.url}/stats`)).body.capacity.uploads_pending, EVENTS, 'every event waits for the cloud');
  });

  t.test('an index that reads as new: named, and rebuilt', async (t) => {
    const dir = copyOf(whole);
    const dbs = openDatabases(dir);
    await dbs.root.transaction(() => {
      for (const db of [dbs.events, dbs.eventIds, dbs.index, dbs.files, dbs.segments, dbs.meta, dbs.blocks, dbs.blockHidden]) db.clearSync();
    });
    await dbs.root.close();
    const plain = await check(dir);
    t.equal(plain.code, 1);
    t.match(plain.stdout, /DAMAGED: the index reads as a new one \(no log position, no entry for any segment on disk\) while the log has segments/);
    const repair = await jsonCheck(dir, '--repair', '--without-sinks');
    t.equal(repair.code, 0);
    t.match(repair, { check: { rebuild: 'the index reads as a new one while the log has segments' }, repair: { events: EVENTS }, recheck: { damage: false, indexAgainstLog: { events: EVENTS, recordsIndexed: EVENTS } } });
  });

  t.test("a meta database holding another database's keys: the store refuses it, check names it, and the repair rebuilds it", async (t) => {
    // As a lost page of data.mdb that reads back older content gives: the meta database's page is
    // another database's, its keys are not meta's strings and its log position reads as none.
    // The store once took that for a store written before log positions and replayed nothing.
    const dir = copyOf(whole);
    const dbs = openDatabases(dir);
    await dbs.root.transaction(() => {
      dbs.meta.clearSync();
      dbs.meta.putSync(1.2882297539194267e-231 as unknown as string, 'not meta\'s');
    });
    await dbs.root.close();
    const refused = await refusedStart({ DATA_DIR: dir, PORT: '0' });
    t.equal(refused.code, 1);
    t.match(refused.stderr, /meta database holding another database's keys .*`edge-events check --repair/s);
    const plain = await check(dir);
    t.equal(plain.code, 1);
    t.match(plain.stdout, /DAMAGED: the index's meta database holds another database's keys/);
    const repair = await jsonCheck(dir, '--repair', '--without-sinks');
    t.equal(repair.code, 0);
    t.match(repair, { check: { rebuild: "the index's meta database holds another database's keys" }, repair: { events: EVENTS }, recheck: { damage: false } });
    t.same([...(await listedByServer(dir, imageIds[0])).ids].sort(), [...ids].sort());
  });

  t.test('damage in the log is named; a record frame is mended from the index, an image is left to the log', async (t) => {
    const dir = copyOf(whole);
    const frames = await scan(segment);
    const record = frames.filter((f) => f.kind === 'record')[EVENTS / 2];
    const image = frames.filter((f) => f.kind === 'image')[5];
    const file = path.join(dir, 'blobs', path.basename(segment));
    flipByte(file, record.offset + 7);
    flipByte(file, image.offset + 1000);
    const { code, stdout } = await check(dir);
    t.equal(code, 1, stdout);
    t.match(stdout, `DAMAGED: segment 2, bytes ${(record.offset - 36).toLocaleString('en-US')} to ${(record.offset + record.length).toLocaleString('en-US')}: a record frame (${record.id}) whose data fails its CRC32C.`);
    t.match(stdout, `an image frame (${image.id}) whose data fails its CRC32C.`);
    t.match(stdout, new RegExp(`file ${image.id} \\(segment 2, byte [\\d,]+\\): the frame's data fails its CRC32C \\(damage in the log\\)`));
    t.match(stdout, /1 event of the index has its record frame among the damage above/);
    t.match(stdout, `DAMAGED: 1 event of the index has no whole record frame in the log: the index is the only copy, and \`--repair\` writes it back into the log:\n    event ${record.id}`);
    const repair = await check(dir, '--repair', '--without-sinks');
    t.equal(repair.code, 1, 'the image has one copy: its damage stays');
    t.match(repair.stdout, /Repair: wrote the record copies of 1 event the index alone held back into the log/);
    const recheck = repair.stdout.slice(repair.stdout.indexOf('Checked again after the repair:'));
    t.match(recheck, /Copies: 90 events in both the index and the log; 0 events in the index alone/, 'the record has two copies again');
    t.match(recheck, `an image frame (${image.id}) whose data fails its CRC32C.`);
    t.notOk(fs.readdirSync(dir).some((name) => name.startsWith('db.damaged-')), 'the index is left as it is');
  });

  t.test('a file location naming no frame is damage in the index, which a rebuild mends', async (t) => {
    const dir = copyOf(whole);
    const dbs = openDatabases(dir);
    const entry = dbs.files.get(imageIds[3])!;
    await dbs.files.put(imageIds[3], { ...entry, offset: entry.offset + 8 });
    await dbs.root.close();
    const json = await jsonCheck(dir);
    t.equal(json.code, 1);
    t.match(json.check.indexAgainstLog, { badLocationCount: 1, badLocations: [{ fileId: imageIds[3], side: 'index', why: 'no frame starts there' }], indexOnly: 0 });
    t.equal(json.check.rebuild, 'file locations in the index name no frame of the log');
    const repair = await check(dir, '--repair', '--without-sinks');
    t.equal(repair.code, 0, repair.stdout);
    const listed = await listedByServer(dir, imageIds[3]);
    t.same(listed.image, catJpeg, 'the image is served from its frame again');
    t.equal(listed.ids.length, EVENTS);
  });

  t.test('events a cleanup deleted are not damage', async (t) => {
    const local = await openLocalStore({ DATA_DIR: copyOf(whole) });
    const oldest = ids.slice(0, 7).map((id) => local.createdAt(id));
    await local.lifecycle.deleteRecords(oldest, 'retention', local.hooks.logTombstones);
    await local.close();
    const json = await jsonCheck(local.dataDir);
    t.equal(json.code, 0);
    t.match(json.check.indexAgainstLog, { events: EVENTS - 7, recordsIndexed: EVENTS - 7, deletedByCleanup: 7, unindexedCount: 0, indexOnly: 0 });
  });

  t.test('a folder a running store holds is refused', async (t) => {
    const store = await startStore({ DATA_DIR: copyOf(whole) });
    t.teardown(() => store.stop());
    const { code, stdout, stderr } = await check(store.dataDir);
    t.equal(code, 1);
    t.equal(stdout, '');
    t.match(stderr, new RegExp(`error: DATA_DIR ${store.dataDir} is in use by another store \\(pid ${process.pid}, [^)]*\\); one store per data directory: stop it first`));
    const json = await check(store.dataDir, '--json', '--repair');
    t.equal(json.code, 1);
    t.match(JSON.parse(json.stderr), { error: { message: /is in use by another store/ } });
    t.ok(fs.existsSync(path.join(store.dataDir, 'db', 'data.mdb')), 'nothing was moved');
  });
});
