/**
 * One run of `edge-events bench` (docs/OPERATIONS.md, "Measuring the box: edge-events bench"): the
 * installed store (`node <package>/dist/src/cli.js serve`) and the durable floor (floor-main.ts),
 * each a process of its own on a data folder of its own inside the bench's folder on DATA_DIR's file
 * system, measured by turns (bench-steps.ts), then stopped and the folder removed: also when a step
 * fails, and on Ctrl-C or SIGTERM, which end the process with 130 or 143 once that is done.
 */
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../config.js';
import { packageVersion } from '../paths.js';
import { benchImage, type BenchImage } from './bench-image.js';
import { startBenchProgress, type BenchProgress, type ProgressStream } from './bench-progress.js';
import { floorRatios, FRESH_STORE_NOTE, type BenchResult } from './bench-report.js';
import { runSteps, stepSeconds, type StepPlan, type StepsRun, type WorkloadName } from './bench-steps.js';
import { cameraFigures, capacityAt, enduranceAt, eventsPerSecond, storageTime, type CameraRate } from './capacity.js';
import { readDiskInfo, type DiskInfo } from './disk-wear.js';
import { imageEventBodies, smallEventBodies } from './payloads.js';
import { startServerChild, type ServerChild } from './server-child.js';
import { freeBytes } from '../store/index.js';
import { makeTempFolder, watchFreeSpace, type TempFolder } from './temp-folder.js';

/** What the operator asked for. */
export interface BenchOptions extends CameraRate {
  /** The measured window of each step, s. */
  secondsPerStep: number;
  /** The disk's rated terabytes written; undefined when not given. */
  tbw?: number;
  /** A JPEG or PNG for the image events instead of the generated one. */
  image?: string;
  /** Bytes the run leaves free on DATA_DIR's file system (`--keep-free-mib`). */
  keepFreeBytes: number;
  /** Share of the cores the store may use for the headline cameras, the rest left for inference (`--cpu-for-store`). */
  cpuForStore: number;
}

/**
 * The least room (bytes) the run needs on DATA_DIR's file system beyond what it leaves free: its
 * store starts, logs and checkpoints a few thousand events in it before its cleanup would have to
 * run.
 */
export const MIN_BENCH_ROOM_BYTES = 256 * 1024 * 1024;

const MiB = 1024 * 1024;

/**
 * How much the bench's store may hold (its MAX_STORAGE_BYTES): the store's own limit, or less when
 * DATA_DIR's file system has less room than that once `keepFreeBytes` are left free. A run of
 * image steps writes hundreds of MB, and more with longer steps; a box whose disk holds the
 * configured store too must not be filled by its bench. At the limit the store's cleanup runs, as on
 * a full box (docs/OPERATIONS.md, "Keeping the disk bounded").
 * @throws Error naming the free space and `--keep-free-mib` when the room is under MIN_BENCH_ROOM_BYTES
 */
export function benchStorageLimit(free: number, keepFreeBytes: number, storeLimit: number, dataDir: string): number {
  const room = free - keepFreeBytes;
  if (room < MIN_BENCH_ROOM_BYTES) {
    throw new Error(`${Math.floor(free / MiB)} MiB are free on the file system of DATA_DIR ${dataDir}: the bench leaves ${Math.floor(keepFreeBytes / MiB)} MiB of them free (--keep-free-mib) and needs ${MIN_BENCH_ROOM_BYTES / MiB} MiB more`);
  }
  return Math.min(storeLimit, room);
}

/** Where the run reads its settings and draws its bar. */
export interface BenchIo {
  stderr: ProgressStream;
  env: Record<string, string | undefined>;
  /** Told, in one line, what the run is about to do and for how long; undefined: nothing is said. */
  say?: (line: string) => void;
}

/** The installed binary and the floor's process, beside this file in the package. */
const CLI = fileURLToPath(new URL('../cli.js', import.meta.url));
const FLOOR = fileURLToPath(new URL('./floor-main.js', import.meta.url));

/** Requests in flight of the steps: one camera's pipeline, a few, many. */
export const IN_FLIGHT = [1, 4, 16];

/**
 * Settings the bench's servers never take from the environment: the sinks (its events must not be
 * shipped), the hub's source, the search gateway, the API key (the load carries none) and systemd's
 * notification socket and watchdog (they are the configured service's).
 */
const NOT_FOR_THE_BENCH = ['API_KEY', 'CLOUD_UPLOAD_URL', 'CLOUD_API_KEY', 'MQTT_URL', 'NATS_URL', 'NATS_CREDS', 'NATS_SOURCE_URL',
  'SEARCH_BASE_URL', 'SEARCH_API_KEY', 'NOTIFY_SOCKET', 'WATCHDOG_USEC', 'WATCHDOG_PID'];

/**
 * `env` for a server of the bench on `dataDir`: the store's settings but NOT_FOR_THE_BENCH, logging
 * at info (its listening line), and `extra`.
 */
function serverEnv(env: BenchIo['env'], dataDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...env, DATA_DIR: dataDir, LOG_LEVEL: 'info', ...extra };
  for (const name of NOT_FOR_THE_BENCH) delete out[name];
  return out;
}

/**
 * The steps' timing: `secondsPerStep` measured, a quarter of it (at most 1 s) of warm-up, and a
 * tail of INDEX_CHECKPOINT_MS, the longest a checkpoint waits under load (docs/STORAGE.md, "When a
 * checkpoint runs"), plus half a second for LMDB's flush, at most the window.
 */
export function planOf(secondsPerStep: number, checkpointMs: number): StepPlan {
  return {
    seconds: secondsPerStep,
    warmupSeconds: Math.min(1, secondsPerStep / 4),
    tailSeconds: Math.min(secondsPerStep, (checkpointMs + 500) / 1000),
    inFlight: IN_FLIGHT,
  };
}

/** What a run holds and must give back, whatever ends it. */
class Held {
  folder: TempFolder | undefined;
  progress: BenchProgress | undefined;
  readonly servers: ServerChild[] = [];
  interrupted = false;
  /** Why the run was stopped early, when DATA_DIR's file system ran short (`watchFreeSpace`). */
  stoppedFor: string | undefined;

  /** Keeps `server` to stop; kills it at once when the run was interrupted or stopped meanwhile. */
  adopt(server: ServerChild): void {
    this.servers.push(server);
    if (this.interrupted || this.stoppedFor) void server.kill();
  }

  /** Stops the run for `reason`: kills its servers now, and any it adopts later. */
  stopFor(reason: string): void {
    this.stoppedFor = reason;
    for (const server of this.servers) void server.kill();
  }

  /** Kills the servers still running, removes the folder, stops the bar; safe to call more than once. */
  async release(): Promise<void> {
    this.progress?.stop();
    await Promise.all(this.servers.map((server) => server.kill()));
    this.folder?.remove();
  }
}

const mean = (values: number[]): number => values.reduce((sum, value) => sum + value, 0) / values.length;

/** What a run measured and where, for the result. */
interface RunParts {
  options: BenchOptions;
  startedAt: Date;
  /** DATA_DIR, MAX_STORAGE_BYTES and RETENTION_DAYS as the store reads them. */
  config: { dataDir: string; maxStorageBytes: number; retentionDays: number };
  folder: TempFolder;
  storageLimitBytes: number;
  /** Free bytes on DATA_DIR's file system when the run began. */
  diskFreeBytes: number;
  disk: DiskInfo;
  engines: BenchResult['engines'];
  load1Before: number;
  image: BenchImage;
  bodies: Record<WorkloadName, Buffer[]>;
  plan: StepPlan;
  run: StepsRun;
}

/** The result object from the run's parts. */
function resultOf(parts: RunParts): BenchResult {
  const { options, config, run: { steps, holdings } } = parts;
  const rate = { cameras: options.cameras, fps: options.fps, imageRatio: options.imageRatio };
  const capacity = { store: capacityAt(steps, 'store', rate), floor: capacityAt(steps, 'floor', rate) };
  const cores = os.availableParallelism();
  return {
    version: packageVersion,
    node: process.version,
    startedAt: parts.startedAt.toISOString(),
    dataDir: config.dataDir,
    benchFolder: { path: parts.folder.dir, removed: true, storageLimitBytes: parts.storageLimitBytes },
    disk: parts.disk,
    engines: parts.engines,
    machine: { cores, load1Before: parts.load1Before, load1After: os.loadavg()[0], otherCores: mean(steps.map((step) => step.otherCores)) },
    image: { source: parts.image.source, bytes: parts.image.bytes.length, width: parts.image.width, height: parts.image.height },
    bodyBytes: { small: mean(parts.bodies.small.map((body) => body.length)), image: mean(parts.bodies.image.map((body) => body.length)) },
    plan: parts.plan,
    steps,
    ratios: floorRatios(steps),
    rate: { ...rate, eventsPerSecond: eventsPerSecond(rate) },
    capacity,
    cameras: cameraFigures(steps, rate, cores, options.cpuForStore),
    storage: storageTime(holdings, rate, { diskFreeBytes: parts.diskFreeBytes, maxStorageBytes: config.maxStorageBytes, retentionDays: config.retentionDays }),
    freshStoreNote: FRESH_STORE_NOTE,
    endurance: enduranceAt(options.tbw, capacity.store.bytesPerDay, parts.disk),
  };
}

/** Ends the process once `held` is released, on Ctrl-C (130) or SIGTERM (143). */
function onSignals(held: Held, io: BenchIo): () => void {
  const handler = (signal: NodeJS.Signals) => {
    held.interrupted = true;
    void held.release().finally(() => {
      io.stderr.write(`\nedge-events bench: stopped by ${signal}; the servers were stopped${held.folder ? ` and ${held.folder.dir} removed` : ''}.\n`);
      process.exit(signal === 'SIGINT' ? 130 : 143);
    });
  };
  process.once('SIGINT', handler);
  process.once('SIGTERM', handler);
  return () => {
    process.off('SIGINT', handler);
    process.off('SIGTERM', handler);
  };
}

/**
 * Runs the bench.
 * @returns the result, the bench's folder removed
 * @throws ConfigError naming a bad setting of the environment; Error naming `--image` for a file
 *   that is no image; Error naming the folder when it cannot be made; Error naming the free space
 *   when DATA_DIR's file system has too little (`benchStorageLimit`) or falls under
 *   `keepFreeBytes` free during the run (the servers are then killed); Error naming the step and
 *   the answer when a request fails; Error with the store's output when it does not start or stop
 *   gracefully. Nothing is left behind in any case
 */
export async function runBench(options: BenchOptions, io: BenchIo): Promise<BenchResult> {
  const config = loadConfig(io.env);
  const startedAt = new Date();
  const image = await benchImage(options.image);
  const bodies = { small: smallEventBodies().map((body) => Buffer.from(body)), image: imageEventBodies(image.bytes).map((body) => Buffer.from(body)) };
  const plan = planOf(options.secondsPerStep, config.indexCheckpointMs);
  const held = new Held();
  const stopListening = onSignals(held, io);
  let stopWatching = (): void => undefined;
  try {
    const folder = (held.folder = makeTempFolder(config.dataDir));
    const diskFreeBytes = await freeBytes(folder.dir);
    const storageLimitBytes = benchStorageLimit(diskFreeBytes, options.keepFreeBytes, config.maxStorageBytes, config.dataDir);
    stopWatching = watchFreeSpace(path.dirname(folder.dir), options.keepFreeBytes, (free) => held.stopFor(
      `the file system of DATA_DIR ${config.dataDir} fell to ${Math.floor(free / MiB)} MiB free during the run, under the ${Math.floor(options.keepFreeBytes / MiB)} MiB it leaves free (--keep-free-mib): the bench stopped its servers`,
    ));
    const disk = readDiskInfo(folder.dir);
    const load1Before = os.loadavg()[0];
    const plannedSeconds = 2 * IN_FLIGHT.length * 2 * stepSeconds(plan);
    io.say?.(`edge-events bench: measuring the store and the durable floor in ${folder.dir} for about ${Math.round(plannedSeconds)} s...`);
    held.progress = startBenchProgress(io.stderr, plannedSeconds);
    const storeEnv = serverEnv(io.env, path.join(folder.dir, 'store'), { MAX_STORAGE_BYTES: String(storageLimitBytes) });
    const store = await startServerChild('the store', CLI, ['serve'], storeEnv, (s) => held.adopt(s));
    const floor = await startServerChild('the durable floor', FLOOR, [], serverEnv(io.env, path.join(folder.dir, 'floor')), (s) => held.adopt(s));
    const run = await runSteps({ store, floor }, bodies, plan, (label, done, span) => held.progress?.update(label, done, span));
    const code = await store.stop();
    if (code !== 0) throw new Error(`the store did not stop gracefully (exit code ${code}):\n${store.output()}`);
    await floor.stop();
    held.progress.stop();
    folder.remove();
    return resultOf({ options, startedAt, config, folder, storageLimitBytes, diskFreeBytes, disk, engines: { store: store.engine, floor: floor.engine }, load1Before, image, bodies, plan, run });
  } catch (err) {
    if (held.interrupted) return new Promise(() => undefined); // the signal's handler ends the process
    if (held.stoppedFor) throw new Error(held.stoppedFor, { cause: err });
    throw err;
  } finally {
    stopWatching();
    stopListening();
    await held.release();
  }
}
