/**
 * The client side of `GET /v2/export` (docs/API.md, "Dataset export"): streams the zip into a
 * temporary file beside the target, checks it is a complete zip, and renames it into place, so
 * the target is either the whole export or as it was. The store is not trusted to stop: the
 * download fails past its declared `Content-Length` and before it would fill the target's file
 * system (src/search/download-limits.ts; docs/SECURITY.md, "A store or search server the CLI talks to").
 */
import { rmSync } from 'node:fs';
import { open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { StoreClient } from '../client/store-client.js';
import { boundedDownload, declaredLength, OversizeError } from '../search/download-limits.js';
import type { ProgressStream } from '../search/download-progress.js';
import { ExportCliError } from './export-cli-error.js';
import type { ExportFormat } from './export-types.js';
import { startExportProgress } from './export-progress.js';
import type { CleanupSteps } from './interrupt-cleanup.js';
import { ZipEntryCounter } from './zip-entry-counter.js';
import { zipSummary } from './zip-summary.js';
import type { ZipSummary } from './zip-summary.js';

export interface ExportDownload {
  query: string;
  format: ExportFormat;
  /** Where the zip goes; replaced only once the download is complete. */
  output: string;
  /** Where the progress line is drawn (only on a TTY). */
  progress?: ProgressStream;
  /**
   * Where the removal of the temporary file and the stop of the progress line (which restores
   * the terminal's cursor and line wrap) are registered while the download runs, for an
   * interruption (SIGINT, SIGTERM).
   */
  cleanup?: CleanupSteps;
}

/**
 * Downloads one export from the store `client` asks.
 * @returns the zip's path and its summary (entries, images, bytes)
 * @throws StoreRequestError for a refusal (a 400's detail is the query error with its caret),
 *   StoreNetworkError when the store does not answer; ExportCliError (exit code 1) for a body
 *   that ends before a complete zip, one longer than its `Content-Length` or than the free space
 *   beside `output` allows (less a reserve: download-limits.ts), or a failed write; the temporary
 *   file is then removed and `output` untouched
 */
export async function downloadExport(client: StoreClient, request: ExportDownload): Promise<{ zipPath: string; summary: ZipSummary }> {
  const params = new URLSearchParams({ q: request.query, format: request.format });
  const response = await client.get(`/v2/export?${params}`);
  if (response.body === null) throw new ExportCliError('The store answered without a body', 1, 'Check --store: it must be the event store\'s base URL.');

  const zipPath = path.resolve(request.output);
  const temporary = path.join(path.dirname(zipPath), `.${path.basename(zipPath)}.${process.pid}-${Date.now()}.partial`);
  const progress = startExportProgress(request.progress, `Export (${request.format})`);
  const unregister = [
    request.cleanup?.add(() => progress.stop()),
    request.cleanup?.add(() => rmSync(temporary, { force: true })),
  ];
  try {
    const entries = new ZipEntryCounter();
    const count = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        entries.push(chunk);
        progress.advance(chunk.length, entries.images);
        callback(null, chunk);
      },
    });
    const bound = await boundedDownload({
      directory: path.dirname(zipPath), declared: declaredLength(response.headers), sender: 'The store',
      senderHint: 'Check --store: it must be the event store\'s base URL; nothing was kept.',
    });
    // Created before the body flows: a write stream opens its file lazily, so a body failing
    // at once could reject the pipeline before that open, and the file would appear after the
    // `rm` below. The stream closes the handle.
    const file = await open(temporary, 'wx');
    await pipeline(Readable.fromWeb(response.body as import('node:stream/web').ReadableStream), bound, count, file.createWriteStream());
    const summary = await zipSummary(temporary).catch((err: Error) => {
      throw new ExportCliError(`The export is not a complete zip: ${err.message}`, 1, 'The store stopped before the end of the export; retry, and check the store\'s log.', { cause: err });
    });
    await rename(temporary, zipPath);
    return { zipPath, summary };
  } catch (err) {
    await rm(temporary, { force: true });
    // Refused before the body flowed (its declared length): the connection is let go. Once piped,
    // the body is locked and the pipeline has destroyed it.
    if (!response.body.locked) await response.body.cancel().catch(() => undefined);
    if (err instanceof ExportCliError) throw err;
    if (err instanceof OversizeError) throw new ExportCliError(err.message, 1, err.hint, { cause: err });
    throw new ExportCliError(`Export download failed: ${(err as Error).message}`, 1, 'Retry; check the store\'s log and the free space beside the output file.', { cause: err });
  } finally {
    progress.stop();
    for (const remove of unregister) remove?.();
  }
}
