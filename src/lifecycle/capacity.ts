/**
 * The capacity state (docs/API.md, "Capacity and 529"), one flag in a SharedArrayBuffer that both
 * threads read with no round trip. With cloud upload on, drafts and events not uploaded yet are
 * never deleted, so the store is blocked (`capacity_blocked`) when one more create would put it over a limit that
 * cleanup cannot relieve: the HTTP thread closes the gate at that create
 * (src/lifecycle/capacity-gate.ts); the worker, after each cleanup, closes it too when the store
 * is over a limit and nothing could be deleted, and reopens it once there is room. The worker also
 * warns once each time a capacity crosses 80%. The flag's functions and `createWouldOverfill` are
 * used by both threads; `CapacityMonitor` runs in the worker. It reads the store's write count
 * (`EventStore.writes`) the same way, so an idle store is not asked for its usage.
 */
import type { Logger } from '../logger.js';
import type { StoreView } from '../store/index.js';

/** Percent of a capacity above which a warning is logged (docs/API.md, "Statistics"). */
export const ALERT_PERCENT = 80;
/** Least pause (ms) between cleanups started because a limit is still crossed. */
const BLOCKED_RETRY_MS = 5000;

/**
 * What the store holds: records, bytes of storage (live blob bytes + LMDB pages in use), and the
 * records cleanup must keep with cloud upload on (drafts, events waiting for upload, and creates
 * admitted but not committed yet).
 */
export interface StoreUsage {
  records: number;
  storageBytes: number;
  kept: number;
}

/**
 * The store's usage as `store` counts it (the HTTP thread's view holds the head).
 * @param admitted creates admitted but not committed yet: counted as records and as kept
 */
export function usageOf(store: StoreView, admitted = 0): StoreUsage {
  const counters = store.counters();
  return { records: counters.events + admitted, storageBytes: store.storageBytes(), kept: counters.drafts + counters.uploadsPending + admitted };
}

/** The usage of both capacities. */
export interface CapacityUsage extends StoreUsage {
  recordsPercent: number;
  storagePercent: number;
}

/** MAX_RECORDS and MAX_STORAGE_BYTES (bytes). */
export interface CapacityLimits {
  maxRecords: number;
  maxStorageBytes: number;
}

/** True when `usage` is over MAX_RECORDS or MAX_STORAGE_BYTES (docs/API.md, "Capacity and 529"). */
export function overLimit(usage: StoreUsage, limits: CapacityLimits): boolean {
  return usage.records > limits.maxRecords || usage.storageBytes > limits.maxStorageBytes;
}

/** True when the flag says the store is capacity-blocked. */
export function isCapacityBlocked(flag: Int32Array): boolean {
  return Atomics.load(flag, 0) === 1;
}

/** Marks the store capacity-blocked: every gated route answers 529 until the worker reopens it. */
export function closeGate(flag: Int32Array): void {
  Atomics.store(flag, 0, 1);
}

/**
 * True when, with cloud upload on, one more create would put the store over a limit that cleanup
 * cannot relieve: the records cleanup keeps (`StoreUsage.kept`) would pass MAX_RECORDS, or
 * storage is over MAX_STORAGE_BYTES with nothing but such records stored.
 * @param usage as the HTTP thread counts it (`usageOf`, with the head and the admitted creates)
 */
export function createWouldOverfill(usage: StoreUsage, limits: CapacityLimits): boolean {
  if (usage.kept + 1 > limits.maxRecords) return true;
  return usage.records <= usage.kept && usage.storageBytes > limits.maxStorageBytes;
}

/** Worker side: measures usage, decides and publishes the capacity state. */
export class CapacityMonitor {
  private lastCleanupAt = 0;
  private readonly alerted = { records: false, storage: false };
  /** The store's write count when a look last found it within its limits with the gate open. */
  private settledAt: number | undefined;

  /**
   * @param writes the store's write count (`EventStore.writes`, shared with the HTTP thread)
   */
  constructor(
    private readonly store: StoreView,
    private readonly limits: CapacityLimits,
    private readonly flag: Int32Array,
    private readonly writes: Int32Array,
    private readonly log: Logger,
  ) {}

  /** Usage of both capacities, from the store's usage. */
  private usage({ records, storageBytes, kept }: StoreUsage): CapacityUsage {
    return {
      records,
      storageBytes,
      kept,
      recordsPercent: (100 * records) / this.limits.maxRecords,
      storagePercent: (100 * storageBytes) / this.limits.maxStorageBytes,
    };
  }

  /**
   * True when a limit is crossed and a cleanup should run now (throttled while blocked). The
   * usage is not asked for when the store has made no write since a look found it within its
   * limits with the gate open: usage moves only with writes (docs/STORAGE.md, "When a
   * checkpoint runs"). The lifecycle worker's own commits are not counted, but a cleanup is
   * followed by `update`, and a closed gate is looked at every time.
   * @param usageNow the store's usage with the head (the HTTP thread's view): creates not
   *   yet checkpointed count against the limits too
   * @throws what `usageNow` throws
   */
  async needsCleanup(usageNow: () => Promise<StoreUsage>): Promise<boolean> {
    const writes = Atomics.load(this.writes, 0);
    if (writes === this.settledAt && !isCapacityBlocked(this.flag)) return false;
    this.settledAt = undefined;
    const usage = this.usage(await usageNow());
    this.warn(usage);
    const over = overLimit(usage, this.limits);
    if (!over) {
      // Uploads or deletions made room: the gate reopens (the HTTP thread closes it again at
      // the create that would overfill).
      if (isCapacityBlocked(this.flag) && !this.createWouldOverfill(usage)) this.publish(false, usage);
      // The count was read before the usage: a write in between shows as a moved count.
      this.settledAt = writes;
      return false;
    }
    return Date.now() - this.lastCleanupAt >= (isCapacityBlocked(this.flag) ? BLOCKED_RETRY_MS : 0);
  }

  /**
   * After a cleanup. Blocked (`capacity_blocked`: over a limit and waiting for uploads to drain) only with
   * cloud upload on, when the cleanup could delete nothing and the store is still over a limit.
   * Without cloud upload everything is deletable: ingest outrunning a cleanup is caught by the
   * next one, never refused.
   * @param deleted whether the cleanup deleted any record or file
   * @param current the store's usage with the head after the cleanup (as `needsCleanup`)
   */
  update(deleted: boolean, current: StoreUsage): void {
    this.lastCleanupAt = Date.now();
    this.settledAt = undefined;
    const usage = this.usage(current);
    this.warn(usage);
    const over = overLimit(usage, this.limits);
    const blocked = (this.store.shipping && over && !deleted) || this.createWouldOverfill(usage);
    this.publish(blocked, usage);
  }

  /**
   * From the HTTP thread's usage, never the worker's own counters: those lag by the head,
   * and a gate reopened on them closes again at the next create.
   */
  private createWouldOverfill(usage: StoreUsage): boolean {
    return this.store.shipping && createWouldOverfill(usage, this.limits);
  }

  /** Sets the flag, logging a change (a closing by the HTTP thread is logged there). */
  private publish(blocked: boolean, usage: CapacityUsage): void {
    if (blocked === isCapacityBlocked(this.flag)) return;
    if (blocked) this.log.warn({ usage }, 'capacity blocked: over a limit with nothing deletable');
    else this.log.info({ usage }, 'capacity gate reopened');
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
