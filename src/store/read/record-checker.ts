/**
 * Large records checked against a read's conditions off the HTTP thread (docs/API.md, "Requests
 * share the store"). A list or search whose filter no index covers decodes each record it checks;
 * a record of 100,000 detections takes about 0.1 s to decode on a 2-core box (and 260,000, from
 * before MAX_PREDICTIONS_PER_EVENT, about 0.2 s), which would hold every other request as long.
 * A record of RECORD_CHECK_OFF_THREAD_BYTES (event-query.ts) or more is therefore copied to a worker thread
 * (record-check-worker.ts), decoded and checked there, and the read goes on with the answer
 * (event-query.ts `scanInTurns`); a smaller one is decoded in place, where the trip would cost
 * more than it saves.
 */
import type { ErrorReport } from '../../errors.js';
import { workerModule } from '../../worker-start.js';
import { WorkerRequests } from '../../worker-requests.js';

/**
 * What a record is checked against: a list's query (event-query.ts `EventQuery`, `matchesQuery`)
 * or a search's conditions (event-search.ts `SearchCondition`, `matchesCondition`); plain data,
 * copied to the worker. (Typed there: this module imports neither, which import the view that owns it.)
 */
export type RecordCheck = { kind: 'query'; query: object } | { kind: 'search'; condition: object };

/** HTTP thread -> worker: a record's bytes (record-codec.ts `recordBytes`) and what to check. */
export interface CheckMessage {
  id: number;
  record: Uint8Array;
  check: RecordCheck;
}

/** Worker -> HTTP thread. */
export type CheckedMessage = { id: number; matches: boolean } | { id: number; error: ErrorReport };

const WORKER_MODULE = workerModule(import.meta.url, 'record-check-worker');

/** A view's record checker: its worker is started at the first large record and stopped by `close`. */
export class RecordChecker {
  private readonly worker = new WorkerRequests<{ matches: boolean }>('record checker', WORKER_MODULE);

  /** Records checked on the worker since start. */
  get checked(): number {
    return this.worker.sent;
  }

  /**
   * Whether `record` passes `check`, decided on the worker.
   * @param record the record's bytes, moved to the worker (the caller must not use them after)
   * @throws Error from the record codec for a record it cannot decode; AppError store_failure when
   *   the worker stops before it answers
   */
  async check(record: Uint8Array, check: RecordCheck): Promise<boolean> {
    const request: Omit<CheckMessage, 'id'> = { record, check };
    return (await this.worker.request(request, [record.buffer as ArrayBuffer])).matches;
  }

  /** Stops the worker; checks under way fail with store_failure. */
  close(): Promise<void> {
    return this.worker.close();
  }
}
