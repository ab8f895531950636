/**
 * The client side of `GET /v2/export` (docs/API.md, "Dataset export"): streams the zip into a
 * temporary file beside the target, checks it is a complete zip, and renames it into place, so
 * the target is either the whole export or as it was.
 */
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ProgressStream } from '../search/download-progress.js';
import { ExportCliError } from './export-cli-error.js';
import type { ExportFormat } from './export-types.js';
import { startExportProgress } from './export-progress.js';
import { zipSummary } from './zip-summary.js';
import type { ZipSummary } from './zip-summary.js';

export interface ExportDownload {
  /** Base URL of the store, e.g. `http://localhost:8001`. */
  storeUrl: string;
  query: string;
  format: ExportFormat;
  /** Sent as `X-API-Key` when set. */
  apiKey?: string;
  /** Where the zip goes; replaced only once the download is complete. */
  output: string;
  /** Where the progress line is drawn (only on a TTY). */
  progress?: ProgressStream;
}

/**
 * Downloads one export.
 * @returns the zip's path and its summary (entries, images, bytes)
 * @throws ExportCliError: exit code 2 for a 401; 1 for another refusal (its message the store's
 *   `detail`, e.g. the query error with a caret under the bad column), a network failure, or a
 *   body that ends before a complete zip; the temporary file is removed and `output` untouched
 */
export async function downloadExport(request: ExportDownload): Promise<{ zipPath: string; summary: ZipSummary }> {
  const url = new URL('v2/export', request.storeUrl.endsWith('/') ? request.storeUrl : `${request.storeUrl}/`);
  url.searchParams.set('q', request.query);
  url.searchParams.set('format', request.format);
  const response = await fetch(url, { headers: request.apiKey ? { 'X-API-Key': request.apiKey } : {} }).catch((err: Error) => {
    throw new ExportCliError(`Store unreachable at ${request.storeUrl}: ${err.cause instanceof Error ? err.cause.message : err.message}`, 1, 'Check --store (or STORE_URL) and that the store is running.', { cause: err });
  });
  if (!response.ok || response.body === null) throw await refusal(response);

  const zipPath = path.resolve(request.output);
  const temporary = path.join(path.dirname(zipPath), `.${path.basename(zipPath)}.${process.pid}-${Date.now()}.partial`);
  const progress = startExportProgress(request.progress, `Export (${request.format})`);
  try {
    const count = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        progress.advance(chunk.length);
        callback(null, chunk);
      },
    });
    await pipeline(Readable.fromWeb(response.body as import('node:stream/web').ReadableStream), count, createWriteStream(temporary));
    const summary = await zipSummary(temporary).catch((err: Error) => {
      throw new ExportCliError(`The export is not a complete zip: ${err.message}`, 1, 'The store stopped before the end of the export; retry, and check the store\'s log.', { cause: err });
    });
    await rename(temporary, zipPath);
    return { zipPath, summary };
  } catch (err) {
    await rm(temporary, { force: true });
    if (err instanceof ExportCliError) throw err;
    throw new ExportCliError(`Export download failed: ${(err as Error).message}`, 1, 'Retry; check the store\'s log and the free space beside the output file.', { cause: err });
  } finally {
    progress.stop();
  }
}

/** The error of a non-2xx answer, its message the store's `detail`. */
async function refusal(response: Response): Promise<ExportCliError> {
  const text = await response.text().catch(() => '');
  let detail: unknown = text;
  try {
    detail = (JSON.parse(text) as { detail?: unknown }).detail ?? text;
  } catch {
    // not JSON: the text as it came
  }
  const message = typeof detail === 'string'
    ? detail
    : Array.isArray(detail) ? detail.map((issue: { msg?: unknown }) => String(issue.msg ?? JSON.stringify(issue))).join('; ') : JSON.stringify(detail);
  const shown = message === '' ? `HTTP ${response.status}` : message;
  if (response.status === 401) return new ExportCliError(shown, 2, 'Pass --api-key or set API_KEY to the store\'s API_KEY.');
  if (response.status === 400) return new ExportCliError(shown, 1, 'Fix the query at the caret.');
  return new ExportCliError(`The store answered ${response.status}: ${shown}`, 1, 'Check --store and the store\'s log.');
}
