/**
 * Prometheus metrics of the store (docs/OPERATIONS.md, "Metrics"), served by `GET /metrics` in
 * the text exposition format through prom-client, every name prefixed `edge_events_`.
 *
 * Counted as things happen: HTTP requests and their latency by route pattern, method and status;
 * ingested events, images and request bytes; the group commit's rounds (events per round, log
 * append + fdatasync and index commit latency); deletions by reason (from the store's change
 * feed). Read from the store's state at each scrape: stored events, images and bytes, capacity
 * used, the cloud upload backlog and the age of its oldest event, 529 refusals, lifecycle worker
 * restarts, live-stream subscribers. Plus prom-client's default process metrics (process-metrics.ts).
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Config } from '../config.js';
import { clockStatus, type EventStore } from '../store/index.js';
import type { MqttSink } from '../sinks/mqtt-sink.js';
import { sinkStatuses, type SinkStatus } from './sink-status.js';
import { PUBLISHED_TYPES } from '../sinks/mqtt-topic.js';
import type { StreamFanout } from '../stream/stream-fanout.js';
import type { NatsSource } from '../hub/nats-source.js';
import { hubMetrics } from './hub-metrics.js';
import { DEVICE_WRITES_SOURCE, MEASURE_MIN_EVENTS, MEASURE_MIN_SECONDS, WRITES_SOURCE, type DiskWrites } from './disk-writes.js';
import type { LifecycleWorkerHandle } from '../lifecycle/worker-handle.js';
import { processMetrics } from './process-metrics.js';

const PREFIX = 'edge_events_';

/** Latency buckets (seconds): 0.5 ms to 10 s, for requests and commit stages alike. */
const SECONDS_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];
/** Events per commit round. */
const BATCH_BUCKETS = [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000];

/** What the metrics read at each scrape. */
export interface MetricSources {
  config: Config;
  store: EventStore;
  lifecycle: LifecycleWorkerHandle;
  stream: StreamFanout;
  /** The MQTT publisher, when MQTT_URL is set. */
  mqtt?: MqttSink;
  /** Bytes written against bytes accepted. */
  diskWrites: DiskWrites;
  /** Hub mode's consumer, when NATS_SOURCE_URL is set. */
  hub?: NatsSource;
}

/** Distinct paths of ignored keys /metrics labels before it counts the rest as `other`, and the characters of each kept. */
const IGNORED_KEY_PATHS = 100;
const IGNORED_KEY_PATH_CHARS = 200;

export class StoreMetrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'route' | 'method' | 'status'>;
  private readonly requestSeconds: Histogram<'route' | 'method' | 'status'>;
  private readonly ingestedBytes: Counter;
  private readonly ignoredKeys: Counter<'path'>;
  /** The paths ignoredKeys counts by so far: at most IGNORED_KEY_PATHS, then `other`. */
  private readonly ignoredKeyPaths = new Set<string>();

  constructor(sources: MetricSources) {
    const { config, store, lifecycle, stream, mqtt, diskWrites, hub } = sources;
    const registers = [this.registry];
    processMetrics(this.registry, PREFIX);

    // Counted by observeRequest and countIgnoredKeys.
    this.requests = new Counter({ name: `${PREFIX}http_requests_total`, help: 'HTTP requests answered, by route pattern, method and status.', labelNames: ['route', 'method', 'status'], registers });
    this.requestSeconds = new Histogram({ name: `${PREFIX}http_request_duration_seconds`, help: 'Time from a request\'s head to its answer, by route pattern, method and status.', labelNames: ['route', 'method', 'status'], buckets: SECONDS_BUCKETS, registers });
    this.ignoredKeys = new Counter({ name: `${PREFIX}ignored_keys_total`, help: `Keys of create bodies the store ignored (docs/API.md, "Ignored keys"), by path without indices; past ${IGNORED_KEY_PATHS} paths, path="other".`, labelNames: ['path'], registers });
    this.ingestedBytes = new Counter({ name: `${PREFIX}ingested_bytes_total`, help: 'Bytes of request bodies the store kept: creates and attachments answered 2xx.', registers });

    changeFeedMetrics(store, registers);
    commitStageMetrics(store, registers);
    if (hub) hubMetrics(hub, registers, PREFIX);
    diskWriteMetrics(diskWrites, registers);
    storedMetrics(store, config, registers);
    if (store.shipping) sinkMetrics(store, lifecycle, registers);
    lifecycleMetrics(lifecycle, registers);
    scrubMetrics(lifecycle, registers);
    clockMetrics(store, registers);
    cleanupRunMetrics(lifecycle, registers);
    streamMetrics(stream, registers);
    if (mqtt) mqttMetrics(mqtt, registers);
  }

  /**
   * Counts one answered request.
   * @param route the route pattern (`/v2/events/:event_id`), or `unmatched`
   * @param seconds from the request's head to its answer
   * @param storedBodyBytes the body of a create or attachment answered 2xx (bytes, as received),
   *   counted as ingested; 0 for any other request
   */
  observeRequest(route: string, method: string, status: number, seconds: number, storedBodyBytes = 0): void {
    const labels = { route, method, status: String(status) };
    this.requests.inc(labels);
    this.requestSeconds.observe(labels, seconds);
    if (storedBodyBytes > 0) this.ingestedBytes.inc(storedBodyBytes);
  }

  /**
   * Exposes the HTTP server's bound on JSON bodies held at once (docs/OPERATIONS.md, "Memory"):
   * `edge_events_inflight_body_bytes` (held now), `_inflight_body_limit_bytes`
   * (MAX_INFLIGHT_BODY_BYTES) and `edge_events_body_budget_refusals_total` (503 `body_budget_full`).
   * Called once, by the server that holds the budget.
   * @param budget read at each scrape: bytes held, the limit (bytes), refusals since the start
   */
  followBodyBudget(budget: { readonly held: number; readonly limit: number; readonly refusedTotal: number }): void {
    const registers = [this.registry];
    new Gauge({ name: `${PREFIX}inflight_body_bytes`, help: 'Bytes of JSON request bodies held now, from their first byte to their answer.', registers, collect() { this.set(budget.held); } });
    new Gauge({ name: `${PREFIX}inflight_body_limit_bytes`, help: 'MAX_INFLIGHT_BODY_BYTES: the most bytes of JSON request bodies held at once.', registers, collect() { this.set(budget.limit); } });
    new Counter({ name: `${PREFIX}body_budget_refusals_total`, help: 'Requests answered 503 body_budget_full: their body would have passed MAX_INFLIGHT_BODY_BYTES.', registers, collect() { this.reset(); this.inc(budget.refusedTotal); } });
  }

  /**
   * Counts the keys a create's body had that the store ignored, by path (`images.keypointDetections`).
   * A producer chooses its keys, so the labels are bounded: the first IGNORED_KEY_PATHS paths seen
   * get their own (cut to IGNORED_KEY_PATH_CHARS), later ones count as `other`.
   * @param paths unknown-keys.ts `ignoredKeyPath` of each
   */
  countIgnoredKeys(paths: string[]): void {
    for (const whole of paths) {
      const path = whole.slice(0, IGNORED_KEY_PATH_CHARS);
      if (!this.ignoredKeyPaths.has(path) && this.ignoredKeyPaths.size < IGNORED_KEY_PATHS) this.ignoredKeyPaths.add(path);
      this.ignoredKeys.inc({ path: this.ignoredKeyPaths.has(path) ? path : 'other' });
    }
  }

  /** Follows the create preparer (src/events/create-preparer.ts): the creates it prepared off the HTTP thread. */
  followCreatePreparer(creates: { readonly preparedOffThread: number }): void {
    new Counter({
      name: `${PREFIX}creates_prepared_off_thread_total`,
      help: 'Creates whose body was parsed, validated and decoded on the create preparer\'s worker, not the HTTP thread: those weighing at least 1 MiB.',
      registers: [this.registry],
      collect() { this.reset(); this.inc(creates.preparedOffThread); },
    });
  }

  /** The text exposition of every metric, with its Content-Type. */
  async scrape(): Promise<{ text: string; contentType: string }> {
    return { text: await this.registry.metrics(), contentType: this.registry.contentType };
  }
}

/** Counted from the store's change feed: events and images created, events deleted by reason, resets. */
function changeFeedMetrics(store: EventStore, registers: Registry[]): void {
  const ingestedEvents = new Counter({ name: `${PREFIX}ingested_events_total`, help: 'Events created.', registers });
  const ingestedImages = new Counter({ name: `${PREFIX}ingested_images_total`, help: 'Images stored with created events.', registers });
  const deleted = new Counter({ name: `${PREFIX}deleted_events_total`, help: 'Events deleted by cleanup, by reason (retention, max_records, storage).', labelNames: ['reason'], registers });
  const resets = new Counter({ name: `${PREFIX}resets_total`, help: 'Resets (every event deleted).', registers });
  store.changes.listen((change) => {
    if (change.kind === 'created') {
      ingestedEvents.inc();
      if (change.record) ingestedImages.inc(change.record.images.length);
    } else if (change.kind === 'deleted') deleted.inc({ reason: change.reason });
    else if (change.kind === 'reset') resets.inc();
  });
}

/** The group commit's rounds by write stage (`log`, `index`): events per round and its time (seconds). */
function commitStageMetrics(store: EventStore, registers: Registry[]): void {
  const roundEvents = new Histogram({ name: `${PREFIX}commit_batch_events`, help: 'Creates and updates (finalize, attach) per round of a write stage (log: one append; index: one checkpoint).', labelNames: ['stage'], buckets: BATCH_BUCKETS, registers });
  const roundSeconds = new Histogram({ name: `${PREFIX}commit_duration_seconds`, help: 'Time of a round of a write stage: log append + fdatasync (stage=log), or index checkpoint commit (stage=index).', labelNames: ['stage'], buckets: SECONDS_BUCKETS, registers });
  store.onStageTimed((stage, _batches, events, seconds) => {
    roundEvents.observe({ stage }, events);
    roundSeconds.observe({ stage }, seconds);
  });
}

/** Bytes written by the process and by the device under DATA_DIR, and the process's figures (docs/OPERATIONS.md, "Disk writes"). */
function diskWriteMetrics(diskWrites: DiskWrites, registers: Registry[]): void {
  let writtenSoFar = 0;
  new Counter({
    name: `${PREFIX}disk_written_bytes_total`,
    help: `Bytes the store process caused to be written to storage since it started (${WRITES_SOURCE}; absent where the kernel does not report it).`,
    registers,
    collect() {
      const written = diskWrites.written();
      if (written !== undefined && written > writtenSoFar) this.inc(written - writtenSoFar);
      writtenSoFar = Math.max(writtenSoFar, written ?? 0);
    },
  });
  let deviceSoFar = 0;
  new Counter({
    name: `${PREFIX}device_written_bytes_total`,
    help: `Bytes the block device under DATA_DIR wrote since the store started, by every writer on it (${DEVICE_WRITES_SOURCE}; absent where it has none).`,
    labelNames: ['device'],
    registers,
    collect() {
      const written = diskWrites.deviceWritten();
      if (written && written.bytes > deviceSoFar) this.inc({ device: written.name }, written.bytes - deviceSoFar);
      deviceSoFar = Math.max(deviceSoFar, written?.bytes ?? 0);
    },
  });
  /**
   * A gauge of one of the process's disk-write figures (DiskWrites.figures), 0 while it has none;
   * from the totals alone: the whole report would read /proc/diskstats once more per scrape.
   */
  const writeFigure = (name: string, help: string, figure: keyof ReturnType<DiskWrites['figures']>) => new Gauge({
    name: `${PREFIX}${name}`,
    help,
    registers,
    collect() {
      const written = diskWrites.written();
      this.set((written === undefined ? null : diskWrites.figures(written)[figure]) ?? 0);
    },
  });
  // Over the measurement (docs/OPERATIONS.md, "Disk writes"): 0 while it holds less than its minimum.
  const measured = `since the measurement began (the first event accepted after start-up's own writes), 0 until it holds ${MEASURE_MIN_SECONDS / 60} minutes and ${MEASURE_MIN_EVENTS} events`;
  writeFigure('write_amplification_ratio', `Bytes the store process caused to be written to storage (${WRITES_SOURCE}) over bytes of request bodies accepted, ${measured}.`, 'write_amplification');
  writeFigure('disk_written_bytes_per_event', `Bytes the store process caused to be written (${WRITES_SOURCE}) per event accepted, ${measured}.`, 'bytes_written_per_event');
  writeFigure('disk_written_bytes_per_day', `Bytes the store process caused to be written (${WRITES_SOURCE}) at its rate ${measured}, scaled to a day.`, 'bytes_written_per_day');
  writeFigure('disk_written_one_time_bytes', `Bytes the store process caused to be written (${WRITES_SOURCE}) before the measurement began: start-up's own writes (the start-up cleanup, the disk reserve) and the first event's append.`, 'one_time_bytes_written');
}

/** What the store holds, the log's damage in quarantine/, and the share of each capacity in use. */
function storedMetrics(store: EventStore, config: Config, registers: Registry[]): void {
  const counters = () => store.counters();
  new Gauge({ name: `${PREFIX}stored_events`, help: 'Events stored.', registers, collect() { this.set(counters().events); } });
  new Gauge({
    name: `${PREFIX}log_damage_events_lost`,
    help: 'Creates lost with damaged bytes of the segment log that replays moved to quarantine/ (docs/STORAGE.md, "Damage in the log").',
    registers,
    collect() { this.set(store.quarantine().lostEvents); },
  });
  new Gauge({ name: `${PREFIX}log_damage_quarantined_ranges`, help: 'Damaged ranges of the segment log in quarantine/.', registers, collect() { this.set(store.quarantine().ranges); } });
  new Gauge({ name: `${PREFIX}stored_images`, help: 'Images stored.', registers, collect() { this.set(counters().images); } });
  new Counter({
    name: `${PREFIX}index_damaged_reads_total`,
    help: 'Reads that met a damaged page of the index (db/data.mdb) and answered index_damaged (docs/STORAGE.md, "A damaged index").',
    registers,
    collect() { this.reset(); this.inc(store.indexDamage.readsFailed); },
  });
  new Gauge({ name: `${PREFIX}stored_bytes`, help: 'Bytes the store takes: live blob bytes, the log\'s copies of the records, the live blocks\' rows and LMDB pages in use (total_storage_bytes of /stats).', registers, collect() { this.set(store.storageBytes()); } });
  new Gauge({
    name: `${PREFIX}capacity_used_ratio`,
    help: 'Share of a capacity in use: records of MAX_RECORDS, storage of MAX_STORAGE_BYTES.',
    labelNames: ['capacity'],
    registers,
    collect() {
      this.set({ capacity: 'records' }, counters().events / config.maxRecords);
      this.set({ capacity: 'storage' }, store.storageBytes() / config.maxStorageBytes);
    },
  });
}

/** From the lifecycle worker: requests its capacity gate answered 529 (docs/API.md, "Capacity and 529"), and its restarts after a crash. */
function lifecycleMetrics(lifecycle: LifecycleWorkerHandle, registers: Registry[]): void {
  new Counter({ name: `${PREFIX}capacity_refusals_total`, help: 'Requests answered 529 while the store was capacity-blocked.', registers, collect() { this.reset(); this.inc(lifecycle.gate.refusedTotal); } });
  new Counter({ name: `${PREFIX}lifecycle_worker_restarts_total`, help: 'Restarts of the lifecycle worker after a crash.', registers, collect() { this.reset(); this.inc(lifecycle.crashRestarts); } });
}

/** The scrub of the log (docs/STORAGE.md, "The scrub"): bytes verified and what it found, since the store started. */
function scrubMetrics(lifecycle: LifecycleWorkerHandle, registers: Registry[]): void {
  const counter = (name: string, help: string, figure: 'passes' | 'verifiedBytes' | 'damaged' | 'repaired' | 'unrepairable') =>
    new Counter({ name: `${PREFIX}scrub_${name}`, help, registers, collect() { this.reset(); this.inc(lifecycle.scrubStatus?.[figure] ?? 0); } });
  counter('passes_total', 'Whole passes of the scrub over the log.', 'passes');
  counter('verified_bytes_total', 'Bytes of log frames the scrub read and checked.', 'verifiedBytes');
  counter('damaged_total', 'Damage the scrub found: a copy of an event or a file that failed.', 'damaged');
  counter('repaired_total', 'Damage the scrub mended from the other copy.', 'repaired');
  counter('unrepairable_total', 'Damage the scrub could not mend (a file\'s only copy, or the index\'s: see the log).', 'unrepairable');
}

/** Cleanup runs ended, by trigger (docs/API.md, "Cleanup and reset"). */
function cleanupRunMetrics(lifecycle: LifecycleWorkerHandle, registers: Registry[]): void {
  new Counter({
    name: `${PREFIX}cleanup_runs_total`,
    help: 'Cleanup runs ended, by trigger (AUTOMATIC: schedule or a crossed limit; MANUAL: POST /admin/cleanup).',
    labelNames: ['trigger'],
    registers,
    collect() {
      this.reset();
      for (const [trigger, runs] of Object.entries(lifecycle.cleanupRuns)) this.inc({ trigger }, runs);
    },
  });
}

/** Live-stream subscribers (docs/API.md, "Live stream"): connected now, and closed for falling behind. */
function streamMetrics(stream: StreamFanout, registers: Registry[]): void {
  new Gauge({ name: `${PREFIX}stream_subscribers`, help: 'Live-stream subscribers connected.', registers, collect() { this.set(stream.subscribers); } });
  new Counter({ name: `${PREFIX}stream_subscribers_dropped_total`, help: 'Live-stream subscribers closed for falling too far behind.', registers, collect() { this.reset(); this.inc(stream.dropped); } });
}

/** The store's clock against a wall clock that jumps (docs/STORAGE.md, "A clock that jumps"). */
function clockMetrics(store: EventStore, registers: Registry[]): void {
  new Counter({
    name: `${PREFIX}clock_jumps_total`,
    help: 'Steps of the wall clock over 1 s the store found (while running, at start against its newest event, over a downtime within one boot), by direction, since the store was created.',
    labelNames: ['direction'],
    registers,
    collect() {
      const { jumps } = clockStatus(store);
      this.reset();
      this.inc({ direction: 'forward' }, jumps.forward);
      this.inc({ direction: 'backward' }, jumps.backward);
    },
  });
  new Gauge({ name: `${PREFIX}clock_last_jump_seconds`, help: 'Size of the last jump of the wall clock the store found (negative: set back; 0 before any).', registers, collect() { this.set((clockStatus(store).jumps.last?.micros ?? 0) / 1e6); } });
  new Counter({ name: `${PREFIX}restamped_events_total`, help: 'Events re-stamped at start because a clock set back had left them ahead of it, since the store was created.', registers, collect() { this.reset(); this.inc(clockStatus(store).jumps.restamped); } });
  new Gauge({ name: `${PREFIX}store_running_seconds`, help: 'How long the store has run over all its starts, by the monotonic clock: the time retention also reckons by.', registers, collect() { this.set(clockStatus(store).running / 1e6); } });
  new Gauge({ name: `${PREFIX}created_at_ahead_seconds`, help: 'How far created_at runs ahead of the wall clock after a jump back while running (0 otherwise); the next start re-stamps.', registers, collect() { this.set(clockStatus(store).ahead / 1e6); } });
}

/** The MQTT publisher's metrics (docs/OPERATIONS.md, "MQTT"). */
function mqttMetrics(mqtt: MqttSink, registers: Registry[]): void {
  new Gauge({ name: `${PREFIX}mqtt_connected`, help: '1 while connected to the MQTT broker, else 0.', registers, collect() { this.set(mqtt.status().connected ? 1 : 0); } });
  new Counter({
    name: `${PREFIX}mqtt_published_total`,
    help: 'Messages the MQTT broker acknowledged, by type (created, finalized, deleted).',
    labelNames: ['type'],
    registers,
    collect() {
      this.reset();
      for (const type of PUBLISHED_TYPES) this.inc({ type }, mqtt.published[type]);
    },
  });
  new Gauge({
    name: `${PREFIX}mqtt_oldest_unpublished_age_seconds`,
    help: 'Age of the oldest event not yet published to MQTT (0 when none waits).',
    registers,
    collect() { this.set(mqtt.status().oldest_unpublished_age_seconds ?? 0); },
  });
  new Counter({ name: `${PREFIX}mqtt_changes_skipped_total`, help: 'Finalizes and deletions not published: too many while the broker was away.', registers, collect() { this.reset(); this.inc(mqtt.changesSkipped); } });
  new Counter({ name: `${PREFIX}mqtt_dead_lettered_messages_total`, help: 'Messages no broker would take (over its Maximum Packet Size, or refused for their topic or payload), dropped instead of retried.', registers, collect() { this.reset(); this.inc(mqtt.deadLetteredTotal); } });
}

/** Per configured sink (docs/OPERATIONS.md, "Sinks"): backlog, its oldest event's age, stalls, shipped, dead letters. */
function sinkMetrics(store: EventStore, lifecycle: LifecycleWorkerHandle, registers: Registry[]): void {
  const statuses = () => Object.entries(sinkStatuses(store, lifecycle.sinkProgress));
  const gauge = (name: string, help: string, read: (status: SinkStatus) => number) => new Gauge({
    name: `${PREFIX}${name}`, help, labelNames: ['sink'], registers,
    collect() {
      for (const [sink, status] of statuses()) this.set({ sink }, read(status));
    },
  });
  const counter = (name: string, help: string, read: (status: SinkStatus) => number) => new Counter({
    name: `${PREFIX}${name}`, help, labelNames: ['sink'], registers,
    collect() {
      this.reset();
      for (const [sink, status] of statuses()) this.inc({ sink }, read(status));
    },
  });
  gauge('sink_backlog_events', 'Finalized events a sink has not shipped.', (s) => s.backlog_events);
  gauge('sink_oldest_unshipped_age_seconds', 'Age of the oldest event a sink has not shipped (0 when none waits).', (s) => s.oldest_unshipped_age_seconds ?? 0);
  gauge('sink_stalled', '1 while a sink made no progress for a minute with events waiting.', (s) => (s.stalled ? 1 : 0));
  counter('sink_shipped_total', 'Events a sink shipped (acknowledged by its destination) since the store started.', (s) => s.shipped_total);
  counter('sink_dead_lettered_total', 'Events a sink\'s destination refused for good since the store started.', (s) => s.dead_lettered_total);
}
