/** Settings (docs/OPERATIONS.md, "Settings"): defaults, parsing, and errors that name the setting. */
import path from 'node:path';
import t from 'tap';
import { ConfigError, configuredSinks, loadConfig, secretsOf } from '../src/config.js';

t.test('defaults', async (t) => {
  const config = loadConfig({});
  t.equal(config.port, 8001);
  t.equal(config.host, '0.0.0.0');
  t.equal(config.dataDir, path.resolve('./data'));
  t.equal(config.apiKey, undefined);
  t.equal(config.retentionDays, 1);
  t.equal(config.maxRecords, 1_000_000);
  t.equal(config.maxRecordSizeBytes, 20 * 1024 * 1024);
  t.equal(config.maxStorageBytes, 10 * 1024 ** 3);
  t.equal(config.cleanupIntervalSeconds, 300);
  t.equal(config.draftAutoFinalizeSeconds, 600);
  t.equal(config.maxVideoUploadBytes, 500 * 1024 * 1024);
  t.equal(config.maxLocalOnlyFileUploadBytes, 100 * 1024 * 1024);
  t.equal(config.cloudUploadUrl, undefined);
  t.equal(config.httpEngine, undefined, 'HTTP_ENGINE unset: the best engine that loads');
  t.equal(config.mqttUrl, undefined, 'MQTT off');
  t.equal(config.mqttTopicPrefix, 'edge-events');
});

t.test('NATS settings: servers, names, defaults; a NATS password is masked too', async (t) => {
  const defaults = loadConfig({});
  t.same(defaults.natsServers, [], 'NATS off');
  t.same(configuredSinks(defaults), []);
  t.same([defaults.natsStream, defaults.natsSubjectPrefix, defaults.natsObjectBucket], ['EDGE_EVENTS', 'edge.events', 'edge-events-files']);
  const config = loadConfig({ NATS_URL: 'nats://edge:n4ts-secret@hub-1:4222, tls://hub-2:4222', NATS_SUBJECT_PREFIX: 'site4.edge', CLOUD_UPLOAD_URL: 'https://cloud.example' });
  t.same(config.natsServers, ['nats://edge:n4ts-secret@hub-1:4222', 'tls://hub-2:4222']);
  t.equal(config.natsSubjectPrefix, 'site4.edge');
  t.same(configuredSinks(config), ['cloud', 'nats']);
  t.ok(secretsOf(config).includes('n4ts-secret'));
  const hub = loadConfig({ NATS_SOURCE_URL: 'nats://hub:4222', NATS_SOURCE_SUBJECTS: 'edge.events.*.safety_alert' });
  t.same([hub.natsSourceServers, hub.natsSourceStream, hub.natsSourceSubjects, hub.natsSourceDurable, hub.natsSourceBucket],
    [['nats://hub:4222'], 'EDGE_EVENTS', 'edge.events.*.safety_alert', 'edge-events-hub', 'edge-events-files']);
  t.same(configuredSinks(hub), [], 'a hub ships nothing unless NATS_URL or cloud upload is set too');
});

t.test('MQTT settings, and the MQTT password among the masked secrets', async (t) => {
  const config = loadConfig({ MQTT_URL: 'mqtts://edge:s%40cret-pass@broker:8883', MQTT_TOPIC_PREFIX: 'site-4/edge' });
  t.equal(config.mqttUrl, 'mqtts://edge:s%40cret-pass@broker:8883');
  t.equal(config.mqttTopicPrefix, 'site-4/edge');
  t.ok(secretsOf(config).includes('s@cret-pass'), 'decoded, as the client sends it');
  t.notOk(secretsOf(loadConfig({ MQTT_URL: 'mqtt://broker' })).includes(''), 'no password: nothing to mask');
});

t.test('HTTP_ENGINE forces an engine', async (t) => {
  t.equal(loadConfig({ HTTP_ENGINE: 'uws' }).httpEngine, 'uws');
  t.equal(loadConfig({ HTTP_ENGINE: ' node ' }).httpEngine, 'node');
  t.equal(loadConfig({ HTTP_ENGINE: '' }).httpEngine, undefined, 'blank means unset');
});

t.test('values are parsed and validated', async (t) => {
  const config = loadConfig({ RETENTION_DAYS: '0.5', PORT: ' 9000 ', API_KEY: 'k', CLOUD_UPLOAD_URL: 'https://cloud.example/api/', DATA_DIR: '/var/lib/edge-events' });
  t.equal(config.retentionDays, 0.5);
  t.equal(config.port, 9000);
  t.equal(config.apiKey, 'k');
  t.equal(config.cloudUploadUrl, 'https://cloud.example/api');
  t.equal(config.dataDir, '/var/lib/edge-events');
  t.equal(loadConfig({ API_KEY: '  ' }).apiKey, undefined, 'blank means unset');
  t.equal(loadConfig({}).indexCheckpointMs, 1000, 'a checkpoint a second by default (docs/STORAGE.md, "The head")');
  t.equal(loadConfig({ INDEX_CHECKPOINT_MS: '250' }).indexCheckpointMs, 250);
  t.equal(loadConfig({}).indexCheckpointMaxMs, 300_000, 'a slowly filling head waits up to five minutes (docs/STORAGE.md, "When a checkpoint runs")');
  t.equal(loadConfig({ INDEX_CHECKPOINT_MAX_MS: '600000' }).indexCheckpointMaxMs, 600_000);
  t.same([loadConfig({}, true).logFormat, loadConfig({}, false).logFormat], ['pretty', 'json'], 'LOG_FORMAT unset: pretty on a terminal, else json');
  t.same([loadConfig({ LOG_FORMAT: 'json' }, true).logFormat, loadConfig({ LOG_FORMAT: 'pretty' }, false).logFormat], ['json', 'pretty'], 'set, either way');

  const bad: [string, string][] = [
    ['PORT', 'eighty'], ['PORT', '65536'], ['RETENTION_DAYS', '0'], ['MAX_RECORDS', '1.5'],
    ['MAX_STORAGE_BYTES', '10GB'], ['CLEANUP_INTERVAL_SECONDS', '0'], ['INDEX_CHECKPOINT_MS', '0'], ['INDEX_CHECKPOINT_MAX_MS', '600001'], ['SEARCH_BASE_URL', 'not a url'], ['LOG_LEVEL', 'loud'],
    ['HTTP_ENGINE', 'fastify'], ['HTTP_ENGINE', 'UWS'], ['LOG_FORMAT', 'yaml'], ['LOG_FORMAT', 'PRETTY'],
    ['NATS_URL', 'http://hub:4222'], ['NATS_URL', 'nats://a:4222,hub'], ['NATS_STREAM', 'EDGE.EVENTS'], ['NATS_SUBJECT_PREFIX', 'edge.>'],
    ['NATS_SOURCE_URL', 'hub:4222'], ['NATS_SOURCE_SUBJECTS', 'edge.>.person'], ['NATS_SOURCE_SUBJECTS', 'edge.cam*'], ['NATS_SOURCE_DURABLE', 'hub.1'],
    ['NATS_SUBJECT_PREFIX', 'edge..events'], ['NATS_OBJECT_BUCKET', 'files bucket'], ['NATS_CREDS', '/no/such/file.creds'],
    ['MQTT_URL', 'http://broker:1883'], ['MQTT_URL', 'broker:1883'], ['MQTT_TOPIC_PREFIX', 'site/#'], ['MQTT_TOPIC_PREFIX', 'a//b'], ['MQTT_TOPIC_PREFIX', '/edge'],
  ];
  for (const [name, value] of bad) {
    const err = (() => {
      try {
        loadConfig({ [name]: value });
      } catch (caught) {
        return caught;
      }
    })();
    t.type(err, ConfigError, `${name}=${value} refused`);
    t.match((err as ConfigError).message, `Invalid setting ${name}=`, `${name} named in the message`);
  }
});
