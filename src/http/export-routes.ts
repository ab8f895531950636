/**
 * `GET /v2/export` (docs/API.md, "Dataset export"): the events a query matches as a dataset zip,
 * streamed with backpressure as it is written; never whole in memory or on disk.
 */
import { datasetFileName } from '../export/dataset-writer.js';
import { prepareExport, writeExport } from '../export/dataset-export.js';

import type { Route, ServerContext } from './route-table.js';
import type { Exchange } from './exchange.js';
import { readParamDocs } from './read-param-docs.js';

/**
 * Checks the request (answering its error before anything is written), then streams the zip. A
 * failure once the zip has begun cannot be answered: the connection is closed, so the client
 * sees an incomplete zip (never a complete-looking one), and the failure is logged.
 */
async function exportDataset(ex: Exchange, ctx: ServerContext): Promise<void> {
  const request = prepareExport(ex.searchParams());
  const response = ex.takeOver();
  const started = response.start(200, [
    ['Content-Type', 'application/zip'],
    ['Content-Disposition', `attachment; filename="${datasetFileName(request.format)}"`],
    ['Cache-Control', 'no-store'],
  ]);
  if (!started) return;
  const limits = { maxResponseBytes: ctx.config.maxListResponseBytes, maxScanRecords: ctx.config.maxListScanRecords };
  try {
    const summary = await writeExport(ctx.store, request, response, limits);
    ctx.log.info({ export: { format: request.format, ...summary } }, 'dataset export written');
  } catch (err) {
    ctx.log.error({ err }, 'dataset export failed after it began; connection closed');
    response.destroy();
  }
}

export const exportRoutes: Route[] = [
  {
    method: 'get',
    path: '/v2/export',
    gated: 'other',
    doc: {
      tag: 'events',
      summary: 'Export the events a query matches as a dataset zip',
      operationId: 'exportDataset',
      description:
        'Streams a zip of the matching events\' images and their annotations, newest event first: COCO (annotations.coco.json), '
        + 'YOLO (images/, labels/, data.yaml) or Label Studio (tasks.json with predictions). Detections are converted from the store\'s '
        + 'centre-based boxes (docs/API.md, "Dataset export"). A failure after the zip began closes the connection: a zip without its '
        + 'end records is incomplete.',
      parameters: readParamDocs('export'),
      responses: { 200: { description: 'The dataset zip.', content: { 'application/zip': { schema: { type: 'string', format: 'binary' } } } } },
      errors: {
        invalid_search_query: 'The query does not parse, or holds free text; the detail gives the column and the reason.',
        validation_failed: 'q missing, or an unknown format.',
      },
    },
    handler: exportDataset,
  },
];
