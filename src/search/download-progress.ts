/**
 * Progress bar of the export download on a terminal. Drawn with cli-progress only when the target
 * stream is a TTY and the size is known, so piped or captured output (JSON mode, CI logs, MCP
 * stdio) never receives escape codes.
 */
import cliProgress from 'cli-progress';

/** Where a bar may go, such as `process.stderr`; only a TTY (a real stream) is drawn on. */
export interface ProgressStream {
  write(text: string): unknown;
  isTTY?: boolean;
}

export interface DownloadProgress {
  /** Adds `bytes` received. */
  advance(bytes: number): void;
  /** Removes the timer of the bar; call once, also on failure. */
  stop(): void;
}

/**
 * Starts a download progress bar on `stream`.
 * @param totalBytes the `Content-Length` of the download, if the server sent one
 * @returns a no-op tracker unless `stream` is a TTY and `totalBytes` is positive
 */
export function startDownloadProgress(stream: ProgressStream | undefined, label: string, totalBytes: number | undefined): DownloadProgress {
  if (!stream?.isTTY || totalBytes === undefined || !(totalBytes > 0)) return { advance: () => {}, stop: () => {} };
  const bar = new cliProgress.SingleBar({
    // A TTY is a real tty.WriteStream, which is all cli-progress and readline need.
    stream: stream as NodeJS.WritableStream,
    format: `${label} [{bar}] {percentage}% | {received} of {size}`,
    hideCursor: true,
    clearOnComplete: false,
  }, cliProgress.Presets.shades_classic);
  let received = 0;
  bar.start(totalBytes, 0, { received: formatBytes(0), size: formatBytes(totalBytes) });
  return {
    advance(bytes) {
      received += bytes;
      bar.update(received, { received: formatBytes(received) });
    },
    stop() {
      bar.stop();
    },
  };
}

/** `1536` -> `1.5 KiB`. */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
}
