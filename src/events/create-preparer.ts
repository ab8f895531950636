/**
 * Creates' bodies parsed, validated, decoded and their records encoded off the HTTP thread when
 * they are heavy (docs/OPERATIONS.md, "Memory"). A body of MAX_RECORD_SIZE_BYTES takes 100 to
 * 600 ms to parse, validate and decode, and its record up to 400 ms to encode; on the HTTP thread
 * every other request, `/health` included, would wait as long (docs/RELIABILITY.md, "Memory under
 * the largest valid creates"). A light body is prepared in place: the trip to a worker and back
 * costs more than it saves.
 */
import { parseJsonText } from '../json-text.js';
import type { NewEvent, PreparedCreate } from '../store/index.js';
import { movableBuffers, workerModule } from '../worker-start.js';
import { WorkerRequests } from '../worker-requests.js';
import { prepareCreate, type CreateLimits, type PreparedBody } from './create-event.js';
import type { PreparedMessage, PrepareMessage } from './create-preparer-worker.js';

/**
 * Bodies weighing at least this much (bytes; their bytes plus what parsing adds, body-budget.ts
 * `parsedExtraBytes`) are prepared on the worker. Parsing, validating and decoding take about 5 to
 * 6 ms per MiB of weight on a 2-core box, so a body prepared in place holds the HTTP thread for
 * under 10 ms.
 */
export const OFF_THREAD_MIN_WEIGHT_BYTES = 1024 * 1024;

const WORKER_MODULE = workerModule(import.meta.url, 'create-preparer-worker');

/** Makes a Buffer again of bytes that crossed a thread (they arrive as a plain Uint8Array). */
const asBuffer = (bytes: Uint8Array): Buffer => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

/** What the worker answers a prepared create with (create-preparer-worker.ts `PreparedMessage`, without its id). */
type Prepared = Omit<Extract<PreparedMessage, { prepared: unknown }>, 'id'>;

/** One server's create preparer: its worker is started at the first heavy body and stopped by `close`. */
export class CreatePreparer {
  private readonly worker: WorkerRequests<Prepared>;

  /** @param limits what a create is checked against (the store's settings) */
  constructor(private readonly limits: CreateLimits) {
    const { maxPredictionsPerImage, maxPredictionsPerEvent, maxPointsPerEvent, defaultSolutionId, cloudUploadUrl, unknownKeys, nonImagePayloads } = limits;
    const workerData: CreateLimits = { maxPredictionsPerImage, maxPredictionsPerEvent, maxPointsPerEvent, defaultSolutionId, cloudUploadUrl, unknownKeys, nonImagePayloads };
    this.worker = new WorkerRequests<Prepared>('create preparer', WORKER_MODULE, { workerData });
  }

  /** Creates prepared on the worker since start (for /metrics). */
  get preparedOffThread(): number {
    return this.worker.sent;
  }

  /**
   * Parses a create's JSON text and prepares it (`prepareCreate`): in place when it weighs less
   * than OFF_THREAD_MIN_WEIGHT_BYTES, else on the worker, which takes `text`'s memory when it owns
   * its ArrayBuffer (the caller must not use it after), and also builds and encodes its record
   * (store/engine/prepared-create.ts `prepareCreateRecord`, with presentEventJson: the presenter the
   * store must have been opened with).
   * @param text the body's bytes (UTF-8 JSON)
   * @param weight bytes: the body's weight in the body budget (body-budget.ts)
   * @throws AppError validation_failed (422) on malformed JSON, what prepareCreate throws, and
   *   store_failure (500) when the worker stops before it answers (its error is the cause)
   */
  async prepare(text: Buffer, weight: number): Promise<PreparedBody<NewEvent | PreparedCreate>> {
    if (weight < OFF_THREAD_MIN_WEIGHT_BYTES) return prepareCreate(parseJsonText(text), this.limits);
    const request: Omit<PrepareMessage, 'id'> = { text };
    const { prepared, ignored, warnings } = await this.worker.request(request, movableBuffers([text]));
    for (const blob of prepared.imageBlobs) blob.bytes = asBuffer(blob.bytes);
    if ('unstamped' in prepared.encoded) prepared.encoded.unstamped.value = asBuffer(prepared.encoded.unstamped.value);
    return { event: prepared, ignored, warnings };
  }

  /** Stops the worker; creates it was preparing fail with store_failure. */
  close(): Promise<void> {
    return this.worker.close();
  }
}
