/**
 * Paces the scrub of the log (docs/STORAGE.md, "The scrub") on the lifecycle worker: a tick every
 * SCRUB_STEP_MS adds the share of the log that makes a whole pass take SCRUB_PASS_HOURS, and a step
 * reads it once it is worth a step; ticks while creates are heavy add nothing. Each finding is
 * logged once, one line each.
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
 * Fewest bytes a step reads: a step costs about 1.7 ms of CPU however little it reads (it opens
 * the segment and fills a read-ahead window of 256 KiB: native-bench/scrub-cost.js), so at a slow
 * pace the bytes of several seconds are read in one step.
 */
export const SCRUB_MIN_STEP_BYTES = 256 * 1024;

/**
 * The bytes a second's share of a pass over `passBytes` that takes `passHours`.
 * @param passBytes bytes a pass reads (log-scrub.ts `passBytes`: the segments' committed bytes and the live blocks')
 */
export function scrubStepBytes(passBytes: number, passHours: number): number {
  return Math.max(1, Math.ceil(passBytes / ((passHours * 3_600_000) / SCRUB_STEP_MS)));
}

/** Logs a finding of the scrub: a warning when it was repaired, an error when it could not be. */
export function logFinding(log: Logger, finding: ScrubFinding): void {
  const message = `scrub: ${finding.copy.replace('_', ' ')} ${finding.repaired ? 'repaired' : 'unrepairable'}: ${finding.detail}`;
  if (finding.repaired) log.warn({ scrub: finding }, message);
  else log.error({ scrub: finding }, message);
}

/** The scrub's pace: each tick adds a second's share of a pass to its credit, and a step reads the credit once it is worth a step. */
export class ScrubPace {
  private credit = 0;
  private lastWrites = 0;

  /**
   * @param passHours SCRUB_PASS_HOURS
   * @param writes the store's write count (EventStore.writes), shared with the HTTP thread
   */
  constructor(private readonly scrub: LogScrub, private readonly passHours: number, private readonly writes: Int32Array) {}

  /**
   * A tick, every SCRUB_STEP_MS: takes a step of the credit when it reached SCRUB_MIN_STEP_BYTES
   * (or a whole log smaller than that) and the store was not busy since the last tick; a busy tick
   * adds no credit, so the scrub falls behind rather than catching up under load. An empty log
   * takes no step, so it counts no pass.
   * @returns the scrub's status when a step ran
   * @throws the error of the step
   */
  async tick(): Promise<ScrubStatus | undefined> {
    const now = Atomics.load(this.writes, 0);
    const busy = ((now - this.lastWrites) | 0) > SCRUB_BUSY_WRITES;
    this.lastWrites = now;
    if (busy) return undefined;
    const passBytes = this.scrub.passBytes();
    if (passBytes === 0) return undefined; // nothing to read: no pass to count
    this.credit += scrubStepBytes(passBytes, this.passHours);
    if (this.credit < Math.min(SCRUB_MIN_STEP_BYTES, passBytes)) return undefined;
    const budget = this.credit;
    this.credit = 0;
    await this.scrub.step(budget);
    return this.scrub.status;
  }
}
