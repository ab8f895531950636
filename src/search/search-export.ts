/**
 * Search export (SDK `searchExport`; docs/SEARCH.md, "The hosted API"):
 * `POST /:workspace/search/export` with `{query, format, dataset?, annotationGroup?, name?}`
 * answers 202 `{link: exportId}`; `GET /:workspace/search/export/:exportId` is polled until
 * `{ready: true, link}`; the zip at `link` is streamed to disk and extracted unless `extract` is
 * false. Neither is trusted to stop: the download is bounded by its `Content-Length` and the free
 * space beside it (download-limits.ts), the extraction refuses a zip bomb (zip-extract.ts).
 */
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  SearchArgumentError, SearchError, SearchExportTimeoutError, SearchNetworkError, SearchResponseError,
} from './errors.js';
import { boundedDownload, declaredLength } from './download-limits.js';
import { startDownloadProgress } from './download-progress.js';
import { validateQuery } from './request-validation.js';
import type { HostedTransport } from './transport.js';
import type { SearchExportParams, SearchExportResult } from './types.js';
import { extractZip } from './zip-extract.js';

const DEFAULT_FORMAT = 'coco';
const DEFAULT_POLL_INTERVAL_MS = 2000;
const DEFAULT_TIMEOUT_MS = 30 * 60 * 1000;

/**
 * Checks export parameters locally.
 * @throws SearchArgumentError when `dataset` and `annotationGroup` are both given (the SDK's
 *   ValueError) or `format` is empty; QuerySyntaxError for a malformed query
 */
export function validateExportParams(params: SearchExportParams): void {
  validateQuery(params.query);
  if (params.dataset !== undefined && params.annotationGroup !== undefined) {
    throw new SearchArgumentError('dataset and annotationGroup cannot be combined: pass one of them');
  }
  if (params.format !== undefined && params.format.trim() === '') throw new SearchArgumentError('format must not be empty');
}

/**
 * Runs the whole export flow in `workspace`.
 * @returns where the export landed; see `SearchExportResult`
 * @throws as `validateExportParams` (nothing sent); the transport's errors for hosted failures;
 *   SearchResponseError for an answer without the expected `link`, or a corrupt zip;
 *   SearchExportTimeoutError when not ready within `timeoutMs`
 */
export async function searchExport(transport: HostedTransport, workspace: string, params: SearchExportParams): Promise<SearchExportResult> {
  validateExportParams(params);
  const format = params.format ?? DEFAULT_FORMAT;
  const base = `/${encodeURIComponent(workspace)}/search/export`;
  const started = (await transport.json('POST', base, {
    query: params.query, format, dataset: params.dataset, annotationGroup: params.annotationGroup, name: params.name,
  })) as { link?: unknown } | null;
  const exportId = started?.link;
  if (typeof exportId !== 'string' || exportId === '') throw new SearchResponseError(`Export answer lacks link (POST ${base})`);

  const link = await pollUntilReady(transport, `${base}/${encodeURIComponent(exportId)}`, params);
  const location = path.resolve(params.location ?? `search-export-${format}`);
  await mkdir(location, { recursive: true });
  const zipPath = path.join(location, `${safeFileName(params.name ?? exportId)}.zip`);
  await downloadTo(transport, link, zipPath, params.progress ?? process.stderr);
  if (params.extract === false) return { exportId, location, zipPath, files: [] };
  const files = await extractZip(zipPath, location, { removeArchive: true });
  return { exportId, location, zipPath: null, files };
}

async function pollUntilReady(transport: HostedTransport, statusPath: string, params: SearchExportParams): Promise<string> {
  const deadline = Date.now() + (params.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  for (;;) {
    const status = (await transport.json('GET', statusPath)) as { ready?: unknown; link?: unknown } | null;
    if (status?.ready === true) {
      if (typeof status.link !== 'string' || status.link === '') throw new SearchResponseError(`Ready export lacks link (GET ${statusPath})`);
      return status.link;
    }
    if (Date.now() >= deadline) {
      throw new SearchExportTimeoutError(`Export was not ready after ${Math.round((params.timeoutMs ?? DEFAULT_TIMEOUT_MS) / 1000)} s (GET ${statusPath})`);
    }
    await transport.sleep(params.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS);
  }
}

/** Streams the zip to `<zipPath>.part`, then renames it, so a failed download leaves no zip. */
async function downloadTo(transport: HostedTransport, link: string, zipPath: string, progressStream: SearchExportParams['progress']): Promise<void> {
  const response = await transport.download(link);
  if (response.body === null) throw new SearchResponseError('Export download has no body');
  const length = Number(response.headers.get('content-length') ?? Number.NaN);
  const progress = startDownloadProgress(progressStream, `Downloading ${path.basename(zipPath)}`, Number.isFinite(length) ? length : undefined);
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      progress.advance(chunk.length);
      callback(null, chunk);
    },
  });
  const partPath = `${zipPath}.part`;
  try {
    // Bounded by its Content-Length and the free space beside it (download-limits.ts; docs/SECURITY.md).
    const bound = await boundedDownload({
      directory: path.dirname(zipPath), declared: declaredLength(response.headers), sender: 'The export download',
      senderHint: 'The server sent more than it declared; retry, and check --base-url (or SEARCH_BASE_URL).',
    });
    await pipeline(Readable.fromWeb(response.body as import('node:stream/web').ReadableStream), bound, counter, createWriteStream(partPath));
    await rename(partPath, zipPath);
  } catch (error) {
    await rm(partPath, { force: true });
    if (!response.body.locked) await response.body.cancel().catch(() => undefined);
    const isFileSystemError = typeof (error as NodeJS.ErrnoException).code === 'string';
    if (error instanceof SearchError || isFileSystemError) throw error;
    throw new SearchNetworkError(`Export download broke off: ${(error as Error).message}`, { cause: error });
  } finally {
    progress.stop();
  }
}

/** A file name made of letters, digits, `.`, `_` and `-` only. */
function safeFileName(name: string): string {
  const safe = name.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[.-]+/, '');
  return safe === '' ? 'search-export' : safe;
}
