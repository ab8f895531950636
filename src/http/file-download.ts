/**
 * File downloads with HTTP Range (docs/API.md, "Downloads"; RFC 9110, section 14), streamed from
 * the blob segment with backpressure: positioned reads of READ_CHUNK_BYTES into pooled buffers,
 * each chunk written once the client took the previous one, the next read overlapping the wait.
 * A file is never read whole into memory; a buffer goes back to the pool once the HTTP engine
 * let it go (ResponseStream.write's `released`).
 */
import { AppError } from '../errors.js';
import type { StoredFile } from '../store/index.js';
import { BufferPool } from './buffer-pool.js';
import { downloadHeaders } from './download-headers.js';
import type { Exchange } from './exchange.js';
import { resolveRange } from './range.js';

const READ_CHUNK_BYTES = 1024 * 1024;
/**
 * Buffers kept for reuse: two per download in flight (one written, one read into) for eight
 * concurrent downloads; a busier moment allocates more, and they are dropped when given back.
 */
const MAX_POOLED_BUFFERS = 16;
const pool = new BufferPool(READ_CHUNK_BYTES, MAX_POOLED_BUFFERS);

/** Reads `length` bytes of `file` at `position` (bytes into the file) into a pooled buffer. */
async function readChunk(file: StoredFile, position: number, length: number): Promise<{ buffer: Buffer; read: number }> {
  const buffer = pool.acquire();
  try {
    return { buffer, read: await file.read(position, buffer, length) };
  } catch (err) {
    pool.release(buffer);
    throw err;
  }
}

/**
 * Sends the bytes of `file` (whole, or the slice the Range header asks for), taking the response
 * of `ex` over (Exchange.takeOver).
 * @throws AppError range_not_satisfiable (416), or file_not_found (404) when the bytes
 *   vanished under the index (the consistency pass will drop the entry), before anything is
 *   written; once streaming has begun a read failure closes the connection instead
 */
export async function sendFile(ex: Exchange, file: StoredFile): Promise<void> {
  const range = resolveRange(ex.headers.range, file.size);
  const first = range?.start ?? 0;
  const total = range ? range.end - range.start + 1 : file.size;
  const headers: [string, string][] = [...downloadHeaders(file.contentType), ['Accept-Ranges', 'bytes']];
  if (range) headers.push(['Content-Range', `bytes ${range.start}-${range.end}/${file.size}`]);

  // Read the first chunk before writing the status, so a vanished segment still answers an error.
  let length = Math.min(READ_CHUNK_BYTES, total);
  const vanished = (cause?: unknown) => new AppError('file_not_found', `File ${file.id} not found`, { cause });
  let chunk = await readChunk(file, first, length).catch((err: NodeJS.ErrnoException) => {
    throw err.code === 'ENOENT' ? vanished(err) : err;
  });
  if (chunk.read !== length) {
    pool.release(chunk.buffer);
    throw vanished();
  }
  const response = ex.takeOver();
  if (!response.start(range ? 206 : 200, headers, total)) {
    pool.release(chunk.buffer);
    return;
  }

  let sent = 0; // bytes handed to the exchange
  try {
    for (;;) {
      const { buffer } = chunk;
      const writable = response.write(buffer.subarray(0, length), () => pool.release(buffer));
      sent += length;
      if (sent >= total || response.aborted) break;
      // The next chunk goes into another buffer: the exchange may still hold this one.
      length = Math.min(READ_CHUNK_BYTES, total - sent);
      const [next] = await Promise.all([readChunk(file, first + sent, length), writable ? undefined : response.writable()]);
      chunk = next;
      if (response.aborted || next.read !== length) {
        pool.release(next.buffer);
        if (response.aborted) return;
        throw new Error(`file ${file.id} ended early in the log`);
      }
    }
    response.end();
  } catch {
    response.destroy();
  }
}
