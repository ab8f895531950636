/**
 * Group commit (DESIGN.md, "Storage engine invariants"): jobs submitted in the same event turn,
 * or while earlier batches are being made durable, go together in one batch, so concurrent
 * creates share one segment append, one fdatasync and one LMDB commit. Up to `maxInFlight`
 * batches may be under way at once (`commitBatch` keeps their effects in submission order, see
 * EventStore); the store runs one at a time: lmdb-js blocks the main thread while it hands a
 * second transaction to a busy write thread, which cost more than the overlap won (measured at
 * 50 connections), while requests arriving during a commit are parsed and validated anyway.
 */

interface Waiting<Job, Result> {
  job: Job;
  resolve: (result: Result) => void;
  reject: (err: unknown) => void;
}

/** Runs `commitBatch` over queued jobs, a few batches at a time. */
export class GroupCommitter<Job, Result> {
  private queue: Waiting<Job, Result>[] = [];
  private inFlight = 0;
  private scheduled = false;
  private paused = false;
  private idleWaiters: (() => void)[] = [];
  private quietWaiters: (() => void)[] = [];

  /**
   * @param commitBatch makes a batch durable; resolves with one result per job in order, or
   *   rejects to fail every job of the batch
   * @param maxInFlight most batches under way at once
   * @param maxBatch most jobs in one batch
   */
  constructor(
    private readonly commitBatch: (jobs: Job[]) => Promise<Result[]>,
    private readonly maxInFlight = 1,
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
    if (this.scheduled || this.paused || this.inFlight >= this.maxInFlight) return;
    this.scheduled = true;
    // Let the jobs of this event turn join the batch.
    setImmediate(() => {
      this.scheduled = false;
      this.dispatch();
    });
  }

  private dispatch(): void {
    while (this.queue.length > 0 && this.inFlight < this.maxInFlight && !this.paused) {
      const batch = this.queue.splice(0, this.maxBatch);
      this.inFlight++;
      this.commitBatch(batch.map((w) => w.job)).then(
        (results) => batch.forEach((w, i) => w.resolve(results[i])),
        (err: unknown) => batch.forEach((w) => w.reject(err)),
      ).finally(() => {
        this.inFlight--;
        if (this.inFlight === 0) for (const wake of this.quietWaiters.splice(0)) wake();
        if (this.queue.length > 0) this.schedule();
        else if (this.inFlight === 0) for (const wake of this.idleWaiters.splice(0)) wake();
      });
    }
  }
}
