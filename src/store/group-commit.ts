/**
 * Group commit (DESIGN.md, "Storage engine invariants"): jobs submitted while a batch is being
 * made durable wait and go together in the next batch, so concurrent creates share one segment
 * append, one fdatasync and one LMDB commit. Batches run one at a time, in submission order.
 */

interface Waiting<Job, Result> {
  job: Job;
  resolve: (result: Result) => void;
  reject: (err: unknown) => void;
}

/** Runs `commitBatch` over queued jobs, one batch at a time. */
export class GroupCommitter<Job, Result> {
  private queue: Waiting<Job, Result>[] = [];
  private running = false;
  private idle: Promise<void> = Promise.resolve();
  private markIdle: () => void = () => undefined;

  /**
   * @param commitBatch makes a batch durable; resolves with one result per job in order, or
   *   rejects to fail every job of the batch
   * @param maxBatch most jobs in one batch
   */
  constructor(
    private readonly commitBatch: (jobs: Job[]) => Promise<Result[]>,
    private readonly maxBatch = 1024,
  ) {}

  /** Queues a job; resolves once its batch is durable. */
  submit(job: Job): Promise<Result> {
    return new Promise<Result>((resolve, reject) => {
      this.queue.push({ job, resolve, reject });
      if (!this.running) {
        this.running = true;
        this.idle = new Promise((done) => (this.markIdle = done));
        // Let the jobs of this event turn join the first batch.
        setImmediate(() => void this.drain());
      }
    });
  }

  /** Resolves once every submitted job has been committed or failed. */
  whenIdle(): Promise<void> {
    return this.idle;
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      try {
        const results = await this.commitBatch(batch.map((w) => w.job));
        batch.forEach((w, i) => w.resolve(results[i]));
      } catch (err) {
        for (const w of batch) w.reject(err);
      }
    }
    this.running = false;
    this.markIdle();
  }
}
