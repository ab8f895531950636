/** A Node Writable as the dataset zip's ByteSink (src/export/dataset-zip.ts), for tests that write a zip to a file or a buffer. */
import type { Writable } from 'node:stream';
import type { ByteSink } from '../../src/export/dataset-zip.js';
import { drained } from '../../src/export/stream-drain.js';

/**
 * A sink writing to `stream` (a file, a socket). The stream's errors are its owner's to handle
 * (e.g. with `finished`); a destroyed stream reads as `aborted`.
 */
export function writableSink(stream: Writable): ByteSink {
  return {
    get aborted() {
      return stream.destroyed && !stream.writableFinished;
    },
    write: (chunk) => stream.write(chunk),
    writable: () => drained(stream),
    end: () => stream.end(),
  };
}
