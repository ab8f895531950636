/**
 * The progress line of an export download on a terminal (docs/API.md, "Dataset export", "CLI"):
 * images and bytes received and the rate, drawn with cli-progress. The size of an export is not
 * known before it ends (the zip is streamed as the query runs), so there is no bar or
 * percentage. Drawn only when the stream is a TTY, so piped or captured output never receives
 * escape codes.
 */
import cliProgress from 'cli-progress';
import { formatBytes } from '../search/download-progress.js';
import type { ProgressStream } from '../search/download-progress.js';

/** What the download tells the progress line. */
export interface ExportProgress {
  /** Adds `bytes` received; `images` is the count of images received so far. */
  advance(bytes: number, images: number): void;
  /** Draws the last state and removes the timer (call once, also on failure). */
  stop(): void;
}

/**
 * Starts the progress line on `stream`.
 * @returns a no-op tracker unless `stream` is a TTY
 */
export function startExportProgress(stream: ProgressStream | undefined, label: string): ExportProgress {
  if (!stream?.isTTY) return { advance: () => {}, stop: () => {} };
  const bar = new cliProgress.SingleBar({
    // A TTY is a real tty.WriteStream, which is all cli-progress and readline need.
    stream: stream as NodeJS.WritableStream,
    format: `${label} {images} images, {received} at {rate}`,
    hideCursor: true,
    clearOnComplete: false,
  });
  const started = Date.now();
  let received = 0;
  let images = 0;
  const payload = () => ({ images: images.toLocaleString('en-US'), received: formatBytes(received), rate: `${formatBytes(Math.round(received / Math.max((Date.now() - started) / 1000, 0.001)))}/s` });
  bar.start(1, 0, payload());
  return {
    advance(bytes, count) {
      received += bytes;
      images = count;
      bar.update(0, payload());
    },
    stop() {
      bar.update(0, payload());
      bar.stop();
    },
  };
}
