/**
 * What `edge-events export` undoes when it is interrupted (docs/USAGE.md, "Exporting a dataset"):
 * on SIGINT (Ctrl-C) or SIGTERM, the hidden `.partial` download and any staging folder of
 * `--extract` are removed and the terminal restored (the progress line hides the cursor and turns
 * line wrap off), then the process exits with 128 + the signal's number, the code shells report
 * for it: 130 for SIGINT, 143 for SIGTERM.
 *
 * A listener of its own rather than signal-exit: signal-exit re-raises the signal after its
 * handlers, and the steps here must run synchronously inside the handler (the process ends right
 * after), which Node's `process.on('SIGINT')` allows (Node's "Signal events" reference).
 */
import os from 'node:os';

/** Undo steps for an interruption; each removes or restores what it may leave behind. */
export interface CleanupSteps {
  /**
   * Adds a synchronous step (run newest first; one that throws does not stop the others).
   * @returns a function that removes the step once what it undoes is done or gone
   */
  add(step: () => void): () => void;
}

export interface InterruptCleanup extends CleanupSteps {
  /** Removes the signal listeners (call once the command ends). */
  release(): void;
}

const SIGNALS = ['SIGINT', 'SIGTERM'] as const;

/**
 * Collects cleanup steps; with `exitOnSignal` (the binary), SIGINT and SIGTERM run them and end
 * the process with 130 or 143. Without it (in-process runs: tests, embedding) signals are left
 * to the host and the steps never run.
 */
export function interruptCleanup(exitOnSignal: boolean): InterruptCleanup {
  const steps = new Set<() => void>();
  const onSignal = (signal: NodeJS.Signals): void => {
    for (const step of [...steps].reverse()) {
      try {
        step();
      } catch {
        // The other steps still undo theirs; the process is ending either way.
      }
    }
    process.exit(128 + os.constants.signals[signal]);
  };
  if (exitOnSignal) for (const signal of SIGNALS) process.on(signal, onSignal);
  return {
    add(step) {
      steps.add(step);
      return () => steps.delete(step);
    },
    release() {
      for (const signal of SIGNALS) process.off(signal, onSignal);
      steps.clear();
    },
  };
}
