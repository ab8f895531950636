/**
 * The dataset export of a search (docs/API.md, "Dataset export"): the events a query matches,
 * with their image files, written by src/export/dataset-writer.ts into any byte sink. Knows
 * nothing of HTTP: the route checks the request with `prepareExport`, starts its response, and
 * hands it to `writeExport` as the sink. The export runs on a worker thread of its own
 * (export-worker.ts): the HTTP thread only checkpoints the store first and passes the zip's
 * chunks on to the sink, so an export of any size never holds other requests.
 */
import { AppError, errorFromReport, validationError } from '../errors.js';
import type { ByteSink } from './dataset-zip.js';
import type { ExportHostMessage, ExportJob, ExportWorkerMessage } from './export-worker.js';
import { EXPORT_FORMATS, isExportFormat, type ExportFormat, type ExportSummary } from './export-types.js';
import type { EventStore, SearchCondition } from '../store/index.js';
import { assertKnownParams } from '../events/query-params.js';
import { paramDefault } from '../events/read-params.js';
import type { ListLimits } from '../events/read-events.js';
import { compileEventQuery } from '../events/search-conditions.js';
import { requiredQuery } from '../events/search-cursor.js';
import { startWorker, workerModule } from '../worker-start.js';

/** A checked export request. */
export interface ExportRequest {
  condition: SearchCondition;
  format: ExportFormat;
}

const WORKER_MODULE = workerModule(import.meta.url, 'export-worker');

/**
 * Checks the parameters of `GET /v2/export`: `q` (required) and `format` (default `coco`).
 * @throws AppError invalid_search_query (400) for a query that does not parse, invalid_query
 *   (400) for a parameter the route does not take (query-params.ts), validation_failed (422) for a missing `q` or an unknown `format`
 */
export function prepareExport(params: URLSearchParams): ExportRequest {
  assertKnownParams(params, 'export');
  const condition = compileEventQuery(requiredQuery(params));
  const format = params.get('format') ?? paramDefault<string>('format');
  if (!isExportFormat(format)) {
    throw validationError(['query', 'format'], `format must be one of ${EXPORT_FORMATS.join(', ')}`, 'type_error.enum');
  }
  return { condition, format };
}

/**
 * Writes the export of `request` into `sink` and ends it (dataset-writer.ts `writeDataset`, on
 * the export's worker). Every create and update acknowledged before the call is exported if it
 * matches (the store is checkpointed first, and the worker reads LMDB); events created meanwhile
 * may not be.
 * @returns the summary; `aborted` when the sink went away first
 * @throws AppError disk_full or store_failure, as `writeDataset`, or store_failure when the worker
 *   stops without an answer, with the sink neither written further nor ended
 */
export async function writeExport(store: EventStore, request: ExportRequest, sink: ByteSink, limits: ListLimits): Promise<ExportSummary> {
  await store.checkpointed();
  const job: ExportJob = {
    dataDir: store.dataDir,
    condition: request.condition,
    format: request.format,
    limits: { maxResponseBytes: limits.maxResponseBytes, maxScanRecords: limits.maxScanRecords },
    searchIndexReady: store.searchIndexReady,
  };
  const worker = startWorker(WORKER_MODULE, { workerData: job });
  const tell = (message: ExportHostMessage) => worker.postMessage(message);
  /** Passes one chunk on, then acknowledges it once the sink took it (or tells the worker the client went away). */
  const take = async (bytes: Uint8Array): Promise<void> => {
    if (sink.aborted) return tell({ type: 'aborted' });
    if (!sink.write(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))) await sink.writable();
    tell(sink.aborted ? { type: 'aborted' } : { type: 'taken', bytes: bytes.byteLength });
  };
  try {
    return await new Promise<ExportSummary>((resolve, reject) => {
      // Chunks are passed on in order, each after the sink took the one before.
      let passing = Promise.resolve();
      worker.on('message', (message: ExportWorkerMessage) => {
        if (message.type === 'chunk') passing = passing.then(() => take(message.bytes));
        else if (message.type === 'end') passing = passing.then(() => sink.end());
        else if (message.type === 'done') void passing.then(() => resolve(message.summary), reject);
        else reject(errorFromReport(message.error));
      });
      worker.on('error', (err) => reject(new AppError('store_failure', 'The export\'s worker failed', { cause: err })));
      worker.on('exit', (code) => reject(new AppError('store_failure', `The export's worker exited with code ${code} before it answered`)));
    });
  } finally {
    await worker.terminate();
  }
}
