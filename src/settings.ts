/**
 * The settings table (docs/OPERATIONS.md, "Settings"): the environment name of every setting, by
 * the `Config` field it fills. It is the one list of the settings' names:
 * - `loadConfig` (src/config.ts) reads no other name: its readers take a `SettingName`, so a
 *   setting added there without its row here does not compile (test/settings.test.ts checks that
 *   every `Config` field has its row, named as the field);
 * - text that names a setting takes its name from here (`SETTINGS.natsServers` is `NATS_URL`
 *   wherever the CLI says it), so a renamed setting leaves no stale word behind;
 * - the variables of the environment that look like settings but are none (`findUnknownSettings`)
 *   are told from it, so a new setting is known to that check as soon as it is read.
 */
import { nearestName } from './query-language/nearest-name.js';

export const SETTINGS = {
  host: 'HOST',
  port: 'PORT',
  dataDir: 'DATA_DIR',
  apiKey: 'API_KEY',
  retentionDays: 'RETENTION_DAYS',
  scrubPassHours: 'SCRUB_PASS_HOURS',
  maxRecords: 'MAX_RECORDS',
  maxRecordSizeBytes: 'MAX_RECORD_SIZE_BYTES',
  maxStorageBytes: 'MAX_STORAGE_BYTES',
  cleanupIntervalSeconds: 'CLEANUP_INTERVAL_SECONDS',
  indexCheckpointMs: 'INDEX_CHECKPOINT_MS',
  indexCheckpointMaxMs: 'INDEX_CHECKPOINT_MAX_MS',
  draftAutoFinalizeSeconds: 'DRAFT_AUTO_FINALIZE_SECONDS',
  maxVideoUploadBytes: 'MAX_VIDEO_UPLOAD_BYTES',
  maxLocalOnlyFileUploadBytes: 'MAX_LOCAL_ONLY_FILE_UPLOAD_BYTES',
  maxListResponseBytes: 'MAX_LIST_RESPONSE_BYTES',
  maxListScanRecords: 'MAX_LIST_SCAN_RECORDS',
  maxPredictionsPerImage: 'MAX_PREDICTIONS_PER_IMAGE',
  maxPointsPerEvent: 'MAX_POINTS_PER_EVENT',
  maxInflightBodyBytes: 'MAX_INFLIGHT_BODY_BYTES',
  lingeringCloseMaxBytes: 'LINGERING_CLOSE_MAX_BYTES',
  lingeringCloseSeconds: 'LINGERING_CLOSE_SECONDS',
  streamSubscriberBufferBytes: 'STREAM_SUBSCRIBER_BUFFER_BYTES',
  diskReserveBytes: 'DISK_RESERVE_BYTES',
  thumbnailQueueMax: 'THUMBNAIL_QUEUE_MAX',
  defaultSolutionId: 'DEFAULT_SOLUTION_ID',
  cloudUploadUrl: 'CLOUD_UPLOAD_URL',
  cloudApiKey: 'CLOUD_API_KEY',
  mqttUrl: 'MQTT_URL',
  mqttTopicPrefix: 'MQTT_TOPIC_PREFIX',
  natsServers: 'NATS_URL',
  natsCreds: 'NATS_CREDS',
  natsStream: 'NATS_STREAM',
  natsSubjectPrefix: 'NATS_SUBJECT_PREFIX',
  natsObjectBucket: 'NATS_OBJECT_BUCKET',
  natsReplicas: 'NATS_REPLICAS',
  natsMaxAgeSeconds: 'NATS_MAX_AGE_SECONDS',
  natsMaxBytes: 'NATS_MAX_BYTES',
  natsSourceServers: 'NATS_SOURCE_URL',
  natsSourceStream: 'NATS_SOURCE_STREAM',
  natsSourceSubjects: 'NATS_SOURCE_SUBJECTS',
  natsSourceDurable: 'NATS_SOURCE_DURABLE',
  natsSourceBucket: 'NATS_SOURCE_BUCKET',
  natsSourceLagWarnSeconds: 'NATS_SOURCE_LAG_WARN_SECONDS',
  searchBaseUrl: 'SEARCH_BASE_URL',
  searchApiKey: 'SEARCH_API_KEY',
  searchWorkspace: 'SEARCH_WORKSPACE',
  searchProxyOpen: 'SEARCH_PROXY_OPEN',
  allowedHosts: 'ALLOWED_HOSTS',
  corsAllowedOrigins: 'CORS_ALLOWED_ORIGINS',
  logLevel: 'LOG_LEVEL',
  logFormat: 'LOG_FORMAT',
  httpEngine: 'HTTP_ENGINE',
  unknownKeys: 'UNKNOWN_KEYS',
  unknownSettings: 'UNKNOWN_SETTINGS',
  nonImagePayloads: 'NON_IMAGE_PAYLOADS',
} as const;

/** The environment name of a setting: `NATS_URL`, `RETENTION_DAYS`, ... */
export type SettingName = (typeof SETTINGS)[keyof typeof SETTINGS];

/** Every setting's name, in the table's order. */
export const SETTING_NAMES: readonly SettingName[] = Object.values(SETTINGS);

// ---------------------------------------------------------------------------------------------
// Variables that look like settings but are none (docs/OPERATIONS.md, "Misspelt settings")

/** A variable of the environment that looks like a setting but is none, and the setting it likely meant. */
export interface UnknownSetting {
  /** The variable's name, as the environment spells it. */
  name: string;
  /** The setting it was likely meant as (nearest-name.ts), or undefined when none is close. */
  didYouMean: string | undefined;
}

/**
 * The first words of settings' names that have more than one, with their `_` (`MAX_`, `NATS_`,
 * `RETENTION_`, `INDEX_`, `MQTT_`, `CLOUD_`, ...): a variable beginning with one is meant for the store.
 * @param names the settings' names (default: the table's)
 */
export function settingPrefixes(names: readonly string[] = SETTING_NAMES): string[] {
  return [...new Set(names.flatMap((name) => (name.includes('_') ? [name.slice(0, name.indexOf('_') + 1)] : [])))];
}

/**
 * Variables of other programs whose names begin as a setting's do: the HTTP proxy of curl, wget
 * and Node's own fetch (`NODE_USE_ENV_PROXY`), as HTTP_ENGINE does; the version the Google Cloud
 * SDK's container images set, as CLOUD_UPLOAD_URL does.
 */
const OTHER_PROGRAMS = new Set(['HTTP_PROXY', 'CLOUD_SDK_VERSION']);

/**
 * The variables of `env` that look like settings but are none, by name: those that begin with a
 * setting's first word (`settingPrefixes`, case as written) or whose name is close to a
 * setting's (`nearestName`, the did-you-mean of the query language: without case and
 * underscores, a name it begins or begins with, else within a third of its length in edits).
 * Values are never read, so the secret of a misspelt key goes nowhere.
 * @param env the environment (`process.env`); variables set to undefined are absent
 * @param names the settings' names (default: the table's, so a setting added to it is known here at once)
 * @returns each such variable, sorted by name
 */
export function findUnknownSettings(env: Record<string, string | undefined>, names: readonly string[] = SETTING_NAMES): UnknownSetting[] {
  const known = new Set(names);
  const prefixes = settingPrefixes(names);
  const found: UnknownSetting[] = [];
  for (const name of Object.keys(env).sort()) {
    if (env[name] === undefined || known.has(name) || OTHER_PROGRAMS.has(name)) continue;
    const didYouMean = nearestName(name, names);
    if (didYouMean !== undefined || prefixes.some((prefix) => name.startsWith(prefix))) found.push({ name, didYouMean });
  }
  return found;
}

/**
 * The variables of `env` that look like settings but are none, and what UNKNOWN_SETTINGS says to
 * do with them (docs/OPERATIONS.md, "Misspelt settings"): `warn` (unset or blank) or `reject`.
 * @throws ConfigError when UNKNOWN_SETTINGS is neither
 */
export function unknownSettingsOf(env: Record<string, string | undefined>): { found: UnknownSetting[]; policy: 'warn' | 'reject' } {
  const policy = env[SETTINGS.unknownSettings]?.trim() || 'warn';
  if (policy !== 'warn' && policy !== 'reject') throw new ConfigError(SETTINGS.unknownSettings, 'warn or reject (unset: warn)', policy);
  return { found: findUnknownSettings(env), policy };
}

/**
 * The fields of `Config` (src/config.ts) that unknownSettingsOf gives: UNKNOWN_SETTINGS and the
 * variables found.
 * @throws UnknownSettingsError under UNKNOWN_SETTINGS=reject when there are any; ConfigError as unknownSettingsOf
 */
export function unknownSettingsConfig(env: Record<string, string | undefined>): { unknownSettings: 'warn' | 'reject'; unknownSettingsFound: UnknownSetting[] } {
  const { found, policy } = unknownSettingsOf(env);
  if (policy === 'reject' && found.length > 0) throw new UnknownSettingsError(found);
  return { unknownSettings: policy, unknownSettingsFound: found };
}

/** A setting with a bad value; the message names the setting and what it expects. */
export class ConfigError extends Error {
  constructor(readonly setting: string, expected: string, got: string) {
    super(`Invalid setting ${setting}=${JSON.stringify(got)}: expected ${expected}`);
    this.name = 'ConfigError';
  }
}

/**
 * Variables that look like settings but are none, under UNKNOWN_SETTINGS=reject (src/config.ts
 * `loadConfig`): one line naming each and the setting it likely meant.
 */
export class UnknownSettingsError extends ConfigError {
  constructor(readonly found: readonly UnknownSetting[]) {
    super(SETTINGS.unknownSettings, '', 'reject');
    const named = found.map(({ name, didYouMean }) => (didYouMean ? `${name} (did you mean ${didYouMean}?)` : name));
    this.message = `${SETTINGS.unknownSettings}=reject: these variables of the environment look like settings but are none: ${named.join(', ')}`;
    this.name = 'UnknownSettingsError';
  }
}

/**
 * One line about an unknown setting, the same in the start-up log, `edge-events check` and
 * `edge-events serve --check-config`: `RETENTION_DAY is not a setting of the store; did you mean
 * RETENTION_DAYS?`.
 */
export function describeUnknownSetting({ name, didYouMean }: UnknownSetting): string {
  return `${name} is not a setting of the store${didYouMean ? `; did you mean ${didYouMean}?` : ' (docs/OPERATIONS.md, "Settings", lists them)'}`;
}

/**
 * What `edge-events check` and `edge-events serve --check-config` say of the unknown settings
 * `found`, in the same lines: a heading saying what the store does with them under `policy`
 * (UNKNOWN_SETTINGS), then one line each (`describeUnknownSetting`); none when there is none.
 */
export function unknownSettingsReport(found: readonly UnknownSetting[], policy: 'warn' | 'reject'): string[] {
  if (found.length === 0) return [];
  const what = found.length === 1 ? '1 variable of the environment looks like a setting but is none' : `${found.length} variables of the environment look like settings but are none`;
  const does = policy === 'reject' ? `the store refuses to start (${SETTINGS.unknownSettings}=reject)` : `the store ignores ${found.length === 1 ? 'it' : 'them'}`;
  return [`${what}: ${does}.`, ...found.map((unknown) => `  ${describeUnknownSetting(unknown)}`)];
}

/** The unknown settings as /stats and `edge-events check --json` give them (docs/API.md, "Statistics"). */
export function unknownSettingsJson(found: readonly UnknownSetting[]): { name: string; did_you_mean: string | null }[] {
  return found.map(({ name, didYouMean }) => ({ name, did_you_mean: didYouMean ?? null }));
}
