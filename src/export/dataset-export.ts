/**
 * The dataset export of a search (docs/API.md, "Dataset export"): the events a query matches,
 * with their image files, written by src/export/dataset-writer.ts into any byte sink. Knows
 * nothing of HTTP: the route checks the request with `prepareExport`, starts its response, and
 * hands it to `writeExport` as the sink.
 */
import { validationError } from '../errors.js';
import type { ByteSink } from './dataset-zip.js';
import { writeDataset } from './dataset-writer.js';
import { exportEventOf } from './export-event.js';
import { EXPORT_FORMATS, isExportFormat, type ExportEvent, type ExportFormat, type ExportSummary } from './export-types.js';
import type { EventStore, SearchCondition } from '../store/index.js';
import { matchingEvents } from '../events/matching-events.js';
import { assertKnownParams } from '../events/query-params.js';
import { paramDefault } from '../events/read-params.js';
import type { ListLimits } from '../events/read-events.js';
import { compileEventQuery } from '../events/search-conditions.js';
import { requiredQuery } from '../events/search-cursor.js';

/** A checked export request. */
export interface ExportRequest {
  condition: SearchCondition;
  format: ExportFormat;
}

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
 * Reads the bytes of stored image `fileId` whole (images are at most MAX_RECORD_SIZE_BYTES; a file
 * compaction moved meanwhile is found at its new place: StoredFile.read).
 * @returns null when the file is gone (storage cleanup deleted it meanwhile) or is no image
 * @throws the fs error of a failed read other than a deleted file
 */
async function readImage(store: EventStore, fileId: string): Promise<Buffer | null> {
  const file = store.openFile(fileId);
  if (!file || file.kind !== 'image') return null;
  try {
    return await file.readAll();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || !store.openFile(fileId)) return null;
    throw err;
  }
}

async function* exportEvents(store: EventStore, condition: SearchCondition, limits: ListLimits): AsyncGenerator<ExportEvent> {
  for await (const event of matchingEvents(store, condition, limits)) {
    yield exportEventOf(event, (fileId) => store.openFile(fileId)?.contentType);
  }
}

/**
 * Writes the export of `request` into `sink` and ends it (dataset-writer.ts `writeDataset`).
 * @returns the summary; `aborted` when the sink went away first
 * @throws AppError disk_full or store_failure, as `writeDataset`, with the sink neither written
 *   further nor ended
 */
export function writeExport(store: EventStore, request: ExportRequest, sink: ByteSink, limits: ListLimits): Promise<ExportSummary> {
  return writeDataset(request.format, exportEvents(store, request.condition, limits), (fileId) => readImage(store, fileId), sink);
}
