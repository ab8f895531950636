/**
 * File downloads with HTTP Range (spec B, Download rules), streamed from the blob segment with
 * backpressure: positioned reads of READ_CHUNK_BYTES, `tryEnd` and one `onWritable` handler per
 * response reading the pending chunk from shared state (DESIGN.md, "uWebSockets.js pitfalls").
 * A file is never read whole into memory.
 */
import { AppError } from '../errors.js';
import type { FileEntry } from '../store/lmdb-env.js';
import type { BlobReader } from '../store/blob-reader.js';
import { statusLine, type Exchange } from './exchange.js';
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
  ];
  if (range) headers.push(['Content-Range', `bytes ${range.start}-${range.end}/${file.length}`]);

  // Read the first chunk before writing the status, so a vanished segment still answers an error.
  let chunk = Buffer.allocUnsafe(Math.min(READ_CHUNK_BYTES, total));
  let chunkStart = 0; // offset of `chunk` within the response body
  const firstRead = await blobs.read(file.segment, file.offset + first, chunk, chunk.length).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return -1;
    throw err;
  });
  if (firstRead !== chunk.length) throw new AppError('file_not_found', `File ${fileId} not found`);
  if (ex.aborted) return;
  ex.done = true;
  const { res } = ex;

  let reading = false;
  const pump = async (): Promise<void> => {
    // Called when the current chunk has been fully handed to uWS: read and offer the next one.
    reading = true;
    try {
      while (!ex.aborted) {
        const nextStart = chunkStart + chunk.length;
        if (nextStart >= total) return;
        const length = Math.min(READ_CHUNK_BYTES, total - nextStart);
        const next = chunk.length === length ? chunk : Buffer.allocUnsafe(length);
        const read = await blobs.read(file.segment, file.offset + first + nextStart, next, length);
        if (ex.aborted) return;
        if (read !== length) throw new Error(`segment ${file.segment} ended early`);
        chunk = next;
        chunkStart = nextStart;
        let accepted = false;
        res.cork(() => {
          [accepted] = res.tryEnd(chunk, total);
        });
        if (!accepted) return; // onWritable resumes
      }
    } catch {
      if (!ex.aborted) res.close();
    } finally {
      reading = false;
    }
  };

  res.onWritable((offset) => {
    if (reading) return true;
    const [accepted, finished] = res.tryEnd(chunk.subarray(offset - chunkStart), total);
    if (accepted && !finished) void pump();
    return accepted;
  });

  let accepted = false;
  let finished = false;
  res.cork(() => {
    res.writeStatus(statusLine(range ? 206 : 200));
    for (const [name, value] of headers) res.writeHeader(name, value);
    [accepted, finished] = res.tryEnd(chunk, total);
  });
  if (accepted && !finished) await pump();
}
