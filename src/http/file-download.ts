/**
 * File downloads with HTTP Range (README, "Using the store"), streamed from the blob segment with
 * backpressure: positioned reads of READ_CHUNK_BYTES, each chunk written once the client took
 * the previous one, the next read overlapping the wait. A file is never read whole into memory.
 */
import { AppError } from '../errors.js';
import type { FileEntry } from '../store/lmdb-env.js';
import type { BlobReader } from '../store/blob-reader.js';
import { downloadSafetyHeaders } from './download-headers.js';
import type { Exchange } from './exchange.js';
import { resolveRange } from './range.js';

const READ_CHUNK_BYTES = 1024 * 1024;

/**
 * Sends the bytes of `file` (whole, or the slice the Range header asks for).
 * @throws AppError range_not_satisfiable (416), or file_not_found (404, E9) when the bytes
 *   vanished under the index (the consistency pass will drop the entry), before anything is
 *   written; once streaming has begun a read failure closes the connection instead
 */
export async function sendFile(ex: Exchange, blobs: BlobReader, file: FileEntry, fileId: string): Promise<void> {
  const range = resolveRange(ex.headers.range, file.length);
  const first = range?.start ?? 0;
  const total = range ? range.end - range.start + 1 : file.length;
  const headers: [string, string][] = [
    ['Content-Type', file.contentType],
    ['Accept-Ranges', 'bytes'],
    ...downloadSafetyHeaders(file.contentType),
  ];
  if (range) headers.push(['Content-Range', `bytes ${range.start}-${range.end}/${file.length}`]);

  // Read the first chunk before writing the status, so a vanished segment still answers an error.
  let chunk = Buffer.allocUnsafe(Math.min(READ_CHUNK_BYTES, total));
  const firstRead = await blobs.read(file.segment, file.offset + first, chunk, chunk.length).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return -1;
    throw err;
  });
  if (firstRead !== chunk.length) throw new AppError('file_not_found', `File ${fileId} not found`);
  if (!ex.startResponse(range ? 206 : 200, headers, total)) return;

  let sent = 0; // bytes handed to the exchange
  try {
    for (;;) {
      const writable = ex.write(chunk);
      sent += chunk.length;
      if (sent >= total || ex.aborted) break;
      // A new buffer per chunk: the exchange may still hold the previous one.
      const length = Math.min(READ_CHUNK_BYTES, total - sent);
      const next = Buffer.allocUnsafe(length);
      const [read] = await Promise.all([blobs.read(file.segment, file.offset + first + sent, next, length), writable ? undefined : ex.writable()]);
      if (ex.aborted) return;
      if (read !== length) throw new Error(`segment ${file.segment} ended early`);
      chunk = next;
    }
    ex.end();
  } catch {
    ex.destroy();
  }
}
