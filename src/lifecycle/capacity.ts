/**
 * The capacity state (spec B, E10; DESIGN.md, "Capacity"): the worker decides, after each
 * cleanup, whether the store is still over a limit, which means nothing more could be deleted
 * (with cloud upload on: the rest waits for upload). It publishes that in a SharedArrayBuffer the
 * HTTP thread reads with no round trip, and warns once each time a capacity crosses 80%.
 */
import type { Logger } from '../logger.js';
import type { StoreView } from '../store/store-view.js';

/** Percent of a capacity above which a warning is logged (spec B, Limits). */
export const ALERT_PERCENT = 80;
/** Least pause (ms) between cleanups started because a limit is still crossed. */
const BLOCKED_RETRY_MS = 5000;

/** The usage of both capacities. */
export interface CapacityUsage {
  records: number;
  storageBytes: number;
  recordsPercent: number;
  storagePercent: number;
}

/** True when the flag says the store is capacity-blocked (HTTP thread side). */
export function isCapacityBlocked(flag: Int32Array): boolean {
  return Atomics.load(flag, 0) === 1;
}

/** Worker side: measures usage, decides and publishes the capacity state. */
export class CapacityMonitor {
  private lastCleanupAt = 0;
  private readonly alerted = { records: false, storage: false };

  constructor(
    private readonly store: StoreView,
    private readonly limits: { maxRecords: number; maxStorageBytes: number },
    private readonly flag: Int32Array,
    private readonly log: Logger,
  ) {}

  /** Current usage of both capacities. */
  usage(): CapacityUsage {
    const records = this.store.counters().events;
    const storageBytes = this.store.storageBytes();
    return {
      records,
      storageBytes,
      recordsPercent: (100 * records) / this.limits.maxRecords,
      storagePercent: (100 * storageBytes) / this.limits.maxStorageBytes,
    };
  }

  /** True when a limit is crossed and a cleanup should run now (throttled while blocked). */
  needsCleanup(): boolean {
    const usage = this.usage();
    this.warn(usage);
    const over = usage.records > this.limits.maxRecords || usage.storageBytes > this.limits.maxStorageBytes;
    if (!over) {
      Atomics.store(this.flag, 0, 0); // uploads or deletions brought it back: the gate reopens
      return false;
    }
    return Date.now() - this.lastCleanupAt >= (isCapacityBlocked(this.flag) ? BLOCKED_RETRY_MS : 0);
  }

  /**
   * After a cleanup. Blocked (E10: over a limit and waiting for uploads to drain) only with
   * cloud upload on, when the cleanup could delete nothing and the store is still over a limit.
   * Without cloud upload everything is deletable: ingest outrunning a cleanup is caught by the
   * next one, never refused.
   * @param deleted whether the cleanup deleted any record or file
   */
  update(deleted: boolean): void {
    this.lastCleanupAt = Date.now();
    const usage = this.usage();
    this.warn(usage);
    const over = usage.records > this.limits.maxRecords || usage.storageBytes > this.limits.maxStorageBytes;
    const blocked = this.store.trackUploads && over && !deleted;
    if (blocked !== isCapacityBlocked(this.flag)) {
      this.log[blocked ? 'warn' : 'info']({ usage }, blocked ? 'capacity blocked: over a limit with nothing deletable' : 'capacity gate reopened');
    }
    Atomics.store(this.flag, 0, blocked ? 1 : 0);
  }

  private warn(usage: CapacityUsage): void {
    for (const [name, percent] of [['records', usage.recordsPercent], ['storage', usage.storagePercent]] as const) {
      const above = percent > ALERT_PERCENT;
      if (above && !this.alerted[name]) this.log.warn({ capacity: name, percent: Math.round(percent) }, `${name} capacity above ${ALERT_PERCENT}%`);
      this.alerted[name] = above;
    }
  }
}
