/**
 * `GET /stats` (docs/API.md, "Statistics"), kept cheap: counts come from the
 * maintained counters and the ends of ordered indexes; only the figures of what the next cleanup
 * will delete walk an index range, and only over the records past retention. Those figures are
 * the retention stage of cleanup's (src/lifecycle/cleanup.ts) as it would run now: the same cutoff
 * (`retentionCutoff`) and the same records kept (`isProtected`), from src/store/engine/cleanup-queries.ts.
 */
import prettyBytes from 'pretty-bytes';
import type { Config } from '../config.js';
import { unknownSettingsJson } from '../settings.js';
import type { CleanupResult } from '../lifecycle/cleanup.js';
import type { SinkProgress } from '../lifecycle/sink-runner.js';
import type { MqttSinkStatus } from '../sinks/mqtt-sink.js';
import { sinkStatuses } from './sink-status.js';
import { type BackfillProgress, clockStatus, DAY_MICROS, formatMicros, formatMicrosOrNull, heldClock, type HeldClock, oldestAndNewest, oldestDraft, retentionBacklog, retentionCutoff, runningAtCreation, type ScrubStatus, type StoreView } from '../store/index.js';

const format = (bytes: number): string => prettyBytes(bytes, { binary: true });
const percent = (used: number, limit: number): number => Number(((100 * used) / limit).toFixed(2));

/** The capacity gate's state, as the HTTP thread knows it (src/lifecycle/capacity-gate.ts). */
export interface GateState {
  blocked: boolean;
  /** Requests answered 529 since the store started. */
  refusedTotal: number;
}

/** What the HTTP thread knows besides the store's databases: the gate, the latest cleanup, the MQTT sink, the search index. */
export interface LiveState {
  gate: GateState;
  /** The latest cleanup run and when it ended (ms since the epoch); undefined before the first. */
  lastCleanup: { result: CleanupResult; finishedAt: number } | undefined;
  /** undefined: MQTT publishing off. */
  mqtt: MqttSinkStatus | undefined;
  /** Each configured sink's progress as the lifecycle worker last reported it. */
  sinkProgress: ReadonlyMap<string, SinkProgress>;
  /** The search index: ready, and how far its start-up backfill got (EventStore.searchIndexBackfill). */
  searchIndex: { ready: boolean; backfill: Readonly<BackfillProgress> | null };
  /** The scrub's figures as the lifecycle worker last reported them; undefined before its first step. */
  scrub: ScrubStatus | undefined;
}

/**
 * `scrub` of /stats (docs/API.md, "Statistics"; docs/STORAGE.md, "The scrub"): its passes over the
 * log, what it read and found, and the bytes of the log's copies of the records it checks.
 */
function scrubStats(store: StoreView, config: Config, scrub: ScrubStatus | undefined) {
  return {
    pass_hours: config.scrubPassHours,
    passes: scrub?.passes ?? 0,
    last_pass_at: scrub?.lastPassAt ? new Date(scrub.lastPassAt).toISOString() : null,
    verified_bytes: scrub?.verifiedBytes ?? 0,
    damaged: scrub?.damaged ?? 0,
    repaired: scrub?.repaired ?? 0,
    unrepairable: scrub?.unrepairable ?? 0,
    recent: scrub?.recent ?? [],
    record_copy_bytes: store.recordCopyBytes(),
  };
}

/**
 * The store's clock for `/stats` (docs/API.md, "Statistics"; docs/STORAGE.md, "A clock that
 * jumps"): its running time, how far created_at runs ahead of the wall clock, the jumps of the
 * wall clock it found and the events it re-stamped.
 */
function clockStats(store: StoreView) {
  const { running, ahead, jumps } = clockStatus(store);
  return {
    store_running_seconds: Math.round(running / 1e3) / 1e3,
    created_at_ahead_seconds: Math.round(ahead / 1e3) / 1e3,
    jumps_forward: jumps.forward,
    jumps_backward: jumps.backward,
    events_restamped: jumps.restamped,
    last_jump: jumps.last === null ? null : {
      seconds: Math.round(jumps.last.micros / 1e3) / 1e3,
      found: jumps.last.found,
      at: formatMicros(jumps.last.at),
      events_restamped: jumps.last.restamped,
    },
  };
}

/** The store's totals that several sections of /stats share, read once after the checkpoint. */
interface Totals {
  counters: ReturnType<StoreView['counters']>;
  /** Bytes the store takes: live blob bytes and LMDB pages in use (StoreView.storageBytes). */
  storageBytes: number;
}

/**
 * The statistics of a store under `config` (docs/API.md, "Statistics").
 * @param now the time (µs since the epoch)
 * @throws the lmdb error of a failed checkpoint (below)
 */
export async function storeStats(store: StoreView, config: Config, live: LiveState, now = Date.now() * 1000) {
  const held = heldClock(store);
  const cutoff = retentionCutoff(now, config.retentionDays, held);
  // The retention prediction reads LMDB, as cleanup does after its checkpoint: creates in the
  // head already past retention are checkpointed first (docs/STORAGE.md, "When a checkpoint runs").
  await store.checkpointedBefore(cutoff);
  const totals: Totals = { counters: store.counters(), storageBytes: store.storageBytes() };

  return {
    current: currentStats(store, config, held, totals, now),
    configuration: configurationStats(config),
    capacity: capacityStats(config, live.gate, totals),
    next_cleanup_will_delete: nextCleanupStats(store, config, cutoff, totals),
    clock: clockStats(store),
    last_cleanup: lastCleanupStats(live.lastCleanup),
    log_damage: logDamage(store),
    scrub: scrubStats(store, config, live.scrub),
    index_damage: { reads_failed: store.indexDamage.readsFailed, last_error: store.indexDamage.lastError, last_at: store.indexDamage.lastAt === null ? null : new Date(store.indexDamage.lastAt).toISOString() },
    sinks: sinkStatuses(store, live.sinkProgress, now / 1000),
    mqtt: live.mqtt ?? null,
    search_index: searchIndexStats(live.searchIndex),
    // Variables of the environment that look like settings but are none (docs/OPERATIONS.md, "Misspelt settings").
    unknown_settings: unknownSettingsJson(config.unknownSettingsFound),
  };
}

/**
 * `current` of /stats (docs/API.md, "Statistics"): the totals, the oldest and newest event, the
 * time until the oldest is deleted (seconds, null without events), the drafts.
 * @param held the store's clock, as retention reckons by it
 * @param now the time (µs since the epoch)
 */
function currentStats(store: StoreView, config: Config, held: HeldClock, { counters, storageBytes }: Totals, now: number) {
  const { oldest, newest } = oldestAndNewest(store);
  const draftCreatedAt = oldestDraft(store);
  const retentionMicros = config.retentionDays * DAY_MICROS;
  return {
    total_events: counters.events,
    total_images: counters.images,
    total_storage_bytes: storageBytes,
    total_storage_formatted: format(storageBytes),
    oldest_event_timestamp: formatMicrosOrNull(oldest),
    newest_event_timestamp: formatMicrosOrNull(newest),
    days_of_data_stored: oldest === null ? 0 : Number(((now - oldest) / DAY_MICROS).toFixed(4)),
    // Past RETENTION_DAYS by the wall clock and by the store's running time (docs/STORAGE.md, "A clock that jumps").
    time_until_oldest_data_deleted: oldest === null ? null : Math.max(0, Math.round(Math.max(oldest + retentionMicros - now, runningAtCreation(held, oldest) + retentionMicros - held.running) / 1e6)),
    draft_events: counters.drafts,
    oldest_draft_age_seconds: draftCreatedAt === null ? null : Math.max(0, Math.round((now - draftCreatedAt) / 1e6)),
  };
}

/** `configuration` of /stats (docs/API.md, "Statistics"): the data folder and the limits. */
function configurationStats(config: Config) {
  return {
    data_dir: config.dataDir,
    retention_days: config.retentionDays,
    max_records: config.maxRecords,
    max_record_size_bytes: config.maxRecordSizeBytes,
    max_record_size_formatted: format(config.maxRecordSizeBytes),
    max_storage_bytes: config.maxStorageBytes,
    max_storage_formatted: format(config.maxStorageBytes),
    cleanup_interval_seconds: config.cleanupIntervalSeconds,
  };
}

/**
 * `capacity` of /stats (docs/API.md, "Statistics"; "Capacity and 529"): records and storage used
 * against their limits, the averages, and the capacity gate.
 */
function capacityStats(config: Config, gate: GateState, { counters, storageBytes }: Totals) {
  return {
    records: { used: counters.events, limit: config.maxRecords, percent_used: percent(counters.events, config.maxRecords) },
    storage: {
      bytes_used: storageBytes,
      bytes_used_formatted: format(storageBytes),
      bytes_limit: config.maxStorageBytes,
      bytes_limit_formatted: format(config.maxStorageBytes),
      percent_used: percent(storageBytes, config.maxStorageBytes),
    },
    averages: {
      record_size_bytes: counters.events === 0 ? 0 : Math.round(storageBytes / counters.events),
      record_size_formatted: format(counters.events === 0 ? 0 : Math.round(storageBytes / counters.events)),
      images_per_event: counters.events === 0 ? 0 : Number((counters.images / counters.events).toFixed(3)),
    },
    blocked: gate.blocked,
    uploads_pending: counters.uploadsPending,
    requests_refused: gate.refusedTotal,
  };
}

/**
 * `next_cleanup_will_delete` of /stats (docs/API.md, "Statistics"): what cleanup's retention
 * stage would delete now, and the excess over each limit.
 * @param cutoff the retention cutoff (µs since the epoch)
 */
function nextCleanupStats(store: StoreView, config: Config, cutoff: number, { counters, storageBytes }: Totals) {
  const pastRetention = retentionBacklog(store, cutoff);
  const excessBytes = Math.max(0, storageBytes - config.maxStorageBytes);
  return {
    retention_cutoff_timestamp: formatMicros(cutoff),
    records_past_retention: pastRetention.records,
    files_past_retention: pastRetention.files,
    bytes_past_retention: pastRetention.bytes,
    bytes_past_retention_formatted: format(pastRetention.bytes),
    excess_records_over_limit: Math.max(0, counters.events - config.maxRecords),
    excess_bytes_over_limit: excessBytes,
    excess_bytes_formatted: format(excessBytes),
  };
}

/** `last_cleanup` of /stats (docs/API.md, "Statistics"): the latest run since start, null before the first. */
function lastCleanupStats(lastCleanup: LiveState['lastCleanup']) {
  return lastCleanup === undefined ? null : {
    trigger: lastCleanup.result.trigger,
    finished_at: new Date(lastCleanup.finishedAt).toISOString(),
    duration_seconds: lastCleanup.result.duration_seconds,
    records_deleted: lastCleanup.result.records_deleted.total,
    files_deleted: lastCleanup.result.files_deleted.total,
    bytes_freed: lastCleanup.result.bytes_freed,
  };
}

/** `search_index` of /stats (docs/API.md, "Statistics"; docs/STORAGE.md, "The search index"): ready, and the backfill's progress. */
function searchIndexStats(searchIndex: LiveState['searchIndex']) {
  return {
    ready: searchIndex.ready,
    backfill_indexed: searchIndex.backfill?.indexed ?? null,
    backfill_until: searchIndex.backfill ? formatMicros(searchIndex.backfill.until) : null,
  };
}

/**
 * What the log's replays found damaged and moved to quarantine/ (docs/STORAGE.md, "Damage in the
 * log"), for /stats: the totals and the newest entries.
 * @throws the fs error when quarantine/ cannot be read
 */
function logDamage(store: StoreView) {
  const { ranges, bytes, lostEvents, recent } = store.quarantine();
  return {
    quarantined_ranges: ranges,
    quarantined_bytes: bytes,
    events_lost: lostEvents,
    recent: recent.map((entry) => ({
      segment: entry.segment,
      offset: entry.offset,
      end: entry.end,
      lost_events: entry.lostEvents,
      lost_changes: entry.lostChanges,
      missing: entry.missing ?? false,
      lost_files: entry.lostFiles ?? [],
      file: `quarantine/${entry.file}`,
      found_at: entry.foundAt,
    })),
  };
}
