/**
 * Runs one sink over the shipping ledger (docs/OPERATIONS.md, "Sinks"), in the lifecycle worker:
 * ships the entries after the sink's cursor in batches, in ledger order, and moves the cursor once
 * the destination acknowledged a batch (LifecycleStore `markShipped`), so shipping is
 * at least once and resumes after a restart where it stopped. A failed batch is shipped again
 * after a growing pause. No progress for STALL_MS while entries wait is a stall: logged once at
 * warn and shown in the sink's status (/stats `sinks`, /metrics) until the sink moves again.
 */
import type { Logger } from '../logger.js';
import type { Outgoing, Sink } from '../sinks/ledger-sink.js';
import { type LifecycleStore, sinkBacklog, unshipped } from '../store/index.js';
import { backoffDelay, pause, type BackoffOptions } from './cloud-client.js';

/**
 * Pause (ms) between looks at a ledger the sink has caught up with. A finalized create enters the
 * ledger with the checkpoint that commits it (docs/STORAGE.md, "The head"), about a second
 * after its 201, so a short look keeps shipping within about that second plus this.
 */
const POLL_MS = 250;
/** No progress for this long (ms) while entries wait is a stall. */
export const STALL_MS = 60_000;
/** How often (ms) the watchdog looks for a stall. */
const STALL_CHECK_MS = 5000;

/** What a sink did and how it stands, since the worker started (times in ms since the epoch). */
export interface SinkProgress {
  name: string;
  shipped: number;
  deadLettered: number;
  lastShippedAt: number | null;
  lastError: string | null;
  stalled: boolean;
}

/** What the runner needs besides the store and the sink. */
export interface SinkRunDeps {
  log: Logger;
  /** Aborted on stop: the batch under way ends and the run resolves. */
  signal: AbortSignal;
  /** Every configured sink's name: an entry leaves the ledger once all of them passed it. */
  sinks: readonly string[];
  /** Told each change of the sink's progress (posted to the HTTP thread for /stats and /metrics). */
  onProgress?: (progress: SinkProgress) => void;
  /** Backoff after a failed batch (defaults: base 500 ms, cap 30 s). */
  backoff?: BackoffOptions;
  /** No progress for this long (ms) while entries wait is a stall (default STALL_MS). */
  stallMs?: number;
}

/**
 * Ships the next batch of what `sink` has not shipped and moves its cursor past it.
 * @param sinks every configured sink (an entry leaves the ledger once all of them passed it)
 * @returns events shipped and dead-lettered; undefined when the sink has shipped everything
 * @throws what `sink.ship` throws (the cursor stays), or the lmdb error of a failed commit
 */
export async function shipNextBatch(store: LifecycleStore, sink: Sink, sinks: readonly string[], signal: AbortSignal): Promise<{ shipped: number; deadLettered: number } | undefined> {
  const entries = unshipped(store, sink.name, sink.batchSize);
  if (entries.length === 0) return undefined;
  const outgoing: Outgoing[] = [];
  for (const { seq, createdAt } of entries) {
    const record = store.getRecord(createdAt);
    if (record) outgoing.push({ seq, createdAt, record }); // else deleted since: nothing to ship
  }
  const deadLettered = outgoing.length === 0 ? [] : await sink.ship(outgoing, signal);
  await store.markShipped(sink.name, entries[entries.length - 1]!.seq, deadLettered, sinks);
  return { shipped: outgoing.length - deadLettered.length, deadLettered: deadLettered.length };
}

/**
 * Ships what `sink` has not shipped, batch after batch, until `deps.signal` aborts; never rejects.
 */
export async function runSink(store: LifecycleStore, sink: Sink, deps: SinkRunDeps): Promise<void> {
  const { log } = deps;
  const progress: SinkProgress = { name: sink.name, shipped: 0, deadLettered: 0, lastShippedAt: null, lastError: null, stalled: false };
  const report = () => deps.onProgress?.({ ...progress });
  /** When the sink last shipped a batch or found nothing to ship (ms). */
  let movedAt = Date.now();
  const moved = () => {
    movedAt = Date.now();
    if (progress.stalled) log.info({ sink: sink.name }, 'sink moving again');
    progress.stalled = false;
  };
  // A batch may retry for long inside `ship` (the cloud client retries each request itself):
  // stalls are watched from outside it.
  const stallMs = deps.stallMs ?? STALL_MS;
  const watchdog = setInterval(() => {
    if (progress.stalled || Date.now() - movedAt < stallMs) return;
    const backlog = sinkBacklog(store, sink.name).events;
    if (backlog === 0) return; // caught up, between two looks
    progress.stalled = true;
    log.warn({ sink: sink.name, backlog, sinceMs: Date.now() - movedAt, lastError: progress.lastError }, 'sink stalled: no progress while events wait');
    report();
  }, Math.min(STALL_CHECK_MS, stallMs));
  watchdog.unref();
  let failures = 0;
  report();
  try {
    while (!deps.signal.aborted) {
      try {
        const batch = await shipNextBatch(store, sink, deps.sinks, deps.signal);
        if (batch === undefined) { // caught up
          const wasStalled = progress.stalled;
          moved();
          if (wasStalled) report();
          await pause(POLL_MS, deps.signal);
          continue;
        }
        failures = 0;
        moved();
        progress.shipped += batch.shipped;
        progress.deadLettered += batch.deadLettered;
        progress.lastShippedAt = movedAt;
        progress.lastError = null;
        report();
      } catch (err) {
        if (deps.signal.aborted) break;
        progress.lastError = (err as Error).message;
        log.error({ err, sink: sink.name }, 'shipping a batch failed; retrying');
        report();
        await pause(backoffDelay(failures++, deps.backoff), deps.signal);
      }
    }
  } finally {
    clearInterval(watchdog);
    await sink.close?.().catch((err: unknown) => log.warn({ err, sink: sink.name }, 'sink did not close cleanly'));
  }
}
