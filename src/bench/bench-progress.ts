/**
 * The bench's progress bar on a terminal, drawn by cli-progress as the export download's is
 * (src/search/download-progress.ts): only when stderr is a TTY, so piped or captured output never
 * receives escape codes. It moves by the plan's seconds, its label the step under way.
 */
import cliProgress from 'cli-progress';

/** Where the bar may go; only a TTY is drawn on. */
export interface ProgressStream {
  write(text: string): unknown;
  isTTY?: boolean;
}

/** A bar: moved by `update`, removed by `stop` (call once, also on failure). */
export interface BenchProgress {
  /** A step `label` starts, `plannedSecondsDone` into the plan, `spanSeconds` long: the bar moves through it by the clock. */
  update(label: string, plannedSecondsDone: number, spanSeconds: number): void;
  stop(): void;
}

/** How often the bar moves within a step, ms. */
const TICK_MS = 500;

/**
 * Starts the bar on `stream`, `totalSeconds` long.
 * @returns a no-op bar unless `stream` is a TTY
 */
export function startBenchProgress(stream: ProgressStream, totalSeconds: number): BenchProgress {
  if (!stream.isTTY) return { update: () => {}, stop: () => {} };
  const bar = new cliProgress.SingleBar({
    // A TTY is a real tty.WriteStream, which is all cli-progress needs.
    stream: stream as NodeJS.WritableStream,
    format: 'Measuring [{bar}] {percentage}% | {step} | about {eta_formatted} left',
    hideCursor: true,
    clearOnComplete: true,
  }, cliProgress.Presets.shades_classic);
  // Tenths of a second, so that a short run's bar moves too.
  const total = Math.ceil(totalSeconds * 10);
  let base = 0;
  let span = 0;
  let since = performance.now();
  const show = () => bar.update(Math.floor(10 * Math.min(total / 10, base + Math.min(span, (performance.now() - since) / 1000))));
  bar.start(total, 0, { step: 'starting the store and the durable floor' });
  const ticker = setInterval(show, TICK_MS);
  ticker.unref();
  return {
    update(label, done, spanSeconds) {
      [base, span, since] = [done, spanSeconds, performance.now()];
      bar.update(Math.floor(10 * Math.min(total / 10, done)), { step: label });
    },
    stop() {
      clearInterval(ticker);
      bar.stop();
    },
  };
}
