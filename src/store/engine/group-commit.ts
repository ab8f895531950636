/**
 * Group commit (docs/STORAGE.md, "Creates"): jobs submitted in the same event turn, or while an
 * earlier batch is committing, go together in one batch, so concurrent jobs share one commit.
 * The store runs one, the log stage (one writev + fdatasync per batch); the batch then enters the
 * head (head.ts).
 *
 * A batch has two stages: until `release` is called no other batch starts, so batches keep
 * submission order; after `release` the batch may still be finishing (the log stage releases
 * once its append is done, then puts the batch into the head and answers it), and the next
 * batch is built meanwhile. Jobs resolve when their own batch is done.
 */

interface Waiting<Job, Result> {
  job: Job;
  resolve: (result: Result) => void;
  reject: (err: unknown) => void;
}

/** Runs `commitBatch` over queued jobs, one batch committing at a time. */
export class GroupCommitter<Job, Result> {
  private queue: Waiting<Job, Result>[] = [];
  /** Batches started and not yet released (at most one). */
  private committing = 0;
  /** Batches started and not yet settled. */
  private inFlight = 0;
  private scheduled = false;
  private paused = false;
  private idleWaiters: (() => void)[] = [];
  private quietWaiters: (() => void)[] = [];

  /**
   * @param commitBatch makes a batch durable; calls `release` once the next batch may start (its
   *   append is done; never calling it just means no overlap);
   *   resolves with one result per job in order, or rejects to fail every job of the batch
   * @param maxBatch most jobs in one batch
   */
  constructor(
    private readonly commitBatch: (jobs: Job[], release: () => void) => Promise<Result[]>,
    private readonly maxBatch = 1024,
  ) {}

  /** Queues a job; resolves once its batch is durable. */
  submit(job: Job): Promise<Result> {
    return new Promise<Result>((resolve, reject) => {
      this.queue.push({ job, resolve, reject });
      this.schedule();
    });
  }

  /** Resolves once every submitted job has been committed or failed. */
  whenIdle(): Promise<void> {
    if (this.queue.length === 0 && this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Stops starting batches; resolves once no batch is under way. Jobs submitted meanwhile wait
   * for `resume` (used by reset, which must not race creates).
   */
  pause(): Promise<void> {
    this.paused = true;
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.quietWaiters.push(resolve));
  }

  /** Starts batches again after `pause`. */
  resume(): void {
    this.paused = false;
    if (this.queue.length > 0) this.schedule();
  }

  private schedule(): void {
    if (this.scheduled || this.paused || this.committing > 0) return;
    this.scheduled = true;
    // Let the jobs of this event turn join the batch.
    setImmediate(() => {
      this.scheduled = false;
      this.dispatch();
    });
  }

  private dispatch(): void {
    if (this.queue.length === 0 || this.committing > 0 || this.paused) return;
    const batch = this.queue.splice(0, this.maxBatch);
    this.committing++;
    this.inFlight++;
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      this.committing--;
      if (this.queue.length > 0) this.schedule();
    };
    this.commitBatch(batch.map((w) => w.job), release).then(
      (results) => batch.forEach((w, i) => w.resolve(results[i])),
      (err: unknown) => batch.forEach((w) => w.reject(err)),
    ).finally(() => {
      release();
      this.inFlight--;
      if (this.inFlight === 0) for (const wake of this.quietWaiters.splice(0)) wake();
      if (this.queue.length === 0 && this.inFlight === 0) for (const wake of this.idleWaiters.splice(0)) wake();
    });
  }
}
