/**
 * The progress line of an export download on a terminal (docs/API.md, "Dataset export", "CLI"):
 * bytes received and the rate, drawn with cli-progress. The size of an export is not known
 * before it ends (the zip is streamed as the query runs), so there is no bar or percentage.
 * Drawn only when the stream is a TTY, so piped or captured output never receives escape codes.
 */
import cliProgress from 'cli-progress';
import { formatBytes } from '../search/download-progress.js';
import type { DownloadProgress, ProgressStream } from '../search/download-progress.js';

/**
 * Starts the progress line on `stream`.
 * @returns a no-op tracker unless `stream` is a TTY; `advance(bytes)` adds bytes received,
 *   `stop()` draws the last state and removes the timer (call once, also on failure)
 */
export function startExportProgress(stream: ProgressStream | undefined, label: string): DownloadProgress {
  if (!stream?.isTTY) return { advance: () => {}, stop: () => {} };
  const bar = new cliProgress.SingleBar({
    // A TTY is a real tty.WriteStream, which is all cli-progress and readline need.
    stream: stream as NodeJS.WritableStream,
    format: `${label} {received} at {rate}`,
    hideCursor: true,
    clearOnComplete: false,
  });
  const started = Date.now();
  let received = 0;
  const payload = () => ({ received: formatBytes(received), rate: `${formatBytes(Math.round(received / Math.max((Date.now() - started) / 1000, 0.001)))}/s` });
  bar.start(1, 0, payload());
  return {
    advance(bytes) {
      received += bytes;
      bar.update(0, payload());
    },
    stop() {
      bar.update(0, payload());
      bar.stop();
    },
  };
}
