#!/usr/bin/env node
/**
 * What a small create costs the CPU at least, hot and without I/O (issue 59's CPU target against
 * the durable floor): the steps the store must run per create, each timed in a loop over the
 * bench's 2,000 bodies, beside the floor's one step (parsing the body).
 *
 * 1. the body parsed (`parseJsonText`): all the floor does besides its HTTP and its write;
 * 2. then checked and prepared (`prepareCreate`: the schema's validators, ids, images);
 * 3. then the record built and encoded: the stored value and the log's record frame;
 * 4. then the record's index keys (`indexKeysOf`);
 * 5. a checkpoint's puts of 2,000 such creates (`indexLogged`) into a real LMDB under /dev/shm (so
 *    no device wait is counted): the HTTP thread's CPU per create (`process.threadCpuUsage`,
 *    Node 23.9 and later) and the process's, which adds lmdb-js's writer thread; and the bytes
 *    per create `data.mdb` holds after them;
 * 6. the same 2,000 creates written as one block file instead (docs/STORAGE.md, "Blocks":
 *    `encodeBlock` and `writeBlockFile`, under /dev/shm), CPU and the block's bytes per create
 *    (a build without blocks skips it).
 *
 *   npm run build && node native-bench/create-work.js
 *
 * STORE_DIST=<dir> measures another build (its `dist/src`). Prints µs per create, fastest and
 * slowest of five rounds of 20,000 (steps 1 to 4) and of eight checkpoints (step 5), and the load.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadAverage, loadModule } from './lib/in-process-store.js';

const { loadConfig } = await loadModule('config.js');
const { parseJsonText } = await loadModule('json-text.js');
const { prepareCreate } = await loadModule('events/create-event.js');
const { presentEventJson } = await loadModule('events/present.js');
const { prepareCreateRecord, stampedValue } = await loadModule('store/engine/prepared-create.js');
const { frameRecordBytes } = await loadModule('store/index/record-codec.js');
const { encodeRecordFrame } = await loadModule('store/log/record-frame.js');
const { indexKeysOf } = await loadModule('store/index/index-keys.js');
const { openDatabases } = await loadModule('store/index/lmdb-env.js');
const { indexLogged } = await loadModule('store/engine/checkpoint-writer.js');
const { smallEventBodies } = await loadModule('bench/payloads.js');

const limits = loadConfig({});
const bodies = smallEventBodies(2000).map((text) => Buffer.from(text));
const ROUND = 20_000;
let createdAt = 1.7e15;

/** A create as the head hands it to a checkpoint (head.ts `LoggedCreate`), from body `i`. */
async function loggedCreate(i) {
  const { event } = await prepareCreate(parseJsonText(bodies[i % bodies.length]), limits);
  const prepared = prepareCreateRecord(event, presentEventJson);
  prepared.record.created_at = ++createdAt;
  const value = stampedValue(prepared, createdAt, presentEventJson);
  encodeRecordFrame({ record: frameRecordBytes(value), files: [] });
  return { record: prepared.record, value, files: [] };
}

const steps = [
  ['1. parse (the floor\'s step)', (i) => parseJsonText(bodies[i % bodies.length])],
  ['2. + check and prepare', (i) => prepareCreate(parseJsonText(bodies[i % bodies.length]), limits)],
  ['3. + record and its encodings', (i) => loggedCreate(i)],
  ['4. + index keys', async (i) => indexKeysOf((await loggedCreate(i)).record)],
];

/** µs per call of `step`: the fastest and slowest of five rounds, after a round of warm-up. */
async function perCall(step) {
  const rounds = [];
  for (let round = 0; round < 6; round++) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < ROUND; i++) await step(i);
    if (round > 0) rounds.push(Number(process.hrtime.bigint() - started) / ROUND / 1000);
  }
  return [Math.min(...rounds), Math.max(...rounds)];
}

console.log(`node ${process.version}, load ${loadAverage()}`);
for (const [name, step] of steps) {
  const [fastest, slowest] = await perCall(step);
  console.log(`${name.padEnd(32)} ${fastest.toFixed(1)} to ${slowest.toFixed(1)} µs per create`);
}

const lmdbParent = fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir();
const dir = fs.mkdtempSync(path.join(lmdbParent, 'create-work-'));
const dbs = openDatabases(dir);
const thread = [];
const all = [];
try {
  for (let n = 0; n < 12; n++) {
    const creates = [];
    for (let i = 0; i < 2000; i++) creates.push(await loggedCreate(i));
    const threadBefore = process.threadCpuUsage?.();
    const before = process.cpuUsage();
    const ends = [{ segment: 1, offset: n + 1 }];
    const options = { shipping: false, present: presentEventJson };
    // Builds since record copies take each update's segment before the options.
    await (indexLogged.length >= 5 ? indexLogged(dbs, { creates, updates: [] }, ends, [], options) : indexLogged(dbs, { creates, updates: [] }, ends, options));
    if (n < 4) continue; // warm-up
    const used = process.cpuUsage(before);
    all.push((used.user + used.system) / creates.length);
    if (threadBefore) {
      const own = process.threadCpuUsage(threadBefore);
      thread.push((own.user + own.system) / creates.length);
    }
  }
} finally {
  await dbs.root.close();
}
const mdbBytes = fs.statSync(path.join(dir, 'db', 'data.mdb')).size;
fs.rmSync(dir, { recursive: true, force: true });
const range = (values) => `${Math.min(...values).toFixed(1)} to ${Math.max(...values).toFixed(1)} µs per create`;
console.log(`5. a checkpoint of 2,000 (LMDB under ${lmdbParent}): ${thread.length ? `HTTP thread ${range(thread)}, ` : ''}all threads ${range(all)}`);
console.log(`   data.mdb holds ${(mdbBytes / 12 / 2000).toFixed(0)} bytes per create after 24,000`);

const blockWriter = await loadModule('store/block/block-writer.js').catch(() => undefined);
if (blockWriter) {
  const blockDir = fs.mkdtempSync(path.join(lmdbParent, 'create-work-blocks-'));
  const written = [];
  const prefixes = [];
  let bytes = 0;
  const perCreate = (used) => (used.user + used.system) / 2000;
  try {
    for (let n = 0; n < 12; n++) {
      const creates = [];
      for (let i = 0; i < 2000; i++) creates.push(await loggedCreate(i));
      const before = process.cpuUsage();
      // Each row's postings prefixes: the head's index holds them already (head-index.ts), so a
      // checkpoint that writes blocks need not make them again; timed apart.
      const rows = creates.map(({ record, value }) => blockWriter.blockRowOf(record, frameRecordBytes(value)));
      const rowsMade = process.cpuUsage(before);
      const block = await blockWriter.writeBlockFile(blockDir, `blk-${n}.eeb`, blockWriter.encodeBlock(rows, { segment: 1, offset: n + 1 }));
      if (n < 4) continue; // warm-up
      prefixes.push(perCreate(rowsMade));
      written.push(perCreate(process.cpuUsage(before)) - perCreate(rowsMade));
      bytes += block.bytes;
    }
  } finally {
    fs.rmSync(blockDir, { recursive: true, force: true });
  }
  console.log(`6. the same 2,000 as a block file (under ${lmdbParent}): encoded and written ${range(written)}, ${(bytes / written.length / 2000).toFixed(0)} bytes per create; their prefixes made again ${range(prefixes)}`);
}
