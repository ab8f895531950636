/**
 * The jobs the lifecycle worker asks of the store's writer on the HTTP thread, in one table both
 * threads use: each job's request and answer. The worker asks with `writer-job` and is answered
 * with `writer-done` (lifecycle-messages.ts); the HTTP thread runs each job with its handler
 * (worker-handle.ts `writerJobHandlers`), which the table types. Adding a job adds an entry here,
 * its handler and its test.
 */
import type { LogPosition } from '../store/index.js';
import type { StoreUsage } from './capacity.js';

/** Each job: what the worker sends with it, and what the HTTP thread answers. */
export interface WriterJobs {
  /** The active segment holds no live blob: stop appending to it and seal it (EventStore.retireSegment). */
  'retire-segment': { request: { segment: number }; answer: void };
  /** A segment's live share fell low: copy what lives in it forward (EventStore.compactSegment). */
  'compact-segment': { request: { segment: number }; answer: void };
  /**
   * Log the tombstones of events the worker is about to delete (EventStore.logTombstones;
   * docs/STORAGE.md, "Two copies of every record"): answers where each tombstone's frame ends.
   */
  'log-tombstones': { request: { events: { id: string; createdAt: number }[] }; answer: LogPosition[] };
  /**
   * Copy into the log again, from the index, the records of events whose log copy the scrub found
   * damaged or gone (EventStore.rewriteLogCopies; docs/STORAGE.md, "The scrub"): answers how many.
   */
  'rewrite-log-copies': { request: { createdAts: number[] }; answer: number };
  /**
   * Commit the head to LMDB (EventStore.checkpointed; docs/STORAGE.md, "The head"), so
   * a cleanup sees every event acknowledged before it began.
   */
  checkpoint: { request: object; answer: void };
  /**
   * Run the auto-finalize sweep (draft-sweeper.ts) for drafts created before `cutoff` (µs): the
   * HTTP thread's store logs every update to an event (docs/STORAGE.md, "Updates to events").
   * Answers how many drafts it closed.
   */
  'sweep-drafts': { request: { cutoff: number }; answer: number };
  /**
   * The store's usage as the HTTP thread's view counts it, with the head (capacity.ts): the
   * worker's own view sees only what checkpoints committed, up to five minutes late when creates
   * come slowly (docs/STORAGE.md, "When a checkpoint runs").
   */
  usage: { request: object; answer: StoreUsage };
}

/** A job's name. */
export type WriterJob = keyof WriterJobs;

/** The worker's message asking for a job (ToMain `writer-job`): its name, an id for the answer, and its request. */
export type WriterJobRequest = { [K in WriterJob]: { type: 'writer-job'; job: K; id: number } & WriterJobs[K]['request'] }[WriterJob];

/** The HTTP thread's answer (ToWorker `writer-done`): the job's answer, or why it failed. */
export type WriterJobDone = { type: 'writer-done'; id: number } & ({ answer: unknown } | { failed: string });

/**
 * What the HTTP thread runs for each job.
 * @throws whatever the job throws: the worker is answered `failed` with its message
 */
export type WriterJobHandlers = { [K in WriterJob]: (request: WriterJobs[K]['request']) => Promise<WriterJobs[K]['answer']> };
