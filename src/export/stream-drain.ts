/** Waiting on a Node Writable's backpressure (Node's stream documentation, "Event: 'drain'"). */
import type { Writable } from 'node:stream';

/**
 * Resolves on the stream's next `drain`, or at once when it needs none; also on `error` or
 * `close`, so a failed or closed stream never leaves the writer waiting. No listener is left
 * behind. The stream's error is its owner's to report.
 */
export function drained(stream: Writable): Promise<void> {
  return new Promise((resolve) => {
    if (!stream.writableNeedDrain || stream.destroyed) return resolve();
    const done = (): void => {
      for (const event of ['drain', 'error', 'close']) stream.off(event, done);
      resolve();
    };
    for (const event of ['drain', 'error', 'close']) stream.on(event, done);
  });
}
