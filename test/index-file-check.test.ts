/**
 * A damaged index file is refused before LMDB maps it (docs/STORAGE.md, "A damaged index";
 * src/store/index/index-file-check.ts): a `db/data.mdb` cut short killed the store with SIGBUS (exit 135,
 * nothing in its log), a zeroed meta page went unseen or failed with LMDB's own words, and a
 * missing index, or one that reads as new, let the open remove every segment of the log. Each case is a real store's data
 * folder, damaged on disk; the start-up refusals run the real `edge-events serve`.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { refusedStart } from '../scripts/lib/spawned-store.js';
import { presentEventJson } from '../src/events/present.js';
import { lockDataDir } from '../src/store/engine/data-dir-lock.js';
import { EventStore } from '../src/store/engine/event-store.js';
import { assertIndexOpenable, IndexDamaged, inspectIndexFile } from '../src/store/index/index-file-check.js';
import { openDatabases } from '../src/store/index/lmdb-env.js';
import { imageEvent, smallEvent } from './support/events.js';
import { openLocalStore } from './support/local-store.js';
import { tempDataDir } from './support/store-server.js';
import { asEarlierEngine } from './support/earlier-engine.js';

/** A closed store's data folder with `count` events, every third with an image. */
async function storeWithEvents(count: number): Promise<string> {
  const local = await openLocalStore();
  for (let i = 0; i < count; i++) await local.create(i % 3 === 0 ? imageEvent({ customMetadata: { i } }) : smallEvent({ custom_metadata: { i } }));
  await local.close();
  // The pages these tests damage are LMDB's records, ids and index entries: a store of the engine
  // before blocks, or of events moved to LMDB since (docs/STORAGE.md, "Blocks in the running store").
  await asEarlierEngine(local.dataDir);
  return local.dataDir;
}

/** A copy of a data folder, to damage. */
function copyOf(dataDir: string): string {
  const copy = tempDataDir();
  fs.cpSync(dataDir, copy, { recursive: true });
  return copy;
}

const dataMdb = (dataDir: string) => path.join(dataDir, 'db', 'data.mdb');
const segmentFiles = (dataDir: string) => fs.readdirSync(path.join(dataDir, 'blobs')).filter((name) => name.startsWith('seg-'));

/**
 * A copy of `dataDir` whose index opens but reads as a new one, as a lost page of it left one: all
 * its databases emptied.
 */
async function emptiedIndex(dataDir: string): Promise<string> {
  const dir = copyOf(dataDir);
  const dbs = openDatabases(dir);
  await dbs.root.transaction(() => {
    for (const db of [dbs.events, dbs.eventIds, dbs.index, dbs.files, dbs.segments, dbs.meta]) db.clearSync();
  });
  await dbs.root.close();
  return dir;
}

/**
 * The first child page of database `name`'s root, a branch: the main tree's root (a leaf, with a
 * store's few databases) names the database's root (mdb.c: `MDB_node` of 8 bytes, then the key,
 * then an `MDB_db` whose root is at byte 40; a branch node's page number in its first 6 bytes).
 */
function firstChildOf(file: string, pageSize: number, mainRoot: bigint, name: string): bigint {
  const page = Buffer.alloc(pageSize);
  const fd = fs.openSync(file, 'r');
  try {
    fs.readSync(fd, page, 0, pageSize, Number(mainRoot) * pageSize);
    let root: bigint | undefined;
    for (let i = 0; i < page.readUInt16LE(20) >> 1; i++) {
      const node = 24 + page.readUInt16LE(24 + 2 * i);
      const keyEnd = node + 8 + page.readUInt16LE(node + 6);
      if (page.toString('latin1', node + 8, keyEnd).replace(/\0+$/, '') === name) root = page.readBigUInt64LE(keyEnd + 40);
    }
    if (root === undefined) throw new Error(`no database ${name} in the main tree's root`);
    fs.readSync(fd, page, 0, pageSize, Number(root) * pageSize);
    if ((page.readUInt16LE(18) & 0x01) === 0) throw new Error(`database ${name}'s root is not a branch`);
    const node = 24 + page.readUInt16LE(24);
    return BigInt(page.readUInt16LE(node)) | (BigInt(page.readUInt16LE(node + 2)) << 16n) | (BigInt(page.readUInt16LE(node + 4)) << 32n);
  } finally {
    fs.closeSync(fd);
  }
}

/** Overwrites `length` bytes at `at` of a file with zeros. */
function zero(file: string, at: number, length: number): void {
  const fd = fs.openSync(file, 'r+');
  fs.writeSync(fd, Buffer.alloc(length), 0, length, at);
  fs.closeSync(fd);
}

t.test('damaged index files', async (t) => {
  const whole = await storeWithEvents(300);
  const sound = inspectIndexFile(whole);
  if (sound.state !== 'sound') throw new Error(`expected a sound index, got ${JSON.stringify(sound)}`);
  const needed = Number(sound.opensAt.lastPage + 1n) * sound.pageSize;
  t.ok(sound.fileBytes >= needed && needed > 4 * sound.pageSize, `the index uses ${needed} of its ${sound.fileBytes} bytes`);
  t.doesNotThrow(() => assertIndexOpenable(whole), 'a whole index opens');

  const half = Math.floor(needed / 2 / sound.pageSize) * sound.pageSize;

  t.test('a data.mdb cut short names the damage and the repair command, and leaves the folder unlocked', async (t) => {
    const dir = copyOf(whole);
    fs.truncateSync(dataMdb(dir), half);
    const report = inspectIndexFile(dir);
    t.equal(report.state, 'damaged');
    t.match(report.state === 'damaged' ? report.problem : '', /uses pages 0 to \d+ of 4,096 bytes \([\d,]+ bytes\), and (page|overflow pages) \d+.* of its .* (is|are) past the file's end; the file was cut short/);
    await t.rejects(EventStore.open(dir, { sinks: [], present: presentEventJson }), IndexDamaged);
    t.throws(() => assertIndexOpenable(dir), /the index db\/data\.mdb is damaged: .*cut short.*edge-events check --repair --data-dir/);
    t.doesNotThrow(() => lockDataDir(dir)(), 'the refused open released the lock');
  });

  t.test('a file shorter than its last page, whose missing pages no tree reaches, is sound and opens', async (t) => {
    // LMDB leaves pages a commit freed again unwritten at the end of the file (mdb.c, mm_last_pg:
    // "the file may be shorter if the freeDB lists the final pages"); a random mix of puts and
    // deletes left 25 such files in 20,000 commits. Made here by moving every meta's last page
    // three pages past the end: pages no tree reaches, as LMDB's unwritten free pages are.
    const dir = copyOf(whole);
    const fd = fs.openSync(dataMdb(dir), 'r+');
    for (const meta of [24, sound.pageSize / 2 + 24, sound.pageSize + 24]) {
      const at = Buffer.alloc(8);
      fs.readSync(fd, at, 0, 8, meta + 120);
      if (at.readBigUInt64LE() !== 0n) at.writeBigUInt64LE(at.readBigUInt64LE() + 3n);
      fs.writeSync(fd, at, 0, 8, meta + 120);
    }
    fs.closeSync(fd);
    const report = inspectIndexFile(dir);
    t.equal(report.state, 'sound', JSON.stringify(report.state === 'damaged' ? report.problem : ''));
    const store = await EventStore.open(dir, { sinks: [], present: presentEventJson });
    t.equal(store.counters().events, 300, 'every event is there');
    await store.close();
    fs.truncateSync(dataMdb(dir), half);
    t.equal(inspectIndexFile(dir).state, 'damaged', 'cut further, into pages the trees reach, it is damaged');
  });

  t.test('a zeroed meta page, either of the two', async (t) => {
    for (const page of [0, 1]) {
      const dir = copyOf(whole);
      zero(dataMdb(dir), page * sound.pageSize, sound.pageSize);
      const report = inspectIndexFile(dir);
      t.equal(report.state, 'damaged', `meta page ${page}`);
      t.equal(report.state === 'damaged' ? report.problem : '', `meta page ${page} is all zeros`);
    }
    const dir = copyOf(whole);
    const fd = fs.openSync(dataMdb(dir), 'r+');
    fs.writeSync(fd, Buffer.from([0xde, 0xc0, 0xef, 0xbf]), 0, 4, sound.pageSize + 24); // one bit of page 1's magic
    fs.closeSync(fd);
    t.match(inspectIndexFile(dir), { state: 'damaged', problem: /^meta page 1 is not an LMDB meta page \(magic 0xbfefc0de, expected 0xbeefc0de\)$/ });
  });

  t.test('a zeroed page inside the index: a root refuses the open, a deeper page the walk of edge-events check finds', async (t) => {
    const root = copyOf(whole);
    zero(dataMdb(root), Number(sound.opensAt.mainRoot) * sound.pageSize, sound.pageSize);
    const snapshot = `in the snapshot LMDB opens at (transaction ${sound.opensAt.txnid}, ${sound.opensAt.slot})`;
    t.match(inspectIndexFile(root), { state: 'damaged', problem: `${snapshot}, page ${sound.opensAt.mainRoot} of its main tree says it is page 0` });
    const deeper = copyOf(whole);
    const leaf = firstChildOf(dataMdb(whole), sound.pageSize, sound.opensAt.mainRoot, 'events');
    zero(dataMdb(deeper), Number(leaf) * sound.pageSize, sound.pageSize);
    t.equal(inspectIndexFile(deeper).state, 'sound', 'the open reads the meta pages, the length and the roots only');
    t.match(inspectIndexFile(deeper, { walk: true }), { state: 'damaged', problem: `${snapshot}, page ${leaf} of its database "events" says it is page 0` });
    t.equal(inspectIndexFile(whole, { walk: true }).state, 'sound', 'every page of the whole index checks');
  });

  t.test('a page at the wrong level of its tree, as a lost write that reads back an older page gives: the walk of edge-events check finds it', async (t) => {
    // LMDB meets a branch where a leaf must be with an assertion that kills the process
    // (`IS_LEAF(mp)` in mdb_cursor_next: npm run disk-faults, a lost page of data.mdb); the walk
    // knows each tree's depth (MDB_db.md_depth), so check and --repair see it before LMDB does.
    const dir = copyOf(whole);
    const leaf = firstChildOf(dataMdb(whole), sound.pageSize, sound.opensAt.mainRoot, 'events');
    const fd = fs.openSync(dataMdb(dir), 'r+');
    const flags = Buffer.alloc(2);
    flags.writeUInt16LE(0x01); // P_BRANCH
    fs.writeSync(fd, flags, 0, 2, Number(leaf) * sound.pageSize + 18);
    fs.closeSync(fd);
    t.match(inspectIndexFile(dir, { walk: true }), { state: 'damaged', problem: new RegExp(`page ${leaf} of its database "events" is a branch at level (\\d+) of \\1, where a leaf must be`) });
  });

  t.test('a leaf node with a flag its tree never holds, as one flipped byte gives: the walk finds it', async (t) => {
    // LMDB met F_DUPDATA on a node of a database without sorted duplicates as MDB_BAD_TXN ("Invalid
    // dupdata flag with no mc_xcursor") at the consistency pass's first read (npm run disk-faults,
    // a flipped byte of data.mdb): the pass failed, and the files on that page answered 404.
    const dir = copyOf(whole);
    const leaf = firstChildOf(dataMdb(whole), sound.pageSize, sound.opensAt.mainRoot, 'events');
    const page = Buffer.alloc(sound.pageSize);
    const fd = fs.openSync(dataMdb(dir), 'r+');
    fs.readSync(fd, page, 0, sound.pageSize, Number(leaf) * sound.pageSize);
    const node = 24 + page.readUInt16LE(24);
    page.writeUInt16LE(page.readUInt16LE(node + 4) | 0x04, node + 4); // F_DUPDATA
    fs.writeSync(fd, page, 0, sound.pageSize, Number(leaf) * sound.pageSize);
    fs.closeSync(fd);
    t.match(inspectIndexFile(dir, { walk: true }), { state: 'damaged', problem: new RegExp(`a node of page ${leaf} of its database "events" has flags 0x[0-9a-f]*[4-7], which its tree never holds`) });
  });

  t.test('no index, or an empty one, while the log has segments: refused, and the segments stay', async (t) => {
    const missing = copyOf(whole);
    fs.rmSync(path.join(missing, 'db'), { recursive: true });
    const empty = copyOf(whole);
    fs.truncateSync(dataMdb(empty), 0);
    for (const dir of [missing, empty]) {
      const segments = segmentFiles(dir);
      t.ok(segments.length > 0);
      t.equal(inspectIndexFile(dir).state, 'absent');
      await t.rejects(EventStore.open(dir, { sinks: [], present: presentEventJson }), { name: 'IndexDamaged', message: /is missing or empty while blobs\/ holds 1 segment file of the log/ });
      t.same(segmentFiles(dir), segments, 'no segment was removed');
    }
    const emptied = await emptiedIndex(whole);
    const segments = segmentFiles(emptied);
    await t.rejects(EventStore.open(emptied, { sinks: [], present: presentEventJson }), { name: 'IndexDamaged', message: /reads as a new, empty index \(no log position, no entry for any of the 1 segment file in blobs\/\)/ });
    t.same(segmentFiles(emptied), segments, 'an index that reads as new: refused, and no segment was removed');
    const again = await EventStore.open(whole, { sinks: [], present: presentEventJson });
    t.equal(again.counters().events, 300, 'the refused opens left the whole folder as it was');
    await again.close();
    const fresh = tempDataDir();
    const store = await EventStore.open(fresh, { sinks: [], present: presentEventJson });
    await store.close();
    t.equal(inspectIndexFile(fresh).state, 'sound', 'a new folder opens, and its new index is sound');
  });

  t.test('the real store refuses to start on each: exit 1 naming the command, no SIGBUS', async (t) => {
    const cut = copyOf(whole);
    fs.truncateSync(dataMdb(cut), half);
    const zeroed = copyOf(whole);
    zero(dataMdb(zeroed), sound.pageSize, sound.pageSize);
    const missing = copyOf(whole);
    fs.rmSync(path.join(missing, 'db'), { recursive: true });
    const emptied = await emptiedIndex(whole);
    for (const [dir, what] of [[cut, /cut short/], [zeroed, /meta page 1 is all zeros/], [missing, /missing or empty/], [emptied, /reads as a new, empty index/]] as const) {
      const { code, stderr } = await refusedStart({ DATA_DIR: dir });
      t.equal(code, 1, `exit 1, not a signal (${stderr.trim().slice(0, 200)})`);
      t.match(stderr, /^edge-events: cannot start: DATA_DIR .*: the index db\/data\.mdb /);
      t.match(stderr, what);
      t.match(stderr, `run \`edge-events check --repair --data-dir ${dir}\``);
    }
  });
});
