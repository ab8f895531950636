/**
 * Paces the scrub of the log (docs/STORAGE.md, "The scrub") on the lifecycle worker: a step every
 * SCRUB_STEP_MS, each reading the share of the log that makes a whole pass take SCRUB_PASS_HOURS,
 * skipped while creates are heavy. Each finding is logged once, one line each.
 */
import type { Logger } from '../logger.js';
import type { LogScrub, ScrubFinding, ScrubStatus } from '../store/index.js';

/** How often (ms) the scrub takes a step. */
export const SCRUB_STEP_MS = 1000;
/**
 * Store writes (batches into the head, checkpoints: EventStore.writes) within one step's interval
 * above which the step is skipped: the scrub backs off while creates are heavy (a busy camera
 * pipeline commits about 10 batches a second; a bench at full rate, hundreds).
 */
export const SCRUB_BUSY_WRITES = 100;

/**
 * The bytes one step reads so that a pass over `logBytes` takes `passHours`.
 * @param logBytes bytes of the log (its segments' committed bytes)
 */
export function scrubStepBytes(logBytes: number, passHours: number): number {
  return Math.max(1, Math.ceil(logBytes / ((passHours * 3_600_000) / SCRUB_STEP_MS)));
}

/** Logs a finding of the scrub: a warning when it was repaired, an error when it could not be. */
export function logFinding(log: Logger, finding: ScrubFinding): void {
  const message = `scrub: ${finding.copy.replace('_', ' ')} ${finding.repaired ? 'repaired' : 'unrepairable'}: ${finding.detail}`;
  if (finding.repaired) log.warn({ scrub: finding }, message);
  else log.error({ scrub: finding }, message);
}

/**
 * Takes one step of `scrub` unless the store was busy since the last one.
 * @param writes the store's write count (EventStore.writes), shared with the HTTP thread
 * @param lastWrites the count at the last step
 * @returns the count now, and the scrub's status when a step ran
 * @throws the error of the step
 */
export async function scrubStep(scrub: LogScrub, passHours: number, writes: Int32Array, lastWrites: number): Promise<{ writes: number; status: ScrubStatus | undefined }> {
  const now = Atomics.load(writes, 0);
  if (((now - lastWrites) | 0) > SCRUB_BUSY_WRITES) return { writes: now, status: undefined };
  await scrub.step(scrubStepBytes(scrub.logBytes(), passHours));
  return { writes: now, status: scrub.status };
}
