/**
 * The settings table (docs/OPERATIONS.md, "Settings"): the environment name of every setting, by
 * the `Config` field it fills. It is the one list of the settings' names:
 * - `loadConfig` (src/config.ts) reads no other name: its readers take a `SettingName`, so a
 *   setting added there without its row here does not compile, and `config.ts` checks that every
 *   `Config` field has its row;
 * - text that names a setting takes its name from here (`SETTINGS.natsServers` is `NATS_URL`
 *   wherever the CLI says it), so a renamed setting leaves no stale word behind;
 * - the variables of the environment that look like settings but are none (`unknownSettings`)
 *   are told from it, so a new setting is known to that check as soon as it is read.
 */

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
  searchBaseUrl: 'SEARCH_BASE_URL',
  searchApiKey: 'SEARCH_API_KEY',
  searchWorkspace: 'SEARCH_WORKSPACE',
  searchProxyOpen: 'SEARCH_PROXY_OPEN',
  allowedHosts: 'ALLOWED_HOSTS',
  corsAllowedOrigins: 'CORS_ALLOWED_ORIGINS',
  logLevel: 'LOG_LEVEL',
  httpEngine: 'HTTP_ENGINE',
  unknownKeys: 'UNKNOWN_KEYS',
  nonImagePayloads: 'NON_IMAGE_PAYLOADS',
} as const;

/** The environment name of a setting: `NATS_URL`, `RETENTION_DAYS`, ... */
export type SettingName = (typeof SETTINGS)[keyof typeof SETTINGS];

/** Every setting's name, in the table's order. */
export const SETTING_NAMES: readonly SettingName[] = Object.values(SETTINGS);
