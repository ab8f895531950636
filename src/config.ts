/**
 * Every setting (docs/OPERATIONS.md, "Settings"), read from the environment once, validated and
 * typed, under the names of the settings table (src/settings.ts). A bad value throws
 * `ConfigError` naming the setting; `edge-events serve` prints it and exits 1.
 */
import fs from 'node:fs';
import path from 'node:path';
import { natsSettings } from './nats-settings.js';
import { type Env, list, number, text } from './setting-readers.js';
import { ConfigError, unknownSettingsConfig, UnknownSettingsError, type SettingName, type UnknownSetting } from './settings.js';
import { DEFAULT_CHECKPOINT_MAX_MS, DEFAULT_CHECKPOINT_MS } from './store/index.js';

export { ConfigError, UnknownSettingsError };

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

export interface Config {
  host: string;
  port: number;
  /** Absolute path of the data directory (LMDB env, blob segments, staging). */
  dataDir: string;
  /** Unset: authentication off. */
  apiKey: string | undefined;
  /** Days; decimals allowed. */
  retentionDays: number;
  /** Hours one whole pass of the scrub over the log may take, paced evenly (docs/STORAGE.md, "The scrub"). */
  scrubPassHours: number;
  maxRecords: number;
  /** Bytes: largest accepted create body. */
  maxRecordSizeBytes: number;
  /** Bytes: live blob bytes + the log's record copies + LMDB pages in use. */
  maxStorageBytes: number;
  cleanupIntervalSeconds: number;
  /** Wait of the head before a checkpoint once it holds 2,000 creates and changes, or with sinks (ms; docs/STORAGE.md, "When a checkpoint runs"). */
  indexCheckpointMs: number;
  /** Wait of a head holding fewer, with no sink (ms; the same section). */
  indexCheckpointMaxMs: number;
  draftAutoFinalizeSeconds: number;
  maxVideoUploadBytes: number;
  maxLocalOnlyFileUploadBytes: number;
  /**
   * Bytes: a list page (`GET /v2/events`, `/v2/events/latest/query`) stops adding events once its
   * body would pass this (it always holds at least one); also the stored bytes one list request
   * may read.
   */
  maxListResponseBytes: number;
  /** Records one list request may read, matching or not, before it answers with `next_timestamp`. */
  maxListScanRecords: number;
  /** Entries per image, summed over detections, segmentations, keypoint groups and classifications. */
  maxPredictionsPerImage: number;
  /** Polygon points and keypoints of one create, summed over its images (docs/API.md, "Create an event"). */
  maxPointsPerEvent: number;
  /**
   * Bytes of JSON request bodies the store holds at once, from the first byte received to the
   * answer, each weighed by its bytes and what parsing adds (docs/OPERATIONS.md, "Memory"); a body
   * that would pass it answers 503 `body_budget_full`. At least maxRecordSizeBytes.
   */
  maxInflightBodyBytes: number;
  /**
   * Bytes of a request's body the store still reads, and drops, after answering it before its body
   * was read (a 413, 409, 421, 503 or 529 to an upload: lingering close, as nginx's
   * `lingering_close`): the client can then finish sending and read the answer instead of a broken
   * pipe. A body declared longer than this is cut off at once; 0: never (docs/ARCHITECTURE.md, "The
   * steps of a request", step 10).
   */
  lingeringCloseMaxBytes: number;
  /** Seconds after such an answer past which the rest of the body is no longer waited for, and the connection is closed; 0: never linger. */
  lingeringCloseSeconds: number;
  /**
   * Bytes of live-stream messages one subscriber may have waiting while it is behind; past it
   * the store closes its stream with its resume point (docs/API.md, "Live stream").
   */
  streamSubscriberBufferBytes: number;
  /** Bytes kept free in DATA_DIR for cleanup's commits on a full disk (store/log/disk-reserve.ts); 0: none. */
  diskReserveBytes: number;
  /**
   * Thumbnails waiting to be made beyond the one being made (THUMBNAIL_QUEUE_MAX; docs/API.md,
   * "Thumbnails"): past it a thumbnail request answers 503 `thumbnails_busy` with Retry-After.
   */
  thumbnailQueueMax: number;
  defaultSolutionId: string | undefined;
  /** Unset: cloud upload off. */
  cloudUploadUrl: string | undefined;
  cloudApiKey: string | undefined;
  /** Unset: MQTT publishing off (docs/OPERATIONS.md, "MQTT"). mqtt://, mqtts://, ws:// or wss://, credentials in the URL. */
  mqttUrl: string | undefined;
  /** First topic level of published events: `<prefix>/<device_id>/<event_schema>`. */
  mqttTopicPrefix: string;
  /** NATS servers (nats:// or tls:// URLs); empty: the JetStream sink is off (docs/OPERATIONS.md, "NATS JetStream"). */
  natsServers: string[];
  /** A NATS credentials file (JWT and NKey seed); unset: none. */
  natsCreds: string | undefined;
  /** The JetStream stream events are published to (created when absent). */
  natsStream: string;
  /** Subject prefix: events go to `<prefix>.<device_id>.<event_schema>`. */
  natsSubjectPrefix: string;
  /** The JetStream object store bucket images and videos go to (created when absent). */
  natsObjectBucket: string;
  /** Limits of the stream and bucket the sink creates (when absent): replicas, age (s; 0: none), bytes (0: none). */
  natsReplicas: number;
  natsMaxAgeSeconds: number;
  natsMaxBytes: number;
  /** Hub mode (docs/OPERATIONS.md, "Hub mode"): the servers of the fleet's stream; empty: off. */
  natsSourceServers: string[];
  /** The stream a hub consumes. */
  natsSourceStream: string;
  /** The subjects it takes (one filter subject, wildcards allowed): several hubs split a fleet by it. */
  natsSourceSubjects: string;
  /** Its durable consumer's name (created when absent). */
  natsSourceDurable: string;
  /** The bucket it fetches the events' files from. */
  natsSourceBucket: string;
  /**
   * How long a hub's lag must grow before it is logged at warn, once, and its recovery once (s;
   * at least 4: the consumer's info is read once a second, and each quarter of the window needs a
   * read; docs/OPERATIONS.md, "Hub mode", "Lag in sight"; src/hub/hub-lag.ts).
   */
  natsSourceLagWarnSeconds: number;
  /** Unset: the search proxy routes answer 404 and the search CLI asks for --base-url. */
  searchBaseUrl: string | undefined;
  /** Unset: the search proxy routes answer 404. */
  searchApiKey: string | undefined;
  /** The one workspace the search gateway forwards; unset: any. */
  searchWorkspace: string | undefined;
  /**
   * Serve the search gateway with API_KEY unset (SEARCH_PROXY_OPEN=true): anyone who reaches the
   * port may then search with the device's hosted key. Default false: no store key, no gateway.
   */
  searchProxyOpen: boolean;
  /**
   * Names added to the default ones (localhost, the hostname, `<hostname>.local`, the machine's
   * addresses) by which any client may reach the store (ALLOWED_HOSTS; see http/browser-guard.ts,
   * `allowedHostNames`): under a DNS name not among them every route answers 421.
   */
  allowedHosts: string[];
  /** Origins whose pages may change the store (CORS_ALLOWED_ORIGINS), e.g. `http://dashboard:3000`. */
  corsAllowedOrigins: string[];
  /** pino level: fatal, error, warn, info, debug, trace or silent. */
  logLevel: string;
  /**
   * LOG_FORMAT: `json` (JSON lines, for journald and log shippers) or `pretty` (lines for a
   * person, pino-pretty); unset: `pretty` when stdout is a terminal, else `json`.
   */
  logFormat: 'json' | 'pretty';
  /** HTTP_ENGINE: `uws` or `node` forces that engine; unset: native uWebSockets.js when it loads, else node. */
  httpEngine: 'uws' | 'node' | undefined;
  /**
   * UNKNOWN_KEYS: what a create body's keys the schema does not define get (docs/API.md, "Ignored
   * keys"): `warn` (default) ignores them and names them in the 201's `warnings`; `reject` answers 422.
   */
  unknownKeys: 'warn' | 'reject';
  /**
   * NON_IMAGE_PAYLOADS: what a create's image whose bytes are no image type gets (docs/API.md,
   * "Image types"): `reject` (default) answers 422 naming what the bytes are; `warn` stores them
   * and names them in the 201's `warnings`.
   */
  nonImagePayloads: 'warn' | 'reject';
  /**
   * UNKNOWN_SETTINGS: what variables of the environment that look like settings but are none get
   * (docs/OPERATIONS.md, "Misspelt settings"): `warn` (default) logs one line each at start and
   * names them in /stats; `reject` makes them a start-up error (`UnknownSettingsError`).
   */
  unknownSettings: 'warn' | 'reject';
  /** The variables of the environment that look like settings but are none (settings.ts `findUnknownSettings`). */
  unknownSettingsFound: readonly UnknownSetting[];
}

const HTTP_SCHEMES = ['http:', 'https:'];
const MQTT_SCHEMES = ['mqtt:', 'mqtts:', 'ws:', 'wss:'];

function url(env: Env, name: SettingName, fallback?: string, schemes = HTTP_SCHEMES, expected = 'an http(s) URL'): string | undefined {
  const raw = text(env, name) ?? fallback;
  if (raw === undefined) return undefined;
  try {
    const parsed = new URL(raw);
    if (!schemes.includes(parsed.protocol)) throw new Error('scheme');
  } catch {
    throw new ConfigError(name, expected, raw);
  }
  return raw.replace(/\/+$/, '');
}

/** A file that exists and can be read. */
function readableFile(env: Env, name: SettingName): string | undefined {
  const raw = text(env, name);
  if (raw === undefined) return undefined;
  try {
    fs.accessSync(raw, fs.constants.R_OK);
  } catch {
    throw new ConfigError(name, 'a readable file', raw);
  }
  return path.resolve(raw);
}

/** A topic prefix: one or more levels, none empty, without the wildcards `+` and `#` (MQTT 5, 4.7). */
function topicPrefix(env: Env, name: SettingName, fallback: string): string {
  const raw = text(env, name) ?? fallback;
  if (/[+#\u0000]/.test(raw) || raw.split('/').some((level) => level === '')) {
    throw new ConfigError(name, 'topic levels separated by /, none empty, without + or #', raw);
  }
  return raw;
}

function origins(env: Env, name: SettingName): string[] {
  const values = list(env, name);
  for (const value of values) {
    let origin: string | undefined;
    try {
      origin = new URL(value).origin;
    } catch {
      origin = undefined;
    }
    if (origin !== value.replace(/\/+$/, '')) throw new ConfigError(name, 'comma-separated origins such as http://dashboard:3000', value);
  }
  return values.map((value) => value.replace(/\/+$/, ''));
}

function flag(env: Env, name: SettingName): boolean {
  const raw = text(env, name);
  if (raw === undefined || raw === 'false') return false;
  if (raw === 'true') return true;
  throw new ConfigError(name, 'true or false', raw);
}

/**
 * MAX_INFLIGHT_BODY_BYTES (docs/OPERATIONS.md, "Memory"): 64 MiB, or MAX_RECORD_SIZE_BYTES when
 * that is larger; never below MAX_RECORD_SIZE_BYTES, or a body the store takes could never be read.
 */
function inflightBodyBytes(env: Env, maxRecordSizeBytes: number): number {
  return number(env, 'MAX_INFLIGHT_BODY_BYTES', Math.max(64 * MiB, maxRecordSizeBytes), { min: maxRecordSizeBytes, max: 64 * GiB });
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function logLevelOf(env: Env): string {
  const logLevel = text(env, 'LOG_LEVEL') ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError('LOG_LEVEL', LOG_LEVELS.join(', '), logLevel);
  return logLevel;
}

/**
 * A setting that takes one of `choices` (LOG_FORMAT, HTTP_ENGINE, UNKNOWN_KEYS, NON_IMAGE_PAYLOADS).
 * @param unset its value when absent; `unsetMeans` says it in the error
 * @throws ConfigError naming the choices
 */
function choice<T extends string, U extends T | undefined>(env: Env, setting: SettingName, choices: readonly T[], unset: U, unsetMeans: string): T | U {
  const raw = text(env, setting);
  if (raw === undefined) return unset;
  const found = choices.find((name) => name === raw);
  if (!found) throw new ConfigError(setting, `${choices.join(' or ')} (unset: ${unsetMeans})`, raw);
  return found;
}
const LOG_FORMATS = ['json', 'pretty'] as const;
const HTTP_ENGINES = ['uws', 'node'] as const;
const INPUT_POLICIES = ['warn', 'reject'] as const;

/**
 * Reads and validates every setting.
 * @param env the environment (default `process.env`)
 * @param stdoutIsTerminal whether the logs go to a terminal, for LOG_FORMAT's default (default:
 *   whether this process's stdout is one; the lifecycle worker gets the config read here)
 * @throws ConfigError naming the first setting with a bad value; UnknownSettingsError (a
 *   ConfigError) under UNKNOWN_SETTINGS=reject when `env` holds variables that look like
 *   settings but are none
 */
export function loadConfig(env: Env = process.env, stdoutIsTerminal = process.stdout.isTTY === true): Config {
  const maxRecordSizeBytes = number(env, 'MAX_RECORD_SIZE_BYTES', 20 * MiB, { min: 1024, max: 1 * GiB });
  return {
    // UNKNOWN_SETTINGS and what it says of the variables that look like settings, first: under reject they are refused.
    ...unknownSettingsConfig(env),
    host: text(env, 'HOST') ?? '0.0.0.0',
    port: number(env, 'PORT', 8001, { max: 65535 }),
    dataDir: path.resolve(text(env, 'DATA_DIR') ?? './data'),
    apiKey: text(env, 'API_KEY'),
    retentionDays: number(env, 'RETENTION_DAYS', 1, { integer: false, min: 0.000001 }),
    scrubPassHours: number(env, 'SCRUB_PASS_HOURS', 168, { integer: false, min: 0.0001 }),
    maxRecords: number(env, 'MAX_RECORDS', 1_000_000, { min: 1 }),
    maxRecordSizeBytes,
    maxStorageBytes: number(env, 'MAX_STORAGE_BYTES', 10 * GiB, { min: MiB }),
    cleanupIntervalSeconds: number(env, 'CLEANUP_INTERVAL_SECONDS', 300, { min: 1 }),
    indexCheckpointMs: number(env, 'INDEX_CHECKPOINT_MS', DEFAULT_CHECKPOINT_MS, { min: 1, max: 60_000 }),
    indexCheckpointMaxMs: number(env, 'INDEX_CHECKPOINT_MAX_MS', DEFAULT_CHECKPOINT_MAX_MS, { min: 1, max: 600_000 }),
    draftAutoFinalizeSeconds: number(env, 'DRAFT_AUTO_FINALIZE_SECONDS', 600, { min: 1 }),
    maxVideoUploadBytes: number(env, 'MAX_VIDEO_UPLOAD_BYTES', 500 * MiB, { min: 1 }),
    maxLocalOnlyFileUploadBytes: number(env, 'MAX_LOCAL_ONLY_FILE_UPLOAD_BYTES', 100 * MiB, { min: 1 }),
    maxListResponseBytes: number(env, 'MAX_LIST_RESPONSE_BYTES', 16 * MiB, { min: 1024, max: 1 * GiB }),
    maxListScanRecords: number(env, 'MAX_LIST_SCAN_RECORDS', 10_000, { min: 1 }),
    maxPredictionsPerImage: number(env, 'MAX_PREDICTIONS_PER_IMAGE', 10_000, { min: 1 }),
    maxPointsPerEvent: number(env, 'MAX_POINTS_PER_EVENT', 100_000, { min: 1 }),
    maxInflightBodyBytes: inflightBodyBytes(env, maxRecordSizeBytes),
    lingeringCloseMaxBytes: number(env, 'LINGERING_CLOSE_MAX_BYTES', 64 * MiB, { max: 64 * GiB }),
    lingeringCloseSeconds: number(env, 'LINGERING_CLOSE_SECONDS', 30, { max: 3600 }),
    streamSubscriberBufferBytes: number(env, 'STREAM_SUBSCRIBER_BUFFER_BYTES', 4 * MiB, { min: 64 * 1024 }),
    diskReserveBytes: number(env, 'DISK_RESERVE_BYTES', 8 * MiB, { min: 0 }),
    // The default is src/events/thumbnails.ts THUMBNAIL_QUEUE_MAX (the operator page asks for up to 200 at once).
    thumbnailQueueMax: number(env, 'THUMBNAIL_QUEUE_MAX', 256, { min: 0, max: 100_000 }),
    defaultSolutionId: text(env, 'DEFAULT_SOLUTION_ID'),
    cloudUploadUrl: url(env, 'CLOUD_UPLOAD_URL'),
    cloudApiKey: text(env, 'CLOUD_API_KEY'),
    mqttUrl: url(env, 'MQTT_URL', undefined, MQTT_SCHEMES, 'an mqtt://, mqtts://, ws:// or wss:// URL'),
    mqttTopicPrefix: topicPrefix(env, 'MQTT_TOPIC_PREFIX', 'edge-events'),
    natsCreds: readableFile(env, 'NATS_CREDS'),
    ...natsSettings(env),
    searchBaseUrl: url(env, 'SEARCH_BASE_URL'),
    searchApiKey: text(env, 'SEARCH_API_KEY'),
    searchWorkspace: text(env, 'SEARCH_WORKSPACE'),
    searchProxyOpen: flag(env, 'SEARCH_PROXY_OPEN'),
    allowedHosts: list(env, 'ALLOWED_HOSTS'),
    corsAllowedOrigins: origins(env, 'CORS_ALLOWED_ORIGINS'),
    logLevel: logLevelOf(env),
    // LOG_FORMAT unset: pretty on a terminal (`stdoutIsTerminal`), JSON anywhere else (journald).
    logFormat: choice(env, 'LOG_FORMAT', LOG_FORMATS, stdoutIsTerminal ? 'pretty' : 'json', 'pretty on a terminal, else json'),
    httpEngine: choice(env, 'HTTP_ENGINE', HTTP_ENGINES, undefined, 'the best that loads'),
    unknownKeys: choice(env, 'UNKNOWN_KEYS', INPUT_POLICIES, 'warn', 'warn'),
    nonImagePayloads: choice(env, 'NON_IMAGE_PAYLOADS', INPUT_POLICIES, 'reject', 'reject'),
  };
}

/**
 * The sinks the settings configure (docs/OPERATIONS.md, "Sinks"): `cloud` with CLOUD_UPLOAD_URL,
 * `nats` with NATS_URL.
 */
export function configuredSinks(config: Config): string[] {
  return [...(config.cloudUploadUrl === undefined ? [] : ['cloud']), ...(config.natsServers.length === 0 ? [] : ['nats'])];
}

/**
 * The settings' secrets, which the logger masks (src/logger.ts): the hosted search's and the
 * cloud's keys, and the passwords MQTT_URL and NATS_URL carry.
 */
export function secretsOf(config: Config): (string | undefined)[] {
  const passwords = [config.mqttUrl, ...config.natsServers, ...config.natsSourceServers].flatMap((url) => (url === undefined ? [] : [decodeURIComponent(new URL(url).password)]));
  return [config.searchApiKey, config.cloudApiKey, ...passwords.filter((password) => password !== '')];
}
