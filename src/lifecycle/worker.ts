/**
 * The lifecycle worker thread, and its composition root (docs/ARCHITECTURE.md, "Threads"): every
 * part that runs in this thread is built in the block below and nowhere else: its own handle on the
 * store's LMDB environment (LifecycleStore: a reader, and the deletions and ledger marks it
 * makes), the capacity monitor, the disk reserve, and the ledger sinks (the cloud uploader and
 * NATS JetStream). The thread owns cleanup (on a timer, when a limit is
 * crossed, and on request), the consistency pass, the capacity state, the auto-finalize sweep, and
 * shipping the ledger through each sink (network-bound, so beside the job queue, never in it). It
 * talks to the HTTP thread by messages (see lifecycle-messages.ts) and two shared counters: the
 * capacity state, and the store's write count, which spares an idle store the limit check's
 * question.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { configuredSinks, secretsOf, type Config } from '../config.js';
import { errorReport } from '../errors.js';
import { presentEventJson } from '../events/present.js';
import { createLogger } from '../logger.js';
import { DiskReserve, type EventChange, LifecycleStore, LogScrub, type StoreChange } from '../store/index.js';
import { logFinding, SCRUB_STEP_MS, ScrubPace } from './scrub-runner.js';
import { runCleanup, type CleanupHooks, type CleanupTrigger, type HeadCheckpoint } from './cleanup.js';
import { CapacityMonitor } from './capacity.js';
import { CloudSink } from './cloud-uploader.js';
import type { Sink } from '../sinks/ledger-sink.js';
import { runSink, type SinkProgress } from './sink-runner.js';
import type { ToMain, ToWorker } from './lifecycle-messages.js';
import type { WriterJob, WriterJobDone, WriterJobRequest, WriterJobs } from './writer-jobs.js';

/** How often (ms) the worker looks whether a limit is crossed: a crossing starts a cleanup within it. */
const LIMIT_CHECK_MS = 1000;
/**
 * Longest pause (ms) between two auto-finalize sweeps. Sweeps run every half
 * DRAFT_AUTO_FINALIZE_SECONDS, at most this far apart, so a draft past its delay waits for the
 * next sweep no longer than half that delay, and never more than 30 s.
 */
const SWEEP_MAX_INTERVAL_MS = 30_000;

const { config, capacityFlag, storeWrites } = workerData as { config: Config; capacityFlag: SharedArrayBuffer; storeWrites: SharedArrayBuffer };
const port = parentPort!;
const post = (message: ToMain) => port.postMessage(message);

/** Changes announced this turn, posted to the HTTP thread together (its live stream announces them). */
const changes: EventChange[] = [];

// This thread's parts, built here and nowhere else.
const log = createLogger(config.logLevel, secretsOf(config), config.logFormat).child({ thread: 'lifecycle' });
// Cleanup's file deletions rewrite records with their JSON (presentEventJson).
const store = LifecycleStore.open(config.dataDir, { sinks: configuredSinks(config), present: presentEventJson }, forwardChange);
const monitor = new CapacityMonitor(store, config, new Int32Array(capacityFlag), new Int32Array(storeWrites), log);
/** Room for a cleanup's commits on a disk ingest has filled (disk-reserve.ts). */
const reserve = new DiskReserve(config.dataDir, config.diskReserveBytes);
/** The ledger sinks configured (docs/OPERATIONS.md, "Sinks"), each shipped by sink-runner.ts. */
const sinks: Sink[] = [
  ...(config.cloudUploadUrl === undefined ? [] : [new CloudSink(store, config, { log: log.child({ task: 'cloud-upload' }) })]),
  // The NATS client is loaded only where a NATS sink is configured (as in src/serve.ts).
  ...(config.natsServers.length === 0 ? [] : [new (await import('../sinks/nats-sink.js')).NatsSink(store, config, log.child({ sink: 'nats' }))]),
];

/** Queues a change this thread's store made for the HTTP thread: one message per turn. */
function forwardChange(change: StoreChange): void {
  if (change.kind === 'reset') return; // resets are the HTTP thread's own
  if (changes.length === 0) queueMicrotask(() => post({ type: 'changes', changes: changes.splice(0) }));
  changes.push(change);
}

/** Time (ms) between two looks for a merge of blocks that is due (docs/STORAGE.md, "Blocks"): one merge a look. */
const BLOCK_MERGE_MS = 5_000;

/** Least time (ms) between two saves of the store's running time by cleanups. */
const RUNNING_SAVE_MS = 60_000;
/** When a cleanup last saved the running time (`performance.now()`, ms). */
let runningSavedAt = -Infinity;

/** The job under way; jobs run one at a time, in the order they were asked for. */
let queue: Promise<unknown> = Promise.resolve();
let stopping = false;

function enqueue<T>(job: () => Promise<T>): Promise<T> {
  const result = queue.then(job);
  queue = result.catch(() => undefined);
  return result;
}

/** Jobs asked of the store's writer on the HTTP thread, by id, until it answers. */
const writerJobs = new Map<number, (done: WriterJobDone) => void>();
let nextWriterJob = 1;

/**
 * Asks the HTTP thread's writer for `job` (writer-jobs.ts).
 * @returns its answer: the drafts a sweep closed, the store's usage
 * @throws Error naming the job and why, when it failed there (the HTTP thread logged it)
 */
function askWriter<K extends WriterJob>(job: K, request: WriterJobs[K]['request']): Promise<WriterJobs[K]['answer']> {
  return new Promise((resolve, reject) => {
    const id = nextWriterJob++;
    writerJobs.set(id, (done) => ('failed' in done ? reject(new Error(`${job} failed: ${done.failed}`)) : resolve(done.answer as WriterJobs[K]['answer'])));
    post({ type: 'writer-job', job, id, ...request } as WriterJobRequest);
  });
}

const hooks: CleanupHooks = {
  onReclaimed: (segments) => segments.length > 0 && post({ type: 'reclaimed', segments }),
  onUnknownSegments: (segments) => log.error({ segments }, 'blobs/ holds segment files with records of events that the index does not know (a page of it lost): '
    + 'kept; stop the store and run `edge-events check --repair` to give their events back (docs/STORAGE.md, "Segment files the index does not know")'),
  onMendedFileEntries: (fileIds) => log.warn({ file_ids: fileIds }, 'the index\'s entries of these files were damaged and are mended from their blob frames in the log; '
    + 'the disk under DATA_DIR/db may be failing: `edge-events check` reads the whole index (docs/STORAGE.md, "A damaged index")'),
  // A segment left as it was is tried again by a later cleanup: the cleanup goes on.
  retireSegment: (segment) => askWriter('retire-segment', { segment }).catch(() => undefined),
  compactSegment: (segment) => askWriter('compact-segment', { segment }).catch(() => undefined),
  logTombstones: (events) => askWriter('log-tombstones', { events }),
  checkpoint: () => askWriter('checkpoint', {}),
  usage: () => askWriter('usage', {}),
};

/**
 * Queues a cleanup; `headCheckpoint` and `consistency` as runCleanup takes them (default: by
 * `trigger`, and with the consistency pass).
 */
function cleanup(trigger: CleanupTrigger, options: { headCheckpoint?: HeadCheckpoint; consistency?: boolean } = {}) {
  return enqueue(async () => {
    if (await reserve.releaseIfLow()) log.warn({ bytes: reserve.bytes }, 'disk almost full: disk reserve given back so cleanup can commit');
    const recycledRemoved = await store.releaseRecycledIfLow();
    if (recycledRemoved > 0) log.warn({ files: recycledRemoved }, 'disk almost full: recycled segment files given back');
    // The store's running time, which retention also reckons by, survives a crash up to here
    // (docs/STORAGE.md, "A clock that jumps"); a commit a minute at most, however often a crossed limit cleans.
    if (performance.now() - runningSavedAt >= RUNNING_SAVE_MS) {
      runningSavedAt = performance.now();
      await store.saveRunningTime().catch((err: unknown) => log.warn({ err }, 'running time not saved'));
    }
    const result = await runCleanup(store, config, trigger, hooks, options);
    // The reserve before the run is announced: the start-up cleanup's end tells the disk-write
    // figures that start-up's one-time writes are done (src/operations/disk-writes.ts).
    await reserve.take().catch((err: unknown) => log.warn({ err }, 'disk reserve not taken'));
    post({ type: 'cleanup-ran', result, finishedAt: Date.now() });
    monitor.update(result.records_deleted.total > 0 || result.files_deleted.total > 0, await hooks.usage());
    if (result.records_deleted.total > 0 || result.files_deleted.total > 0) log.info({ result }, 'cleanup');
    return result;
  });
}

function every(ms: number, job: () => Promise<unknown>): NodeJS.Timeout {
  return setInterval(() => {
    if (!stopping) job().catch((err: unknown) => log.error({ err }, 'lifecycle job failed'));
  }, ms);
}

/**
 * The blocks' upkeep, one step a turn of the queue: the upgrade of a store of the engine before
 * blocks while LMDB holds events it moves (its steps follow one another, each queued anew so that
 * a cleanup comes between), else one merge when one is due (docs/STORAGE.md, "Blocks").
 */
async function blockWork(): Promise<void> {
  blockWorkQueued = false;
  const upgraded = await store.upgradeToBlocks();
  if (upgraded) {
    log.info({ upgrade: upgraded }, upgraded.remaining > 0
      ? 'upgrade into blocks: a step done, more to move (docs/STORAGE.md, "The upgrade into blocks")'
      : 'upgrade into blocks: every event moved');
    queueBlockWork();
    return;
  }
  const merged = await store.mergeBlocks();
  if (merged) log.debug({ merged }, 'blocks merged');
}

let blockWorkQueued = false;

/** Queues `blockWork` unless it is queued already. */
function queueBlockWork(): void {
  if (blockWorkQueued || stopping) return;
  blockWorkQueued = true;
  enqueue(blockWork).catch((err: unknown) => log.error({ err }, 'lifecycle job failed'));
}

/** The scrub of the log (docs/STORAGE.md, "The scrub"): repairs ask the writer; each finding is logged. */
const scrub = new LogScrub(store, (createdAts) => askWriter('rewrite-log-copies', { createdAts }), (finding) => logFinding(log, finding));
const scrubPace = new ScrubPace(scrub, config.scrubPassHours, new Int32Array(storeWrites));

const timers = [
  every(config.cleanupIntervalSeconds * 1000, () => cleanup('AUTOMATIC')),
  // A step at a time, queued with the cleanups, so it never reads a segment a cleanup is deleting.
  every(SCRUB_STEP_MS, () => enqueue(async () => {
    const status = await scrubPace.tick();
    if (status) post({ type: 'scrub-status', status });
  })),
  // Between scheduled runs, a crossed limit starts a cleanup within LIMIT_CHECK_MS; the
  // consistency pass is left to the schedule (docs/OPERATIONS.md, "Keeping the disk bounded").
  every(LIMIT_CHECK_MS, async () => {
    if (await monitor.needsCleanup(hooks.usage)) await cleanup('AUTOMATIC', { consistency: false });
  }),
  // Queued with the cleanups too, so a merge never reads a block a cleanup's deletions change.
  setInterval(queueBlockWork, BLOCK_MERGE_MS),
  every(Math.min((config.draftAutoFinalizeSeconds * 1000) / 2, SWEEP_MAX_INTERVAL_MS), () => enqueue(async () => {
    const closed = await askWriter('sweep-drafts', { cutoff: Math.floor((Date.now() - config.draftAutoFinalizeSeconds * 1000) * 1000) });
    if (closed) log.info({ closed }, 'auto-finalized drafts');
  })),
];

// Each configured sink ships the ledger while the worker runs (sink-runner.ts), beside the job
// queue: shipping is network-bound.
const shipping = new AbortController();
const sinkDeps = { sinks: store.sinks, signal: shipping.signal, onProgress: (progress: SinkProgress) => post({ type: 'sink-progress', progress }) };
const shipped = Promise.all(sinks.map((sink) => runSink(store, sink, { ...sinkDeps, log: log.child({ sink: sink.name }) })));

port.on('message', (message: ToWorker) => {
  if (message.type === 'writer-done') {
    writerJobs.get(message.id)?.(message);
    writerJobs.delete(message.id);
  } else if (message.type === 'cleanup') {
    cleanup('MANUAL').then(
      (result) => post({ type: 'cleanup-done', id: message.id, result }),
      (err: unknown) => post({ type: 'cleanup-failed', id: message.id, message: (err as Error).message, cause: errorReport(err) }),
    );
  } else if (message.type === 'stop') {
    stopping = true;
    for (const timer of timers) clearInterval(timer);
    shipping.abort();
    void Promise.all([queue, shipped]).then(() => store.close()).then(() => post({ type: 'stopped' }));
  }
});

// The consistency pass and limits are checked once at start-up, with the head checkpointed, so
// that segment files a crash left orphaned are removed.
cleanup('AUTOMATIC', { headCheckpoint: 'always' }).catch((err: unknown) => log.error({ err }, 'start-up cleanup failed'));
post({ type: 'ready' });
