/**
 * JSON request bodies, streamed with MAX_RECORD_SIZE_BYTES enforced while reading:
 * a body that declares or reaches more than the limit is answered 413 at once and the
 * connection closed, without buffering the rest.
 */
import { AppError, validationError } from '../errors.js';
import type { Exchange } from './exchange.js';

/**
 * Starts reading the body of `ex`. Must be called synchronously in the route handler (it
 * attaches `onBody`). Each chunk is copied: it is valid only during the callback.
 * @param limit most bytes accepted
 * @returns the parsed JSON value; undefined for an empty body
 * @throws AppError record_too_large (413) past `limit`, validation_failed (422) on malformed JSON
 */
export function readJsonBody(ex: Exchange, limit: number): Promise<unknown> {
  return new Promise((resolve, reject) => {
    if (ex.headers.contentLength !== undefined && ex.headers.contentLength > limit) {
      reject(new AppError('record_too_large', `Record of ${ex.headers.contentLength} bytes exceeds the limit of ${limit} bytes`));
      return;
    }
    // With Content-Length known, chunks are copied once, straight into the body's buffer;
    // otherwise (chunked) they are kept and joined at the end.
    const declared = ex.headers.contentLength;
    const preallocated = declared !== undefined ? Buffer.allocUnsafe(declared) : undefined;
    const chunks: Buffer[] = [];
    let received = 0;
    let failed = false;
    ex.onBody((view, isLast) => {
      if (failed) return;
      if (received + view.length > (declared ?? limit)) {
        failed = true;
        reject(new AppError('record_too_large', `Record exceeds the limit of ${limit} bytes`));
        return;
      }
      if (preallocated) view.copy(preallocated, received);
      else if (!isLast) chunks.push(Buffer.from(view)); // the chunk's memory may be reused after this call
      received += view.length;
      if (!isLast) return;
      const body = preallocated ? preallocated.subarray(0, received) : chunks.length === 0 ? view : Buffer.concat([...chunks, view]);
      if (body.length === 0) {
        resolve(undefined);
        return;
      }
      try {
        resolve(JSON.parse(body.toString('utf8')));
      } catch (err) {
        reject(validationError(['body'], `Malformed JSON: ${(err as Error).message}`, 'value_error.jsondecode', err));
      }
    });
  });
}
