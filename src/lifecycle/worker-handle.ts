/**
 * The HTTP thread's side of the lifecycle worker: starts it, forwards manual cleanups, closes
 * handles of reclaimed segments, exposes the capacity state, and restarts the worker (with a
 * growing pause) when it crashes.
 */
import type { Worker } from 'node:worker_threads';
import type { Config } from '../config.js';
import { AppError, errorFromReport } from '../errors.js';
import type { Logger } from '../logger.js';
import type { EventStore, ScrubStatus } from '../store/index.js';
import { CapacityGate } from './capacity-gate.js';
import { sweepDrafts } from './draft-sweeper.js';
import type { CleanupResult, CleanupTrigger } from './cleanup.js';
import type { SinkProgress } from './sink-runner.js';
import type { ToMain, ToWorker } from './lifecycle-messages.js';
import type { WriterJobDone, WriterJobHandlers, WriterJobRequest } from './writer-jobs.js';
import { startWorker, workerModule } from '../worker-start.js';

const RESTART_MIN_MS = 500;
const RESTART_MAX_MS = 30_000;
const WORKER_MODULE = workerModule(import.meta.url, 'worker');

/** The HTTP thread's handle on the lifecycle worker (src/lifecycle/worker.ts); one per store, built at start-up. */
export class LifecycleWorkerHandle {
  private readonly capacityFlag = new SharedArrayBuffer(4);
  /** The capacity gate gated routes pass (`capacity_blocked`). */
  readonly gate: CapacityGate;
  private current: Worker | undefined;
  private stopping = false;
  private restarts = 0;
  /** Times the worker was restarted after a crash, since start (for /metrics). */
  crashRestarts = 0;
  /** Cleanup runs since start, by trigger (for /metrics). */
  readonly cleanupRuns: Record<CleanupTrigger, number> = { AUTOMATIC: 0, MANUAL: 0 };
  /** The latest cleanup run since start, with when it ended (ms since the epoch); /stats `last_cleanup`. */
  lastCleanup: { result: CleanupResult; finishedAt: number } | undefined;
  /** The scrub's figures as the worker last reported them (docs/STORAGE.md, "The scrub"); undefined before its first step. */
  scrubStatus: ScrubStatus | undefined;
  /** Each sink's progress as the worker last reported it, by sink name. */
  readonly sinkProgress = new Map<string, SinkProgress>();
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (r: CleanupResult) => void; reject: (e: unknown) => void }>();

  constructor(private readonly config: Config, private readonly store: EventStore, private readonly log: Logger) {
    this.gate = new CapacityGate(new Int32Array(this.capacityFlag), store, config, log);
  }

  /** The worker running now (tests terminate it to see it restarted). */
  get worker(): Worker | undefined {
    return this.current;
  }

  /** Starts the worker; resolves once it is running. */
  start(): Promise<void> {
    const worker = startWorker(WORKER_MODULE, { workerData: { config: this.config, capacityFlag: this.capacityFlag, storeWrites: this.store.writes.buffer } });
    this.current = worker;
    worker.on('message', (message: ToMain) => this.receive(message));
    worker.on('error', (err) => this.log.error({ err }, 'lifecycle worker failed'));
    worker.on('exit', (code) => this.exited(worker, code));
    return new Promise((resolve, reject) => {
      // Other messages may come first (a sink's first progress report).
      const ready = (message: ToMain) => {
        if (message.type !== 'ready') return;
        worker.off('message', ready);
        resolve();
      };
      worker.on('message', ready);
      worker.once('exit', (code) => reject(new Error(`lifecycle worker exited with ${code} before it was ready`)));
    });
  }

  /**
   * Runs a manual cleanup in the worker (`POST /admin/cleanup`).
   * @throws AppError store_failure (500) when the cleanup fails or the worker is down
   */
  cleanup(): Promise<CleanupResult> {
    const worker = this.current;
    if (!worker) return Promise.reject(new AppError('store_failure', 'Lifecycle worker is restarting; try again'));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ type: 'cleanup', id } satisfies ToWorker);
    });
  }

  /** Starts the worker again after `stop` (reset). */
  restart(): Promise<void> {
    this.stopping = false;
    return this.start();
  }

  /** Stops the worker after the job under way. */
  async stop(): Promise<void> {
    this.stopping = true;
    const worker = this.current;
    if (!worker) return;
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    worker.postMessage({ type: 'stop' } satisfies ToWorker);
    await Promise.race([exited, new Promise((resolve) => worker.on('message', (m: ToMain) => m.type === 'stopped' && resolve(undefined)))]);
    await worker.terminate();
    this.current = undefined;
  }

  private receive(message: ToMain): void {
    if (message.type === 'cleanup-done' || message.type === 'cleanup-failed') {
      const waiting = this.pending.get(message.id);
      this.pending.delete(message.id);
      if (message.type === 'cleanup-done') waiting?.resolve(message.result);
      else waiting?.reject(new AppError('store_failure', `Cleanup failed: ${message.message}`, { cause: errorFromReport(message.cause) }));
    } else if (message.type === 'cleanup-ran') {
      this.cleanupRuns[message.result.trigger]++;
      this.lastCleanup = { result: message.result, finishedAt: message.finishedAt };
    } else if (message.type === 'scrub-status') {
      this.scrubStatus = message.status;
    } else if (message.type === 'sink-progress') {
      this.sinkProgress.set(message.progress.name, message.progress);
    } else if (message.type === 'changes') {
      for (const change of message.changes) this.store.changes.announce(change);
    } else if (message.type === 'reclaimed') {
      this.store.segmentsDeleted(message.segments);
    } else if (message.type === 'writer-job') {
      this.runWriterJob(message);
    } else if (message.type === 'ready') {
      this.restarts = 0;
    }
  }

  /** What the HTTP thread runs for each job the worker asks of the store's writer (writer-jobs.ts). */
  private readonly writerJobHandlers: WriterJobHandlers = {
    'retire-segment': ({ segment }) => this.store.retireSegment(segment),
    'compact-segment': ({ segment }) => this.store.compactSegment(segment),
    'log-tombstones': ({ events }) => this.store.logTombstones(events),
    'rewrite-log-copies': ({ createdAts }) => this.store.rewriteLogCopies(createdAts),
    checkpoint: () => this.store.checkpointed(),
    'sweep-drafts': ({ cutoff }) => sweepDrafts(this.store, cutoff),
    // Throws once the store is closing.
    usage: async () => this.gate.usage(),
  };

  /** Runs a job the worker asked for and answers it: its answer, or its failure, logged here too. */
  private runWriterJob(request: WriterJobRequest): void {
    const handler = this.writerJobHandlers[request.job] as (request: WriterJobRequest) => Promise<unknown>;
    const reply = (done: WriterJobDone) => this.current?.postMessage(done satisfies ToWorker);
    handler(request).then((answer) => reply({ type: 'writer-done', id: request.id, answer }), (err: unknown) => {
      this.log.error({ err, job: request.job, segment: 'segment' in request ? request.segment : undefined }, `${request.job} failed`);
      reply({ type: 'writer-done', id: request.id, failed: String((err as Error).message ?? err) });
    });
  }

  private exited(worker: Worker, code: number): void {
    if (worker !== this.current) return;
    this.current = undefined;
    for (const [id, waiting] of this.pending) {
      waiting.reject(new AppError('store_failure', 'Lifecycle worker stopped during the cleanup'));
      this.pending.delete(id);
    }
    if (this.stopping) return;
    const delay = Math.min(RESTART_MIN_MS * 2 ** this.restarts++, RESTART_MAX_MS);
    this.crashRestarts++;
    this.log.error({ code, restartInMs: delay }, 'lifecycle worker crashed; restarting it');
    setTimeout(() => {
      if (!this.stopping) this.start().catch((err: unknown) => this.log.error({ err }, 'lifecycle worker restart failed'));
    }, delay).unref();
  }
}
