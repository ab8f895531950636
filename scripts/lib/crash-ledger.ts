/**
 * The crash loop's ledger: what the writers sent and what the store answered. An acknowledged
 * write (201/200) must survive every later crash; a refused one (any other status) must never
 * show up; a write whose answer was lost to the kill is unknown: it may or may not be stored,
 * but once seen after a restart it is held to the same standard as an acknowledged one.
 */

/** What became of a request: answered with success, answered with a refusal, or no answer. */
export type Outcome = 'acked' | 'refused' | 'unknown';

/** An image of a create: which fixture, and its label and detection (echoed back by the store). */
export interface SentImage {
  fixture: string;
  label: string;
  detections: { class: string; x: number; y: number; width: number; height: number; confidence: number }[];
}

/** A video or local-only file upload to a draft. `payload` names its bytes (see upload-payloads.ts). */
export interface SentAttachment {
  kind: 'video' | 'local_only';
  /** Unique within the run: how the store's listing is matched to the upload. */
  label: string;
  payload: string;
  outcome: Outcome;
  /** Listed by the store after a restart: from then on it must stay. */
  seen: boolean;
  fileId?: string;
}

/** One create request and everything done to its event afterwards. */
export interface SentEvent {
  /** Unique within the run; sent as `custom_metadata.token`. */
  token: string;
  /** The fields sent (snake_case), which the store must give back unchanged. */
  fields: {
    device_id: string;
    workflow_id: string;
    inference_timestamp: string;
    event_schema: string;
    event_data: Record<string, unknown>;
    custom_metadata: Record<string, string | number | boolean>;
  };
  images: SentImage[];
  draft: boolean;
  outcome: Outcome;
  seen: boolean;
  /** From the 201, or adopted when an unknown create is seen. */
  id?: string;
  createdAt?: string;
  imageIds?: string[];
  finalize: 'none' | Outcome;
  /** Seen finalized after a restart: it must stay finalized. */
  seenFinalized: boolean;
  attachments: SentAttachment[];
  /** The ledger's moment (`Ledger.now`) its 201 was read, or an audit first found it stored. */
  storedBy?: number;
  /** A reset was sent before this create was answered, and was not refused: it may be gone with it. */
  mayBeReset?: boolean;
}

/** Why the ledger forgot an event whose removal was acknowledged: listed again, the removal was undone. */
export type Removal = 'deleted by cleanup' | 'reset';

/** Counts of a ledger's writes (see `Ledger.tally`). */
export interface Tally {
  acked: number;
  /** Sent, no answer (cut off by a kill or a cut). */
  unknown: number;
  /** Unknown, and found stored by an audit. */
  unknownKept: number;
  refused: number;
  /** Acknowledged files: images of acknowledged creates, acknowledged uploads. */
  files: number;
  finalized: number;
  /** Resets acknowledged (`POST /reset/confirm` 200). */
  resets: number;
  /** Events an acknowledged reset removed (`Ledger.removed`). */
  resetAway: number;
  /** Events whose deletion by cleanup was acknowledged (`Ledger.removed`). */
  deletionsAcked: number;
}

/** A tally of nothing, to add ledgers' tallies to. */
export function emptyTally(): Tally {
  return { acked: 0, unknown: 0, unknownKept: 0, refused: 0, files: 0, finalized: 0, resets: 0, resetAway: 0, deletionsAcked: 0 };
}

/** Adds `tally` to `total`, count by count. */
export function addTally(total: Tally, tally: Tally): void {
  for (const key of Object.keys(tally) as (keyof Tally)[]) total[key] += tally[key];
}

/** Every write of one store's life (one DATA_DIR). */
export class Ledger {
  readonly events = new Map<string, SentEvent>();
  /**
   * Events whose removal was acknowledged, by token: a reset's 200 came after their 201, or
   * `POST /admin/cleanup` answered after they were seen deleted. None may ever be listed again.
   */
  readonly removed = new Map<string, Removal>();
  private readonly forgotten: SentEvent[] = [];
  private nextToken = 0;
  private clock = 0;
  private resets = 0;
  /** While a reset is unanswered: the events it marked as possibly gone (`resetSent`). */
  private resetPending: Set<SentEvent> | undefined;

  /** A token never used in this run. */
  token(prefix: string): string {
    return `${prefix}-${(this.nextToken++).toString(36)}`;
  }

  /** Registers an event about to be sent (outcome unknown until answered). */
  add(event: SentEvent): void {
    this.events.set(event.token, event);
    this.mayGoWithReset(event);
  }

  /**
   * Forgets an event found gone: deleted by cleanup (the oldest first, with a record cap), or gone
   * with a reset; it still counts in `tally`.
   */
  forget(event: SentEvent): void {
    this.events.delete(event.token);
    this.forgotten.push(event);
  }

  /** A moment of this ledger: each call answers a larger number, to order requests and answers. */
  now(): number {
    return ++this.clock;
  }

  /**
   * A reset is being sent (`POST /reset/confirm`; docs/API.md, "Cleanup and reset"): until it is
   * answered, every event, those created meanwhile too, may go with it.
   * @returns the moment it was sent, for `resetAnswered`
   */
  resetSent(): number {
    this.resetPending = new Set();
    for (const event of this.events.values()) this.mayGoWithReset(event);
    return this.now();
  }

  /**
   * The reset sent at `sentAt` was answered with `outcome`. Acknowledged, every event stored
   * before `sentAt` is gone for good; the ones in flight meanwhile may or may not be. Refused, it
   * removed nothing. Unanswered, every event of its time may be gone.
   */
  resetAnswered(sentAt: number, outcome: Outcome): void {
    const marked = this.resetPending ?? new Set();
    this.resetPending = undefined;
    if (outcome === 'refused') for (const event of marked) event.mayBeReset = false;
    if (outcome !== 'acked') return;
    this.resets++;
    for (const event of [...this.events.values()]) {
      if (event.outcome !== 'refused' && event.storedBy !== undefined && event.storedBy < sentAt) this.remove(event, 'reset');
    }
  }

  private mayGoWithReset(event: SentEvent): void {
    if (!this.resetPending || event.mayBeReset || event.outcome === 'refused') return;
    event.mayBeReset = true;
    this.resetPending.add(event);
  }

  /**
   * Cleanup's deletion of `event` is acknowledged: it was seen gone, and then `POST /admin/cleanup`
   * answered, which runs after every earlier cleanup in the lifecycle worker's queue, each
   * durable before it ends (docs/STORAGE.md, "What is durable when").
   */
  deletionAcknowledged(event: SentEvent): void {
    this.remove(event, 'deleted by cleanup');
  }

  private remove(event: SentEvent, why: Removal): void {
    this.forget(event);
    this.removed.set(event.token, why);
  }

  /**
   * A deep copy of the ledger as it is now, which later answers leave unchanged: what a store
   * frozen at this moment must hold (an answer not yet read here stays unknown in the copy).
   */
  snapshot(): Ledger {
    const copy = new Ledger();
    for (const [token, event] of this.events) copy.events.set(token, structuredClone(event));
    copy.forgotten.push(...structuredClone(this.forgotten));
    for (const [token, why] of this.removed) copy.removed.set(token, why);
    copy.nextToken = this.nextToken;
    copy.clock = this.clock;
    copy.resets = this.resets;
    return copy;
  }

  /** Counts over every event sent, forgotten ones included, for the summary. */
  tally(): Tally {
    let acked = 0, unknown = 0, unknownKept = 0, refused = 0, files = 0, finalized = 0;
    for (const event of [...this.events.values(), ...this.forgotten]) {
      if (event.outcome === 'acked') acked++;
      else if (event.outcome === 'refused') refused++;
      else {
        unknown++;
        if (event.seen) unknownKept++;
      }
      if (event.outcome === 'acked') files += event.images.length;
      files += event.attachments.filter((a) => a.outcome === 'acked').length;
      if (event.finalize === 'acked') finalized++;
    }
    const removals = [...this.removed.values()];
    const resetAway = removals.filter((why) => why === 'reset').length;
    return { acked, unknown, unknownKept, refused, files, finalized, resets: this.resets, resetAway, deletionsAcked: removals.length - resetAway };
  }
}
