/**
 * Streamed multipart uploads (docs/API.md, "Drafts and attachments"): the request body is fed to
 * busboy chunk by chunk (each chunk copied: it is valid only during the callback), the `file` part
 * goes to a staging file as it arrives, the socket is paused while busboy or the disk is behind,
 * and the size limit is enforced per chunk. Nothing is ever buffered whole.
 */
import busboy from 'busboy';
import { AppError, fromDiskError } from '../errors.js';
import type { StagingFile } from '../store/index.js';
import type { Exchange } from './exchange.js';

/** A complete upload: the staged `file` part (not yet finished) and the text fields. */
export interface ReceivedUpload {
  staging: StagingFile;
  fields: Record<string, string>;
}

/** Room for multipart boundaries and part headers above the file size limit (bytes). */
const ENVELOPE_BYTES = 64 * 1024;

/**
 * Receives the multipart body of `ex`. Call synchronously in the route handler.
 * @param openStaging makes the staging file the `file` part goes to (src/events/attach-file.ts `newStagingFile`)
 * @param maxFileBytes largest accepted `file` part (bytes)
 * @throws AppError malformed_multipart (400) for a body that is not multipart, is malformed, or
 *   has no, an empty or more than one `file` part; upload_too_large (413) past `maxFileBytes`.
 *   On any failure and on client abort, the staging file is removed.
 */
export function receiveUpload(ex: Exchange, openStaging: () => StagingFile, maxFileBytes: number): Promise<ReceivedUpload> {
  return new Promise((resolve, reject) => {
    const tooLarge = () => new AppError('upload_too_large', `Upload exceeds the limit of ${maxFileBytes} bytes`);
    if (!/^multipart\/form-data\b/i.test(ex.headers.contentType)) {
      reject(new AppError('malformed_multipart', 'Expected a multipart/form-data body'));
      return;
    }
    if (ex.headers.contentLength !== undefined && ex.headers.contentLength > maxFileBytes + ENVELOPE_BYTES) {
      reject(tooLarge());
      return;
    }
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: { 'content-type': ex.headers.contentType },
        limits: { files: 4, fields: 8, parts: 12, fieldSize: 64 * 1024, headerPairs: 16 },
        highWaterMark: 1024 * 1024,
        fileHwm: 1024 * 1024,
      });
    } catch (err) {
      reject(new AppError('malformed_multipart', `Malformed multipart body: ${(err as Error).message}`, { cause: err }));
      return;
    }
    let staging: StagingFile | undefined;
    let fileParts = 0;
    let settled = false;
    const fields: Record<string, string> = {};

    const fail = (err: AppError) => {
      if (settled) return;
      settled = true;
      parser.destroy();
      // Answer only once the staging file is gone: nothing of a refused upload outlives it.
      void Promise.resolve(staging?.discard()).finally(() => reject(err));
    };
    ex.onAbort(() => fail(new AppError('malformed_multipart', 'Client disconnected')));

    parser.on('file', (name, stream) => {
      // busboy also fails the part's stream on a truncated body; the parser's error answers.
      stream.on('error', () => undefined);
      if (name !== 'file') {
        stream.resume();
        return;
      }
      if (++fileParts > 1 || settled) {
        stream.resume();
        fail(new AppError('malformed_multipart', 'More than one file part'));
        return;
      }
      const file = openStaging();
      staging = file;
      stream.on('data', (chunk: Buffer) => {
        if (settled) return;
        if (file.bytes + chunk.length > maxFileBytes) {
          fail(tooLarge());
          return;
        }
        if (!file.write(chunk)) {
          stream.pause();
          void file.drained().then(() => (file.error ? fail(fromDiskError(file.error)) : stream.resume()));
        }
      });
    });
    parser.on('field', (name, value, info) => {
      if (info.valueTruncated) fail(new AppError('malformed_multipart', `Field ${name} is too long`));
      else fields[name] = value;
    });
    for (const limit of ['partsLimit', 'filesLimit', 'fieldsLimit'] as const) {
      parser.on(limit, () => fail(new AppError('malformed_multipart', 'Too many parts')));
    }
    parser.on('error', (err: Error) => fail(new AppError('malformed_multipart', `Malformed multipart body: ${err.message}`, { cause: err })));
    parser.on('close', () => {
      if (settled) return;
      if (!staging) return fail(new AppError('malformed_multipart', 'Missing file part'));
      if (staging.bytes === 0) return fail(new AppError('malformed_multipart', 'Empty file part'));
      settled = true;
      resolve({ staging, fields });
    });

    ex.onBody((chunk, isLast) => {
      if (settled) return;
      const flowing = parser.write(Buffer.from(chunk));
      if (isLast) parser.end();
      else if (!flowing && !ex.aborted) {
        ex.pauseBody();
        parser.once('drain', () => {
          if (!ex.aborted && !settled) ex.resumeBody();
        });
      }
    });
  });
}
