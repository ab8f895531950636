/**
 * `npm run disk-full [-- --size-mib N]`: the store on a full disk.
 *
 * Mounts a small tmpfs (default 64 MiB; needs root, else it says so and exits 0) as DATA_DIR and
 * runs the store on it through six phases: fill it with image events until the store refuses
 * them; check it while full (uploads, finalize, reads, cleanup, integrity); SIGKILL and restart
 * it on the full disk; free space by a reset; free space taken by another file on the same
 * disk; fill again and free space by retention cleanup (`POST /admin/cleanup`). Each phase
 * starts from where the last one left the store. Expected throughout: refusals are
 * 507 (or 529), never a 500, a hang or a crash; no acknowledged event lost or corrupt; nothing
 * half-stored; full service again once space is freed. Prints what happened in each phase and
 * exits 1 on any problem.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AckedEvents } from './lib/acked-events.js';
import { numberOption } from './lib/args.js';
import { eventBody, fillStore } from './lib/disk-fill.js';
import { StoreClient } from './lib/http-client.js';
import { printLoggedErrors } from './lib/store-log.js';
import { launchStore, type StoreProcess } from './lib/store-process.js';
import { mountTmpfs, type Tmpfs } from './lib/tmpfs.js';
import { payload } from './lib/upload-payloads.js';

const sizeMiB = numberOption('size-mib', 64);
const RETENTION_SECONDS = 86.4; // RETENTION_DAYS=0.001
const FILL = { writers: 4, refusedInARow: 20, maxMs: 180_000 };
const MiB = 1024 * 1024;

const problems: string[] = [];
let output = '';
let store: StoreProcess | undefined;
let client: StoreClient;
const acked = new AckedEvents();

const mib = (bytes: number) => `${(bytes / MiB).toFixed(1)} MiB`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function note(line: string): void {
  console.log(`  ${line}`);
}

function problem(line: string): void {
  problems.push(line);
  console.log(`  PROBLEM: ${line}`);
}

/** Sends a request, noting its outcome; a 500, a timeout or a dropped connection is a problem. */
async function attempt(what: string, method: string, route: string, options: Parameters<StoreClient['request']>[2] = {}) {
  try {
    const answer = await client.request(method, route, options);
    note(`${what}: ${answer.status} ${answer.status >= 400 ? answer.bytes.toString('utf8', 0, 160) : ''}`);
    if (answer.status >= 500 && answer.status !== 507 && answer.status !== 529) problem(`${what} answered ${answer.status}`);
    return answer;
  } catch (err) {
    problem(`${what}: no answer (${(err as Error).message})`);
    return undefined;
  }
}

async function start(dataDir: string): Promise<void> {
  const started = performance.now();
  store = await launchStore({ DATA_DIR: dataDir, RETENTION_DAYS: '0.001', CLEANUP_INTERVAL_SECONDS: '3600', DRAFT_AUTO_FINALIZE_SECONDS: '86400' });
  client = new StoreClient(store.url, 30_000);
  note(`store started in ${(performance.now() - started).toFixed(0)} ms (pid ${store.pid})`);
}

async function stop(signal: NodeJS.Signals): Promise<void> {
  if (!store) return;
  const exit = await store.kill(signal);
  output += store.output();
  note(`store stopped by ${signal}: ${exit.code ?? exit.signal}`);
  if (signal === 'SIGTERM' && exit.code !== 0) problem(`graceful stop exited with ${exit.code ?? exit.signal}`);
  store = undefined;
}

/** One create of an event with `image`, noted; an acknowledged one joins the integrity checks. */
async function createOne(what: string, image: string): Promise<void> {
  const answer = await attempt(what, 'POST', '/v2/events', { json: eventBody([image]) });
  if (answer?.status !== 201) return;
  const body = answer.json();
  acked.add({ id: body.id, createdAt: body.created_at, images: [{ fileId: body.image_ids[0], fixture: image }] });
}

/** Fills until refused; the refusals must be 507 or 529. */
async function fill(disk: Tmpfs, what: string): Promise<void> {
  const tally = await fillStore(client, acked, FILL);
  note(`${what}: ${tally}; ${mib(disk.freeBytes())} free after`);
  if (tally.failures() > 0) problem(`${what}: ${tally.failures()} answers were 500s, timeouts or dropped connections`);
  if (tally.get(507) + tally.get(529) === 0) problem(`${what}: the store never refused a create as full`);
  if (store?.hasExited()) problem(`${what}: the store died`);
}

/** Checks integrity (acknowledged events and bytes, nothing half-stored, counters, staging). */
async function verify(what: string, dataDir: string, mayBeGone?: Parameters<AckedEvents['verify']>[1]): Promise<void> {
  const { problems: found, listed } = await acked.verify(client, mayBeGone);
  const staging = fs.readdirSync(path.join(dataDir, 'staging'));
  note(`${what}: ${listed.length} events listed, ${acked.events.size} acknowledged, ${found.length} problems, staging ${staging.length === 0 ? 'empty' : staging.join(' ')}`);
  for (const line of found.slice(0, 20)) problem(`${what}: ${line}`);
  if (staging.length > 0) problem(`${what}: staging not empty`);
}

/** Deletes everything with the two-step reset. */
async function resetStore(): Promise<void> {
  const token = (await attempt('POST /reset/request', 'POST', '/reset/request'))?.json().reset_token;
  const reset = await attempt('POST /reset/confirm', 'POST', '/reset/confirm', { json: { reset_token: token }, timeoutMs: 120_000 });
  if (reset?.status === 200) acked.clear();
}

/** Creates small events until `count` answered; all must be 201 for full service. */
async function expectService(what: string, count = 20): Promise<void> {
  let created = 0;
  for (let i = 0; i < count; i++) {
    const answer = await client.request('POST', '/v2/events', { json: eventBody(['cat.jpg'], 'after') }).catch(() => undefined);
    if (answer?.status === 201) {
      created++;
      const body = answer.json();
      acked.add({ id: body.id, createdAt: body.created_at, images: [{ fileId: body.image_ids[0], fixture: 'cat.jpg' }] });
    }
  }
  note(`${what}: ${created}/${count} creates acknowledged`);
  if (created !== count) problem(`${what}: full service not back (${created}/${count} creates acknowledged)`);
}

async function run(disk: Tmpfs): Promise<void> {
  const dataDir = path.join(disk.path, 'data');
  fs.mkdirSync(dataDir);

  console.log(`\n1. fill a ${sizeMiB} MiB disk with image events`);
  await start(dataDir);
  const draftAnswer = await attempt('a draft for later', 'POST', '/v2/events', { json: { ...eventBody([]), draft: true } });
  if (draftAnswer?.status !== 201) throw new Error('the store did not take a draft on an empty disk');
  const draft = draftAnswer.json();
  acked.add({ id: draft.id, createdAt: draft.created_at, images: [] });
  await fill(disk, 'creates');

  console.log('\n2. while the disk is full');
  const form = new FormData();
  form.append('file', new Blob([Uint8Array.from(payload('cat-zoom-4mib.mp4'))]), 'clip.mp4');
  await attempt('a 4 MiB video upload', 'POST', `/v2/events/${draft.id}/videos`, { body: form });
  await createOne('a small create', 'cat.jpg');
  await attempt('finalize of a draft', 'POST', `/v2/events/${draft.id}/finalize`);
  await attempt('GET /health', 'GET', '/health');
  await attempt('POST /admin/cleanup (nothing is past retention yet)', 'POST', '/admin/cleanup');
  await verify('integrity', dataDir);

  console.log('\n3. SIGKILL, and restart on the full disk');
  await stop('SIGKILL');
  await start(dataDir);
  await verify('integrity after restart', dataDir);
  await createOne('a create after restart', 'retina.jpg');

  console.log('\n4. free space by a reset');
  await resetStore();
  await expectService('after the reset');
  await verify('integrity after the reset', dataDir);

  console.log('\n5. free space taken by another file on the same disk');
  const ballast = path.join(disk.path, 'ballast.bin');
  const ballastBytes = Math.max(0, disk.freeBytes() - 16 * MiB);
  fs.writeFileSync(ballast, Buffer.alloc(ballastBytes, 1));
  note(`ballast of ${mib(ballastBytes)} written beside DATA_DIR; ${mib(disk.freeBytes())} free`);
  await fill(disk, 'creates');
  fs.rmSync(ballast);
  note(`ballast removed; ${mib(disk.freeBytes())} free`);
  await expectService('after the ballast is gone');
  await verify('integrity', dataDir);

  console.log('\n6. fill again, then free space by retention cleanup');
  await fill(disk, 'creates');
  const oldest = Math.min(...[...acked.events.values()].map((e) => Date.parse(e.createdAt)));
  const wait = oldest + RETENTION_SECONDS * 1000 + 2000 - Date.now();
  note(`waiting ${(Math.max(0, wait) / 1000).toFixed(0)} s for the first events to pass RETENTION_DAYS=0.001`);
  await sleep(Math.max(0, wait));
  const cleanup = await attempt('POST /admin/cleanup', 'POST', '/admin/cleanup', { timeoutMs: 120_000 });
  if (cleanup?.status === 200) {
    const result = cleanup.json();
    note(`cleanup deleted ${result.records_deleted.total} records, ${result.files_deleted.total} files, ${mib(result.bytes_freed)}; ${mib(disk.freeBytes())} free after`);
  }
  const cutoff = Date.now() - RETENTION_SECONDS * 1000;
  await expectService('after cleanup');
  await verify('integrity after cleanup', dataDir, (e) => Date.parse(e.createdAt) < cutoff);
  await stop('SIGTERM');
}

const disk = mountTmpfs(os.tmpdir(), sizeMiB);
if ('refused' in disk) {
  console.log(`disk-full: NOT RUN: ${disk.refused}. Run it as root (it mounts a ${sizeMiB} MiB tmpfs) to test the store on a full disk.`);
  process.exit(0);
}
console.log(`disk-full: DATA_DIR on a ${sizeMiB} MiB tmpfs at ${disk.path}`);
try {
  await run(disk);
} catch (err) {
  problem(`harness stopped: ${(err as Error).stack}`);
} finally {
  if (store) await stop('SIGKILL');
  disk.unmount();
}
printLoggedErrors(output);
console.log(`\ndisk-full: ${problems.length === 0 ? 'PASSED' : `FAILED, ${problems.length} problems`}`);
process.exit(problems.length === 0 ? 0 : 1);
