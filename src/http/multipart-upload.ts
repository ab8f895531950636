/**
 * Streamed multipart uploads (docs/API.md, "Drafts and attachments"): the request body is fed to
 * busboy chunk by chunk (each chunk copied: it is valid only during the callback), the `file` part
 * goes to a staging file as it arrives, the socket is paused while busboy or the disk is behind,
 * and the size limit is enforced per chunk. Nothing is ever buffered whole.
 */
import type { Readable } from 'node:stream';
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

/** One upload under way: busboy, what its parts gave so far, and whether the promise is settled. */
interface UploadInProgress {
  readonly parser: busboy.Busboy;
  /** The text fields received so far. */
  readonly fields: Record<string, string>;
  /** The staging file of the `file` part, once that part began. */
  staging: StagingFile | undefined;
  /** `file` parts seen (more than one is refused). */
  fileParts: number;
  /** The promise is resolved or rejected: the rest of the body is ignored. */
  settled: boolean;
  /** Rejects with `err` once the staging file is removed; only the first failure counts. */
  readonly fail: (err: AppError) => void;
}

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
    const refused = headProblem(ex, maxFileBytes);
    if (refused) {
      reject(refused);
      return;
    }
    let parser: busboy.Busboy;
    try {
      parser = openParser(ex.headers.contentType);
    } catch (err) {
      reject(err);
      return;
    }
    const upload = startUpload(parser, reject);
    ex.onAbort(() => upload.fail(new AppError('malformed_multipart', 'Client disconnected')));
    listenToParts(upload, openStaging, maxFileBytes, resolve);
    feedParser(ex, upload);
  });
}

/** The refusal of a `file` part past `maxFileBytes` (bytes): upload_too_large (413). */
function tooLarge(maxFileBytes: number): AppError {
  return new AppError('upload_too_large', `Upload exceeds the limit of ${maxFileBytes} bytes`);
}

/**
 * What the request's head alone refuses, before any body is read: a Content-Type other than
 * multipart/form-data (malformed_multipart), a Content-Length past `maxFileBytes` and the
 * envelope (upload_too_large); undefined to go on.
 */
function headProblem(ex: Exchange, maxFileBytes: number): AppError | undefined {
  if (!/^multipart\/form-data\b/i.test(ex.headers.contentType)) {
    return new AppError('malformed_multipart', 'Expected a multipart/form-data body');
  }
  if (ex.headers.contentLength !== undefined && ex.headers.contentLength > maxFileBytes + ENVELOPE_BYTES) {
    return tooLarge(maxFileBytes);
  }
  return undefined;
}

/**
 * A busboy parser for a body of `contentType`, with its part limits.
 * @throws AppError malformed_multipart (400) when busboy refuses the Content-Type (no boundary)
 */
function openParser(contentType: string): busboy.Busboy {
  try {
    return busboy({
      headers: { 'content-type': contentType },
      limits: { files: 4, fields: 8, parts: 12, fieldSize: 64 * 1024, headerPairs: 16 },
      highWaterMark: 1024 * 1024,
      fileHwm: 1024 * 1024,
    });
  } catch (err) {
    throw new AppError('malformed_multipart', `Malformed multipart body: ${(err as Error).message}`, { cause: err });
  }
}

/** The state of an upload just begun on `parser`; its `fail` stops the parser and rejects with `reject`. */
function startUpload(parser: busboy.Busboy, reject: (err: AppError) => void): UploadInProgress {
  const upload: UploadInProgress = {
    parser,
    fields: {},
    staging: undefined,
    fileParts: 0,
    settled: false,
    fail: (err) => {
      if (upload.settled) return;
      upload.settled = true;
      parser.destroy();
      // Answer only once the staging file is gone: nothing of a refused upload outlives it.
      void Promise.resolve(upload.staging?.discard()).finally(() => reject(err));
    },
  };
  return upload;
}

/**
 * Listens to the parser's parts, limits and end: the `file` part is staged, text fields kept,
 * and at the end `resolve` gets both, unless no or an empty `file` part came (malformed_multipart).
 */
function listenToParts(upload: UploadInProgress, openStaging: () => StagingFile, maxFileBytes: number, resolve: (received: ReceivedUpload) => void): void {
  const { parser, fields, fail } = upload;
  parser.on('file', (name, stream) => stageFilePart(upload, name, stream, openStaging, maxFileBytes));
  parser.on('field', (name, value, info) => {
    if (info.valueTruncated) fail(new AppError('malformed_multipart', `Field ${name} is too long`));
    else fields[name] = value;
  });
  for (const limit of ['partsLimit', 'filesLimit', 'fieldsLimit'] as const) {
    parser.on(limit, () => fail(new AppError('malformed_multipart', 'Too many parts')));
  }
  parser.on('error', (err: Error) => fail(new AppError('malformed_multipart', `Malformed multipart body: ${err.message}`, { cause: err })));
  parser.on('close', () => {
    if (upload.settled) return;
    const { staging } = upload;
    if (!staging) return fail(new AppError('malformed_multipart', 'Missing file part'));
    if (staging.bytes === 0) return fail(new AppError('malformed_multipart', 'Empty file part'));
    upload.settled = true;
    resolve({ staging, fields });
  });
}

/**
 * Writes part `name`'s `stream` to a staging file when it is the first `file` part, pausing it
 * while the disk is behind; other parts are read and dropped. A second `file` part is refused
 * (malformed_multipart), as is a part past `maxFileBytes` (upload_too_large) or a failed write.
 */
function stageFilePart(upload: UploadInProgress, name: string, stream: Readable, openStaging: () => StagingFile, maxFileBytes: number): void {
  // busboy also fails the part's stream on a truncated body; the parser's error answers.
  stream.on('error', () => undefined);
  if (name !== 'file') {
    stream.resume();
    return;
  }
  if (++upload.fileParts > 1 || upload.settled) {
    stream.resume();
    upload.fail(new AppError('malformed_multipart', 'More than one file part'));
    return;
  }
  const file = openStaging();
  upload.staging = file;
  stream.on('data', (chunk: Buffer) => {
    if (upload.settled) return;
    if (file.bytes + chunk.length > maxFileBytes) {
      upload.fail(tooLarge(maxFileBytes));
      return;
    }
    if (!file.write(chunk)) {
      stream.pause();
      void file.drained().then(() => (file.error ? upload.fail(fromDiskError(file.error)) : stream.resume()));
    }
  });
}

/** Feeds `ex`'s body to the parser chunk by chunk (each copied), pausing the socket while busboy is behind. */
function feedParser(ex: Exchange, upload: UploadInProgress): void {
  const { parser } = upload;
  ex.onBody((chunk, isLast) => {
    if (upload.settled) return;
    const flowing = parser.write(Buffer.from(chunk));
    if (isLast) parser.end();
    else if (!flowing && !ex.aborted) {
      ex.pauseBody();
      parser.once('drain', () => {
        if (!ex.aborted && !upload.settled) ex.resumeBody();
      });
    }
  });
}
