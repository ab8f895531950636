/**
 * JSON request bodies, streamed with MAX_RECORD_SIZE_BYTES enforced while reading:
 * a body that declares or reaches more than the limit is answered 413 at once and the
 * connection closed, without buffering the rest. With a BodyHold (body-budget.ts), the body's
 * weight is reserved against MAX_INFLIGHT_BODY_BYTES before it is kept: the declared
 * Content-Length before the first byte, a chunked body's bytes as they arrive, and what parsing
 * each chunk will add (`parsedExtraBytes`) as it arrives, so a body that would not fit is refused
 * before it is parsed.
 */
import { AppError, validationError } from '../errors.js';
import { parseJsonText } from '../json-text.js';
import { parsedExtraBytes, type BodyHold } from './body-budget.js';
import type { Exchange } from './exchange.js';

/**
 * Starts reading the body of `ex`, whole. Must be called synchronously in the route handler (it
 * attaches `onBody`). Each chunk is copied: it is valid only during the callback.
 * @param limit most bytes accepted
 * @param hold where the body's weight is reserved (docs/OPERATIONS.md, "Memory"); the caller
 *   releases it once the request is over. Without one, nothing is reserved
 * @returns the body's bytes (empty for an empty body); the buffer is the body's own
 * @throws AppError record_too_large (413) past `limit`; body_budget_full (503, Retry-After) when
 *   `hold` cannot take the declared length or a chunk's weight; validation_failed (422) when the
 *   client disconnects before the body's end (then nothing is answered: the promise settles so
 *   that the request's hold is released)
 */
export function readBodyText(ex: Exchange, limit: number, hold?: BodyHold): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = ex.headers.contentLength;
    if (declared !== undefined && declared > limit) {
      reject(new AppError('record_too_large', `Record of ${declared} bytes exceeds the limit of ${limit} bytes`));
      return;
    }
    try {
      if (declared !== undefined) hold?.take(declared);
    } catch (err) {
      reject(err);
      return;
    }
    // With Content-Length known, chunks are copied once, straight into the body's buffer;
    // otherwise (chunked) they are kept and joined at the end.
    const preallocated = declared !== undefined ? Buffer.allocUnsafe(declared) : undefined;
    const chunks: Buffer[] = [];
    let received = 0;
    let done = false;
    const fail = (err: unknown) => {
      done = true;
      reject(err);
    };
    ex.onAbort(() => {
      if (!done) fail(validationError(['body'], 'Client disconnected before the body ended', 'value_error.incomplete'));
    });
    ex.onBody((view, isLast) => {
      if (done) return;
      if (received + view.length > (declared ?? limit)) {
        fail(new AppError('record_too_large', `Record exceeds the limit of ${limit} bytes`));
        return;
      }
      // A declared body's bytes are held already; what parsing adds is held as it arrives.
      const weight = view.length === 0 ? 0 : (preallocated ? 0 : view.length) + parsedExtraBytes(view);
      if (hold && weight > 0) {
        try {
          hold.take(weight);
        } catch (err) {
          fail(err);
          return;
        }
      }
      if (preallocated) view.copy(preallocated, received);
      else if (!isLast && view.length > 0) chunks.push(Buffer.from(view)); // the chunk's memory may be reused after this call
      received += view.length;
      if (!isLast) return;
      done = true;
      // `view` is valid only during this call: a body of one chunk is copied too.
      resolve(preallocated ? preallocated.subarray(0, received) : Buffer.concat([...chunks, view]));
    });
  });
}

/**
 * Reads the body of `ex` as readBodyText does, and parses it.
 * @returns the parsed JSON value; undefined for an empty body
 * @throws what readBodyText throws; AppError validation_failed (422) on malformed JSON
 */
export async function readJsonBody(ex: Exchange, limit: number, hold?: BodyHold): Promise<unknown> {
  return parseJsonText(await readBodyText(ex, limit, hold));
}
