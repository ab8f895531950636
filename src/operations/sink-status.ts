/**
 * How each configured sink stands (docs/OPERATIONS.md, "Sinks"), for /stats `sinks` and the
 * `edge_events_sink_*` metrics: its backlog, read from the shipping ledger on the HTTP thread,
 * and its progress as the lifecycle worker last reported it.
 */
import type { SinkProgress } from '../lifecycle/sink-runner.js';
import { formatMicrosOrNull, sinkBacklog, type StoreView } from '../store/index.js';

/** One sink in /stats `sinks` (docs/API.md, "Statistics"). */
export interface SinkStatus {
  /** Finalized events it has not shipped. */
  backlog_events: number;
  /** Age of the oldest of them (s, from its created_at); null when none waits. */
  oldest_unshipped_age_seconds: number | null;
  oldest_unshipped_timestamp: string | null;
  /** Events it shipped, and refused for good, since the store started. */
  shipped_total: number;
  dead_lettered_total: number;
  last_shipped_at: string | null;
  /** No progress for a minute while events wait. */
  stalled: boolean;
  last_error: string | null;
}

/**
 * The status of every configured sink, by name.
 * @param now the time (ms since the epoch)
 */
export function sinkStatuses(store: StoreView, progress: ReadonlyMap<string, SinkProgress>, now = Date.now()): Record<string, SinkStatus> {
  const statuses: Record<string, SinkStatus> = {};
  for (const name of store.sinks) {
    const backlog = sinkBacklog(store, name);
    const reported = progress.get(name);
    statuses[name] = {
      backlog_events: backlog.events,
      oldest_unshipped_age_seconds: backlog.oldestCreatedAt === null ? null : Math.max(0, Math.round(now / 1000 - backlog.oldestCreatedAt / 1e6)),
      oldest_unshipped_timestamp: formatMicrosOrNull(backlog.oldestCreatedAt),
      shipped_total: reported?.shipped ?? 0,
      dead_lettered_total: reported?.deadLettered ?? 0,
      last_shipped_at: reported?.lastShippedAt == null ? null : new Date(reported.lastShippedAt).toISOString(),
      stalled: reported?.stalled ?? false,
      last_error: reported?.lastError ?? null,
    };
  }
  return statuses;
}
