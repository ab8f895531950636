/**
 * Requests answered by a worker thread of the store's that starts at the first request and stops
 * at `close` (the create preparer, events/create-preparer.ts; the record checker,
 * store/read/record-checker.ts). Each request carries an id its answer names; an answer with an
 * `error` rejects with that error (errors.ts `errorFromReport`), any other is the request's
 * answer. A worker that stops, by an error or an exit, fails every request under way with
 * store_failure naming what stopped, its cause kept, and the next request starts a new one.
 */
import type { Worker, WorkerOptions } from 'node:worker_threads';
import { AppError, errorFromReport, type ErrorReport } from './errors.js';
import { startWorker } from './worker-start.js';

/** What a worker answers: the request's id, with its answer's fields or an error. */
export type WorkerAnswer<Answer> = ({ id: number } & Answer) | { id: number; error: ErrorReport };

export class WorkerRequests<Answer extends object> {
  private worker: Worker | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (answer: Answer) => void; reject: (err: unknown) => void }>();
  /** Requests sent to the worker since start (for /metrics). */
  sent = 0;

  /**
   * @param name what the worker is, in the error of the requests it failed ("the record checker")
   * @param module the worker's module (worker-start.ts `workerModule`)
   * @param options given to each worker started (its `workerData`)
   */
  constructor(private readonly name: string, private readonly module: URL, private readonly options: Omit<WorkerOptions, 'execArgv'> = {}) {}

  /**
   * Sends `request` with an id of its own, starting the worker when none runs.
   * @param transfer the ArrayBuffers moved to the worker rather than copied
   * @returns the worker's answer, its fields without the id's
   * @throws the error the worker answered; AppError store_failure when it stops before it answers
   */
  request(request: object, transfer: ArrayBuffer[] = []): Promise<Answer> {
    const worker = this.started();
    const id = this.nextId++;
    const answer = new Promise<Answer>((resolve, reject) => this.pending.set(id, { resolve, reject }));
    this.sent++;
    worker.postMessage({ ...request, id }, transfer);
    return answer;
  }

  /** Stops the worker; requests under way fail with store_failure. */
  async close(): Promise<void> {
    const { worker } = this;
    this.worker = undefined;
    await worker?.terminate();
  }

  private started(): Worker {
    if (this.worker) return this.worker;
    const worker = startWorker(this.module, this.options);
    worker.unref();
    worker.on('message', (message: WorkerAnswer<Answer>) => {
      const waiting = this.pending.get(message.id);
      this.pending.delete(message.id);
      if ('error' in message) waiting?.reject(errorFromReport(message.error));
      else waiting?.resolve(message);
    });
    const fail = (cause: unknown) => {
      if (this.worker === worker) this.worker = undefined;
      for (const { reject } of this.pending.values()) reject(new AppError('store_failure', `The ${this.name} stopped before it answered`, { cause }));
      this.pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the ${this.name}'s worker exited with code ${code}`)));
    this.worker = worker;
    return worker;
  }
}
