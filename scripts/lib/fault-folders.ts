/**
 * The data folders the disk-fault harness damages (scripts/disk-faults.ts; docs/RELIABILITY.md,
 * "Disk faults"), each made once by the built store over HTTP and kept beside a `setup.json`, so
 * that `--setup DIR` runs the faults on them again:
 *
 * - `mixed` (the older rows, and `log copy`): `--events` creates (1,000; every 5th with a 270 KB
 *   JPEG), a clean stop (SIGTERM: all of it checkpointed into LMDB; data.mdb kept as it was then,
 *   `clean-stop.mdb`), a start with checkpoints 60 s to 5 min apart and cleanup hourly, as many
 *   creates again once its start-up cleanup has checkpointed, and SIGKILL: half the events in the
 *   index, half only in the log, replayed at the next start. In `DIR/data`.
 * - `reclaimed` (`index copy after a cleanup`, `both copies`): `--reclaimed-events` creates (1,500;
 *   every 5th with the JPEG, two segments), a clean stop (data.mdb kept as it was then, `clean-stop.mdb`), a
 *   start with MAX_STORAGE_BYTES at 24 MiB, whose cleanups delete the oldest images until the store
 *   is under it: the first segment, left with only record frames, is compacted (its events' records
 *   copied forward as record copies) and deleted. Then `POST /admin/cleanup`, every event read back
 *   (its JSON kept, and which images still download) and a clean stop. Before record copies, the
 *   index was the only copy of the records of those events. In `DIR/reclaimed/data`.
 * - `cleanup` (`db/ lost after a cleanup`: docs/RELIABILITY.md, "Disk faults"): `--cleanup-events` small
 *   `inventory_count` events (16,000; a record frame of about 1.1 KiB each), 8 in flight, then
 *   `POST /admin/cleanup`, `--sample` of them (800) read back and kept, and a clean stop. In
 *   `DIR/cleanup/data`.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { AckedEvent } from './acked-events.js';
import type { FolderName } from './copy-faults.js';
import { eventBody } from './disk-fill.js';
import { copyFolder, createEvents, exitText, readExpected, runCheck, seconds, startUpCleanupDone, stopStore, type CheckJson } from './fault-store.js';
import type { FaultLayout } from './fault-injection.js';
import { StoreClient } from './http-client.js';
import { recordPages } from './index-pages.js';
import { blockRecordPages } from './block-pages.js';
import { FrameMap, readLogFrames, segmentFiles } from './log-frames.js';
import { Random } from './random.js';
import { launchStore } from './store-process.js';

const IMAGE = 'retina.jpg';
/** The second life of the mixed folder: no checkpoint and no cleanup of its own after the start-up one, so its creates stay in the log alone. */
const SECOND_LIFE = { INDEX_CHECKPOINT_MS: '60000', INDEX_CHECKPOINT_MAX_MS: '300000', CLEANUP_INTERVAL_SECONDS: '3600' };
/** The reclaimed folder's storage limit: about 80 of its 300 images stay. */
const RECLAIM_STORAGE_BYTES = 24 * 1024 * 1024;

/** How big each folder is (the harness's options). */
export interface FolderSizes {
  mixedEvents: number;
  reclaimedEvents: number;
  cleanupEvents: number;
  sample: number;
  seed: number;
}

/** A data folder made for the faults, and what a run reads back on its copies. */
export interface Folder {
  name: FolderName;
  /** The undamaged data folder. */
  data: string;
  /** The events a run reads back (the `cleanup` folder: its sample), with the images that still download. */
  events: AckedEvent[];
  /** Their JSON as read before any fault (not kept for `mixed`). */
  bodies: Map<string, string> | undefined;
  /** Events acknowledged in all (the `cleanup` folder reads back a sample of them). */
  acknowledged: number;
  layout: FaultLayout;
  /** `edge-events check` on the undamaged folder. */
  check: CheckJson['check'];
}

/** What a setup leaves beside its folder. */
interface SetupFile {
  events: AckedEvent[];
  /** mixed: the segments' bytes at the clean stop. */
  segmentBytesAtCleanStop?: [number, number][];
  bodies?: [string, string][];
  acknowledged?: number;
}

/** Where folder `name` lives under the harness's work directory (the mixed one where the harness always kept it). */
function rootOf(workDir: string, name: FolderName): string {
  return name === 'mixed' ? workDir : path.join(workDir, name);
}

/** Starts the store on `data` with `env` and a client of it. */
async function start(data: string, env: Record<string, string> = {}) {
  const store = await launchStore({ DATA_DIR: data, ...env });
  return { store, client: new StoreClient(store.url, 300_000) };
}

/** Stops a setup's store cleanly. @throws Error when it did not exit 0 */
async function cleanStop(store: Awaited<ReturnType<typeof start>>['store']): Promise<void> {
  const stopped = await stopStore(store);
  if (stopped.code !== 0) throw new Error(`the clean stop ended with ${exitText(stopped)}: ${store.output().slice(-2000)}`);
}

/** `POST /admin/cleanup`, which answers once the cleanup has ended. @throws Error on another answer than 200 */
async function cleanup(client: StoreClient): Promise<any> {
  const answer = await client.request('POST', '/admin/cleanup');
  if (answer.status !== 200) throw new Error(`POST /admin/cleanup answered ${answer.status}: ${answer.bytes.toString('utf8', 0, 300)}`);
  return answer.json();
}

const imageEvent = (k: number) => {
  const images = k % 5 === 0 ? [IMAGE] : [];
  return { json: eventBody(images, 'disk-faults'), images };
};

/**
 * A small `inventory_count` event of a shelf camera, whose record frame is about 1.1 KiB (the
 * field case of docs/STORAGE.md, "Two copies of every record").
 */
function inventoryEvent(k: number): { json: Record<string, unknown>; images: string[] } {
  return {
    images: [],
    json: {
      inference_timestamp: new Date().toISOString(), event_schema: 'inventory_count', device_id: `shelf-cam-${k % 8}`, stream_id: `aisle-${k % 12}`,
      workflow_id: 'inventory-count', workflow_version: '3.2.1',
      event_data: { location: `warehouse 2, aisle ${k % 12}, bay ${k % 40}, shelf ${k % 6}`, item_count: k % 97, item_type: 'carton 40x30x20' },
      custom_metadata: { line: 'A', shift: k % 3 === 0 ? 'night' : 'day', batch: randomUUID(), sku: `SKU-${100000 + (k % 5000)}`, note: 'counted by the shelf camera; '.repeat(27) },
    },
  };
}

async function setUpMixed(root: string, sizes: FolderSizes): Promise<SetupFile> {
  const data = path.join(root, 'data');
  fs.mkdirSync(data);
  let { store, client } = await start(data);
  const events = await createEvents(client, sizes.mixedEvents, 4, imageEvent);
  await cleanStop(store);
  fs.copyFileSync(path.join(data, 'db', 'data.mdb'), path.join(root, 'clean-stop.mdb'));
  const atStop = segmentFiles(data).map((s) => [s.segment, s.bytes] as [number, number]);
  ({ store, client } = await start(data, SECOND_LIFE));
  if (!(await startUpCleanupDone(client, store))) throw new Error('the start-up cleanup did not end');
  events.push(...(await createEvents(client, sizes.mixedEvents, 4, imageEvent)));
  await store.kill('SIGKILL');
  return { events, segmentBytesAtCleanStop: atStop };
}

async function setUpReclaimed(root: string, sizes: FolderSizes): Promise<SetupFile> {
  const data = path.join(root, 'data');
  fs.mkdirSync(data, { recursive: true });
  let { store, client } = await start(data);
  const created = await createEvents(client, sizes.reclaimedEvents, 4, imageEvent);
  await cleanStop(store);
  fs.copyFileSync(path.join(data, 'db', 'data.mdb'), path.join(root, 'clean-stop.mdb'));
  const before = segmentFiles(data).map((s) => s.segment);
  ({ store, client } = await start(data, { MAX_STORAGE_BYTES: String(RECLAIM_STORAGE_BYTES) }));
  if (!(await startUpCleanupDone(client, store))) throw new Error('the start-up cleanup did not end');
  await cleanup(client);
  const after = new Set(segmentFiles(data).map((s) => s.segment));
  if (!before.some((s) => !after.has(s))) throw new Error(`the cleanup reclaimed no segment (segments ${before.join(', ')} before it)`);
  const { events, bodies } = await readExpected(client, created);
  await cleanStop(store);
  return { events, bodies: [...bodies] };
}

async function setUpCleanup(root: string, sizes: FolderSizes): Promise<SetupFile> {
  const data = path.join(root, 'data');
  fs.mkdirSync(data, { recursive: true });
  const { store, client } = await start(data);
  const begun = performance.now();
  const created = await createEvents(client, sizes.cleanupEvents, 8, inventoryEvent);
  console.log(`  ${created.length.toLocaleString('en-US')} creates in ${seconds(performance.now() - begun)}`);
  const report = await cleanup(client);
  console.log(`  POST /admin/cleanup: ${report.message}`);
  const rng = new Random(sizes.seed);
  const sample = [...created];
  for (let i = 0; i < Math.min(sizes.sample, sample.length); i++) {
    const j = rng.int(i, sample.length - 1);
    [sample[i], sample[j]] = [sample[j], sample[i]];
  }
  const { events, bodies } = await readExpected(client, sample.slice(0, sizes.sample));
  await cleanStop(store);
  return { events, bodies: [...bodies], acknowledged: created.length };
}

/**
 * The layout the faults are drawn on, from the undamaged folder (and `edge-events check` of a
 * scratch copy: the log position, the page size).
 * @throws Error when the check gives no position or finds damage
 */
async function readLayout(root: string, data: string, setup: SetupFile, events: AckedEvent[]): Promise<{ layout: FaultLayout; check: CheckJson['check'] }> {
  const fileEvents = new Map<string, string>();
  for (const event of events) for (const image of event.images) fileEvents.set(image.fileId, event.id);
  const scratch = path.join(fs.mkdtempSync(path.join(root, 'layout-')), 'data');
  copyFolder(data, scratch);
  const check = await runCheck(scratch, false);
  fs.rmSync(path.dirname(scratch), { recursive: true, force: true });
  const report = check.report?.check;
  const position = report?.indexAgainstLog?.logPosition;
  if (!report || !position || report.index.pageSize === null) throw new Error(`edge-events check on the undamaged folder gave no log position or page size (${exitText(check.exit)}): ${check.stderr.slice(0, 2000)}`);
  if (report.damage) throw new Error(`edge-events check finds damage in the undamaged folder: ${JSON.stringify(report).slice(0, 2000)}`);
  const index = fs.readFileSync(path.join(data, 'db', 'data.mdb'));
  const older = path.join(root, 'clean-stop.mdb');
  return {
    check: report,
    layout: {
      segments: segmentFiles(data),
      frames: new FrameMap(await readLogFrames(data), (fileId) => fileEvents.get(fileId)),
      position,
      segmentBytesAtCleanStop: new Map(setup.segmentBytesAtCleanStop ?? []),
      index,
      indexAtCleanStop: fs.existsSync(older) ? fs.readFileSync(older) : index,
      indexPageSize: report.index.pageSize,
      recordPages: recordPages(index, report.index.pageSize),
      blockPages: blockRecordPages(data),
    },
  };
}

/**
 * Folder `name` under `workDir`: made when its setup.json is not there yet, read otherwise.
 * @throws Error when the setup fails (an answer not as expected, a store that does not stop cleanly)
 */
export async function folder(workDir: string, name: FolderName, sizes: FolderSizes): Promise<Folder> {
  const root = rootOf(workDir, name);
  const setupFile = path.join(root, 'setup.json');
  if (!fs.existsSync(setupFile)) {
    const begun = performance.now();
    console.log(`setting up the ${name} data folder`);
    const made = await (name === 'mixed' ? setUpMixed(root, sizes) : name === 'reclaimed' ? setUpReclaimed(root, sizes) : setUpCleanup(root, sizes));
    fs.writeFileSync(setupFile, JSON.stringify(made));
    console.log(`  set up in ${seconds(performance.now() - begun)}`);
  }
  const setup = JSON.parse(fs.readFileSync(setupFile, 'utf8')) as SetupFile;
  const data = path.join(root, 'data');
  const { layout, check } = await readLayout(root, data, setup, setup.events);
  return {
    name, data, events: setup.events, bodies: setup.bodies ? new Map(setup.bodies) : undefined,
    acknowledged: setup.acknowledged ?? setup.events.length, layout, check,
  };
}
