/**
 * The findings of many audits (crash-audit.ts) gathered for a harness's summary: each finding
 * printed once as it turns up, and the counts of what was verified.
 */
import type { AuditFindings } from './crash-audit.js';
import type { Tally } from './crash-ledger.js';

const KINDS = ['lostEvents', 'lostFiles', 'corrupt', 'inconsistent'] as const;

/** Findings of every audit of a run, each kept once. */
export class AuditTally {
  readonly lostEvents = new Set<string>();
  readonly lostFiles = new Set<string>();
  readonly corrupt = new Set<string>();
  readonly inconsistent = new Set<string>();
  eventsVerified = 0;
  filesVerified = 0;
  deletedByCleanup = 0;
  removalsChecked = 0;
  goneWithReset = 0;

  /**
   * Adds one audit's findings, printing those not seen before.
   * @param where prefixed to each finding (e.g. `cut 7: `), so equal lines of distinct audits stay distinct
   */
  add(found: AuditFindings, where = ''): void {
    for (const key of KINDS) {
      for (const line of found[key]) {
        const entry = where + line;
        if (!this[key].has(entry)) console.log(`  ${key}: ${entry}`);
        this[key].add(entry);
      }
    }
    this.eventsVerified += found.eventsChecked;
    this.filesVerified += found.filesChecked;
    this.deletedByCleanup += found.deletedByCleanup;
    this.removalsChecked += found.removalsChecked;
    this.goneWithReset += found.goneWithReset;
  }

  /** Lost events and files, corrupt and inconsistent findings, all together. */
  problems(): number {
    return KINDS.reduce((sum, key) => sum + this[key].size, 0);
  }

  /**
   * The summary line of removals: how many acknowledged ones `written` holds (cleanup deletions,
   * resets and the events they took) and how often an audit found one held.
   */
  removalLine(written: Tally): string {
    return `  removals acknowledged  ${written.deletionsAcked} cleanup deletions; ${written.resets} resets, taking ${written.resetAway} events; `
      + `summed over the audits, ${this.removalsChecked} checks that one held and ${this.goneWithReset} events in flight during a reset found gone with it`;
  }

  /** The summary lines of the findings: lost, corrupt, inconsistent. */
  summaryLines(): string[] {
    return [
      `  lost                   ${this.lostEvents.size} events, ${this.lostFiles.size} files`,
      `  corrupt                ${this.corrupt.size}`,
      `  inconsistent           ${this.inconsistent.size}`,
    ];
  }
}
