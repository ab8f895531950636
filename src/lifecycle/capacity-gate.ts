/**
 * The HTTP thread's side of the capacity state (docs/API.md, "Capacity and 529"): answers, with
 * no round trip to the lifecycle worker, whether a request may pass. A create is refused, and the
 * gate closed for every gated route, as soon as it would put the store over a limit that cleanup
 * cannot relieve; the worker reopens the gate once uploads or deletions made room.
 * 529 is back-pressure, not a failure: the first refusal of a closed period is logged at warn,
 * the rest are counted and reported when the gate reopens (and on `/stats`).
 */
import type { Logger } from '../logger.js';
import type { StoreView } from '../store/index.js';
import { closeGate, createWouldOverfill, isCapacityBlocked, usageOf, type CapacityLimits, type StoreUsage } from './capacity.js';

/** What a gated route asks for: a create adds a record; anything else only needs the gate open. */
export type GateUse = 'create' | 'other';

export class CapacityGate {
  /** Creates admitted whose commit has not ended yet: counted as records cleanup must keep. */
  private admitted = 0;
  /** Requests answered 529 since the gate last closed. */
  private refusedSinceClosed = 0;
  /** Requests answered 529 since the store started. */
  refusedTotal = 0;

  constructor(
    private readonly flag: Int32Array,
    private readonly store: StoreView,
    private readonly limits: CapacityLimits,
    private readonly log: Logger,
  ) {}

  /** True while the store is capacity-blocked (`capacity_blocked`). */
  get blocked(): boolean {
    return isCapacityBlocked(this.flag);
  }

  /**
   * Admits one request of a gated route, or refuses it. An admitted create must be settled with
   * `settle()` once its commit ended (stored or failed).
   * @returns true when the request may go on; false when it must answer 529
   */
  admit(use: GateUse): boolean {
    if (!this.blocked && use === 'create' && this.store.shipping
      && createWouldOverfill(this.usage(), this.limits)) {
      closeGate(this.flag);
    }
    if (this.blocked) {
      this.refused();
      return false;
    }
    if (this.refusedSinceClosed > 0) {
      this.log.info({ refused: this.refusedSinceClosed }, 'capacity gate open again: requests were answered 529 meanwhile');
      this.refusedSinceClosed = 0;
    }
    if (use === 'create') this.admitted++;
    return true;
  }

  /** The store's usage with the head and the creates admitted but not committed yet. */
  usage(): StoreUsage {
    return usageOf(this.store, this.admitted);
  }

  /** Ends an admitted create (stored or failed). */
  settle(): void {
    this.admitted--;
  }

  private refused(): void {
    if (this.refusedSinceClosed === 0) {
      const counters = this.store.counters();
      this.log.warn(
        { records: counters.events, drafts: counters.drafts, uploadsPending: counters.uploadsPending, ...this.limits },
        'capacity blocked: answering 529 until uploads make room',
      );
    }
    this.refusedSinceClosed++;
    this.refusedTotal++;
  }
}
