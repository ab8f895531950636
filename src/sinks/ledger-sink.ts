/**
 * What a ledger sink is (docs/OPERATIONS.md, "Sinks"): the contract src/lifecycle/sink-runner.ts
 * runs over the shipping ledger, which the cloud uploader (src/lifecycle/cloud-uploader.ts) and
 * the NATS sink (nats-sink.ts) implement.
 */
import type { EventRecord } from '../store/index.js';

/** One finalized event to ship. */
export interface Outgoing {
  seq: number;
  createdAt: number;
  record: EventRecord;
}

/** Something that ships finalized events off the device: the cloud uploader, the NATS sink. */
export interface Sink {
  /** Its name in the ledger and in /stats (`cloud`, `nats`). */
  readonly name: string;
  /** Most events per `ship`. */
  readonly batchSize: number;
  /**
   * Ships `events` (ledger order) and resolves once the destination acknowledged every one.
   * @returns created_at (µs) of the events refused for good (dead letters; each is logged by the sink)
   * @throws when the batch must be shipped again (network, destination down, `signal` aborted)
   */
  ship(events: Outgoing[], signal: AbortSignal): Promise<number[]>;
  /** Lets go of its connections once the runner stopped. */
  close?(): Promise<void>;
}
