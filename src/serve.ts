/**
 * `edge-events serve`: loads the settings, builds the main thread's parts (`startService`, its
 * composition root: docs/ARCHITECTURE.md, "Who builds what"), serves, tells systemd when it is
 * ready (docs/OPERATIONS.md, "Supervision by systemd"), and stops gracefully on SIGTERM/SIGINT
 * (systemd's stop): no new requests, in-flight writes finished.
 */
import { configuredSinks, ConfigError, loadConfig, secretsOf, type Config } from './config.js';
import { presentEventJson } from './events/present.js';
import type { RuntimeInfo } from './http/engine.js';
import { startServer, type RunningServer } from './http/server.js';
import { createLogger, type Logger } from './logger.js';
import { DiskWrites } from './operations/disk-writes.js';
import { LifecycleWorkerHandle } from './lifecycle/worker-handle.js';
import { StoreMetrics } from './operations/metrics.js';
import { describeUnknownSetting, findUnknownSettings, SETTINGS, unknownSettingsOf, unknownSettingsReport } from './settings.js';
import { EventStore, formatMicros, formatMicrosOrNull, type BackfillProgress } from './store/index.js';
import { DEFAULT_STREAM_OPTIONS, StreamFanout } from './stream/stream-fanout.js';
import type { NatsSource } from './hub/nats-source.js';
import type { MqttSink } from './sinks/mqtt-sink.js';
import { superviseStore, type Supervision } from './supervision/service-supervision.js';
import { openSystemdNotifier, watchdogIntervalMs } from './supervision/systemd-notify.js';

/** A started store. */
export interface StoreService {
  config: Config;
  /** The port listened on (useful with PORT=0). */
  port: number;
  log: Logger;
  /** The lifecycle worker's manager (tests terminate its worker to see it restarted). */
  lifecycle: LifecycleWorkerHandle;
  /** Node version and HTTP engine in use. */
  runtime: RuntimeInfo;
  /** Events stored, bytes taken (live blobs and LMDB pages: /stats' total_storage_bytes), and whether the store answers 529 (`capacity_blocked`). */
  figures(): { events: number; storageBytes: number; capacityBlocked: boolean };
  /** Graceful stop: background work ended, no new requests, in-flight ones finished (up to `graceMs`), store closed. */
  stop(graceMs?: number): Promise<void>;
}

/** Seconds between two log lines of the search index backfill. */
const BACKFILL_LOG_SECONDS = 5;

/** Logs the search index backfill (docs/STORAGE.md, "The search index"): every few seconds, and when done. */
function searchIndexLogger(log: Logger): (progress: BackfillProgress, done: boolean) => void {
  let lastLog = 0;
  const started = performance.now();
  return (progress, done) => {
    const now = performance.now();
    if (done) {
      log.info({ indexed: progress.indexed, seconds: Math.round((now - started) / 100) / 10 }, 'search index backfill done');
    } else if (now - lastLog >= BACKFILL_LOG_SECONDS * 1000) {
      lastLog = now;
      log.info({ indexed: progress.indexed, at: formatMicrosOrNull(progress.last), until: formatMicros(progress.until) }, 'search index backfill under way');
    }
  };
}

/**
 * One warning line per variable of the environment that looks like a setting but is none
 * (docs/OPERATIONS.md, "Misspelt settings"), naming the setting it likely meant.
 */
function warnOfUnknownSettings(config: Config, log: Logger): void {
  for (const unknown of config.unknownSettingsFound) {
    log.warn({ setting: unknown.name, did_you_mean: unknown.didYouMean ?? null }, `${describeUnknownSetting(unknown)}; it is ignored`);
  }
}

/** Opens the store under `config.dataDir` and logs how the open found it: damage quarantined, creates the replay went past. */
async function openStore(config: Config, log: Logger): Promise<EventStore> {
  const store = await EventStore.open(config.dataDir, {
    sinks: configuredSinks(config),
    present: presentEventJson,
    onBackgroundError: (err, task) => log.error({ err, task }, 'store background work failed'),
    onSearchIndexProgress: searchIndexLogger(log),
    onClockJump: (jump) => log.warn({ jump }, 'the wall clock jumped (docs/STORAGE.md, "A clock that jumps")'),
    checkpointMs: config.indexCheckpointMs,
    checkpointMaxMs: config.indexCheckpointMaxMs,
  });
  log.info({ store: store.opened }, 'store opened');
  for (const damage of store.opened.quarantined) {
    if (damage.missing) log.error(damage, 'bytes of the log the index says were written are gone (the segment file is missing or cut short): the files named are lost, and any create only the log held there; recorded in quarantine/ (docs/STORAGE.md, "Damage in the log")');
    else log.error(damage, 'the log replay went past damaged bytes: the events and changes they held are lost, the bytes were moved to quarantine/ (docs/STORAGE.md, "Damage in the log")');
  }
  for (const skipped of store.opened.skipped) log.warn(skipped, 'the log replay went past a create naming a file no frame holds; it is not in the index (docs/STORAGE.md, "Recovery")');
  return store;
}

/** The HTTP thread's long-lived parts besides the store and the server, which is given them all. */
interface ServiceParts {
  lifecycle: LifecycleWorkerHandle;
  /** Settles once the lifecycle worker is ready (it loads while the server already answers). */
  workerReady: Promise<void>;
  hub: NatsSource | undefined;
  stream: StreamFanout;
  mqtt: MqttSink | undefined;
  diskWrites: DiskWrites;
  metrics: StoreMetrics;
}

/** Builds the parts around the open store, each given those it needs; the worker starts loading. */
async function buildParts(config: Config, store: EventStore, log: Logger): Promise<ServiceParts> {
  const lifecycle = new LifecycleWorkerHandle(config, store, log);
  // The worker loads while the server already answers: start-up time is the HTTP side's.
  const workerReady = lifecycle.start();
  workerReady.catch(() => undefined); // handled by startService; never an unhandled rejection meanwhile
  // The NATS and MQTT clients are loaded only where configured: together they are about a fifth
  // of the server's module load, on every start-up of a box that uses neither.
  // Hub mode: consume a fleet's stream into this store (docs/OPERATIONS.md, "Hub mode"), once serving.
  const hub = config.natsSourceServers.length === 0 ? undefined
    : new (await import('./hub/nats-source.js')).NatsSource(store, config, lifecycle.gate, log.child({ hub: config.natsSourceDurable }));
  const stream = new StreamFanout(store, { ...DEFAULT_STREAM_OPTIONS, maxQueuedBytes: config.streamSubscriberBufferBytes });
  const mqtt = config.mqttUrl === undefined ? undefined
    : new (await import('./sinks/mqtt-sink.js')).MqttSink({ ...config, mqttUrl: config.mqttUrl }, store, stream, log.child({ sink: 'mqtt' }));
  // Per-event figures begin once the worker's start-up cleanup ran (and took the disk reserve): one-time writes apart.
  const diskWrites = new DiskWrites(config.dataDir, () => lifecycle.lastCleanup !== undefined);
  const metrics = new StoreMetrics({ config, store, lifecycle, stream, mqtt, diskWrites, hub });
  return { lifecycle, workerReady, hub, stream, mqtt, diskWrites, metrics };
}

/** Starts the HTTP server on the parts and waits for the worker; on a failure closes what was built and rethrows. */
async function serveParts(config: Config, store: EventStore, log: Logger, parts: ServiceParts): Promise<RunningServer> {
  const { workerReady, ...served } = parts;
  const { lifecycle, stream, mqtt } = served;
  try {
    const server = await startServer({ config, store, log, ...served });
    await workerReady;
    return server;
  } catch (err) {
    await mqtt?.stop();
    stream.close();
    await lifecycle.stop();
    await store.close();
    throw err;
  }
}

/**
 * The main thread's composition root (docs/ARCHITECTURE.md, "Threads"): opens the store under
 * `config.dataDir`, builds every long-lived part of the HTTP thread (the lifecycle worker's
 * handle, the stream fan-out, the MQTT sink, the disk-write figures, the metrics, the hub
 * source), hands them to the HTTP server and to each other, and serves. `stop` closes them in
 * order; the server closes only its listener and connections. The lifecycle worker is its own
 * thread's root (src/lifecycle/worker.ts).
 * @throws NativeServerUnavailable, or the error that prevented opening or listening
 */
export async function startService(config: Config): Promise<StoreService> {
  const log = createLogger(config.logLevel, secretsOf(config), config.logFormat);
  warnOfUnknownSettings(config, log);
  const store = await openStore(config, log);
  const parts = await buildParts(config, store, log);
  const server = await serveParts(config, store, log, parts);
  const { hub, lifecycle, mqtt, stream } = parts;
  hub?.start();
  return {
    config,
    port: server.port,
    log,
    lifecycle,
    runtime: server.runtime,
    figures: () => ({ events: store.counters().events, storageBytes: store.storageBytes(), capacityBlocked: lifecycle.gate.blocked }),
    async stop(graceMs) {
      await hub?.stop(); // the event under way stored and acknowledged
      await lifecycle.stop();
      server.stopListening();
      await mqtt?.stop(); // its cursor written; what it had not published is published at the next start
      stream.close(); // streams end with their resume point; in-flight writes finish
      await server.drained(graceMs);
      await store.close();
      log.info('edge-event-store stopped');
    },
  };
}

/**
 * `edge-events serve --check-config` (docs/OPERATIONS.md, "Checking the settings"): reads and
 * validates the settings of `env` as `serve` would, and serves nothing. Says what `edge-events
 * check` says of variables that look like settings but are none (settings.ts
 * `unknownSettingsReport`), then either that the settings are valid, on stdout, or each refusal,
 * on stderr: a bad value (its setting and what it accepts), and those variables under
 * UNKNOWN_SETTINGS=reject.
 * @returns 0 when the store would start with these settings, 1 when it would refuse to
 */
export function checkSettings(env: Record<string, string | undefined>, io: { stdout: { write(text: string): unknown }; stderr: { write(text: string): unknown } }): 0 | 1 {
  const problems: string[] = [];
  let unknown = { found: findUnknownSettings(env), policy: 'warn' as Config['unknownSettings'] };
  try {
    unknown = unknownSettingsOf(env);
    // The values, whatever UNKNOWN_SETTINGS says of the variables above.
    loadConfig({ ...env, [SETTINGS.unknownSettings]: 'warn' });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    problems.push(err.message);
  }
  const refused = unknown.policy === 'reject' && unknown.found.length > 0;
  const lines = unknownSettingsReport(unknown.found, unknown.policy);
  if (lines.length > 0) (refused ? io.stderr : io.stdout).write(`${lines.join('\n')}\n`);
  for (const problem of problems) io.stderr.write(`error: ${problem}\n`);
  if (problems.length > 0 || refused) return 1;
  io.stdout.write('The settings are valid: the store would start with them.\n');
  return 0;
}

/** Runs the store until a stop signal; exits the process with 0 after a graceful stop, 1 on a bad start. */
export async function serveUntilStopped(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(1);
    }
    throw err;
  }
  // Signals are caught from the start: one that arrives while the store starts (it answers
  // before its worker is ready) stops it gracefully once started.
  let service: StoreService | undefined;
  let supervision: Supervision | undefined;
  let pendingSignal: string | undefined;
  let stopping = false;
  const stop = (signal: string) => {
    if (!service) {
      pendingSignal ??= signal;
      return;
    }
    if (stopping) return;
    stopping = true;
    const running = service;
    running.log.info({ signal }, 'stopping');
    supervision?.stopping();
    running.stop().then(
      () => {
        supervision?.close();
        process.exit(0);
      },
      (err: unknown) => {
        running.log.error({ err }, 'graceful stop failed');
        supervision?.close();
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  try {
    service = await startService(config);
  } catch (err) {
    console.error(`edge-events: cannot start: ${(err as Error).message}`);
    process.exit(1);
  }
  // Open and listening: READY=1 for systemd's Type=notify, then status and watchdog pings.
  const notifier = openSystemdNotifier(service.log);
  if (notifier) {
    const watchdogMs = watchdogIntervalMs();
    supervision = superviseStore(service, notifier, watchdogMs);
    service.log.info({ notifySocket: notifier.socketPath, watchdogMs: watchdogMs ?? null }, 'systemd notified: ready');
  }
  if (pendingSignal) stop(pendingSignal);
}
