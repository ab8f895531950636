/**
 * The settings table (src/settings.ts; docs/OPERATIONS.md, "Settings", "Misspelt settings"): the
 * one list of the settings' names, which loadConfig reads and the CLI's text names; and the
 * variables of the environment that look like settings but are none, told at start (a log line
 * each), in /stats over real HTTP, by `edge-events check` and `edge-events serve --check-config`
 * in the same lines, and refused under UNKNOWN_SETTINGS=reject.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { runCheckCli } from '../src/check/check-command.js';
import { ConfigError, loadConfig, UnknownSettingsError } from '../src/config.js';
import { findUnknownSettings, SETTING_NAMES, settingPrefixes, SETTINGS, unknownSettingsReport } from '../src/settings.js';
import { spawnStore } from '../scripts/lib/spawned-store.js';
import { runCli } from './support/cli-process.js';
import { getJson, postJson, smallEvent } from './support/events.js';
import { responseProblems } from './support/response-shapes.js';
import { startStore, tempDataDir } from './support/store-server.js';

/** The misspellings a field probe's env file held (issue 72). */
const MISSPELT = { RETENTION_DAY: '30', MAX_VIDEO_UPLOAD_BYTE: '1000', ALLOWED_HOST: 'event-store' };
const MISSPELT_FOUND = [
  { name: 'ALLOWED_HOST', didYouMean: 'ALLOWED_HOSTS' },
  { name: 'MAX_VIDEO_UPLOAD_BYTE', didYouMean: 'MAX_VIDEO_UPLOAD_BYTES' },
  { name: 'RETENTION_DAY', didYouMean: 'RETENTION_DAYS' },
];

/** What an edge box's environment holds besides the store's settings: the shell's, systemd's, Node's, npm's, a container's. */
const UNRELATED = [
  'PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'TERM', 'PWD', 'OLDPWD', 'SHLVL', '_', 'LANG', 'LANGUAGE', 'LC_ALL', 'TZ', 'TMPDIR', 'MAIL', 'EDITOR',
  'INVOCATION_ID', 'NOTIFY_SOCKET', 'WATCHDOG_USEC', 'WATCHDOG_PID', 'JOURNAL_STREAM', 'SYSTEMD_EXEC_PID', 'MAINPID', 'MANAGERPID',
  'LISTEN_FDS', 'LISTEN_PID', 'LISTEN_FDNAMES', 'STATE_DIRECTORY', 'RUNTIME_DIRECTORY', 'CACHE_DIRECTORY', 'LOGS_DIRECTORY',
  'CONFIGURATION_DIRECTORY', 'CREDENTIALS_DIRECTORY', 'MEMORY_PRESSURE_WATCH', 'MEMORY_PRESSURE_WRITE',
  'NODE_OPTIONS', 'NODE_ENV', 'NODE_COMPILE_CACHE', 'NODE_EXTRA_CA_CERTS', 'NODE_PATH', 'NODE_USE_ENV_PROXY', 'UV_THREADPOOL_SIZE',
  'UWS_HTTP_MAX_HEADERS_SIZE', 'HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'http_proxy', 'https_proxy', 'no_proxy', 'CLOUD_SDK_VERSION',
  'npm_config_cache', 'npm_lifecycle_event', 'npm_package_name', 'npm_config_user_agent', 'npm_execpath', 'INIT_CWD',
  'CI', 'DEBIAN_FRONTEND', 'container', 'HOSTNAME', 'XDG_RUNTIME_DIR', 'DBUS_SESSION_BUS_ADDRESS', 'SSH_AUTH_SOCK', 'SSH_CONNECTION',
  'KUBERNETES_SERVICE_HOST', 'KUBERNETES_SERVICE_PORT', 'CUDA_VISIBLE_DEVICES', 'LD_LIBRARY_PATH', 'PYTHONPATH',
  'STORE_URL', 'EDGE_EVENTS_KEEP_ALL_BINARIES', 'TAP', 'TAP_CHILD_ID', 'TAP_JOBS', 'TAP_TIMEOUT',
];

/** Words shaped as settings are (`NATS_URL`, `DATA_DIR`) in a text. */
const settingWords = (text: string): string[] => [...new Set(text.match(/\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b/g) ?? [])];

/** The in-process `edge-events check`'s output and exit code. */
async function check(argv: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runCheckCli(argv, { stdout: { write: (text: string) => (stdout += text) }, stderr: { write: (text: string) => (stderr += text) }, env });
  return { code, stdout, stderr };
}

/** A data folder a store wrote one event to, then stopped. */
async function usedDataDir(): Promise<string> {
  const store = await startStore();
  await postJson(`${store.url}/v2/events`, smallEvent());
  await store.stop();
  return store.dataDir;
}

t.test('loadConfig reads the names of the settings table and no other; every Config field has its row', async (t) => {
  const read = new Set<string>();
  const env = new Proxy({}, { get: (_target, key) => (typeof key === 'string' && read.add(key), undefined) });
  loadConfig(env);
  t.same([...read].sort(), [...SETTING_NAMES].sort());
  t.same(Object.keys(SETTINGS).sort(), Object.keys(loadConfig({})).filter((field) => field !== 'unknownSettingsFound').sort(), 'each row named as its field');
});

t.test('a variable close to a setting, or beginning as settings do, is found with the setting it likely meant', async (t) => {
  t.same(findUnknownSettings(MISSPELT), MISSPELT_FOUND);
  t.same(findUnknownSettings({ NATS_SERVERS: 'nats://hub:4222', MAX_UPLOAD_BYTES: '1', INDEX_CHECKPOINT_SECONDS: '5', retention_days: '30', LOGLEVEL: 'debug' }), [
    { name: 'INDEX_CHECKPOINT_SECONDS', didYouMean: 'INDEX_CHECKPOINT_MS' },
    { name: 'LOGLEVEL', didYouMean: 'LOG_LEVEL' },
    { name: 'MAX_UPLOAD_BYTES', didYouMean: undefined },
    { name: 'NATS_SERVERS', didYouMean: undefined },
    { name: 'retention_days', didYouMean: 'RETENTION_DAYS' },
  ]);
  t.same(findUnknownSettings({ ...Object.fromEntries(UNRELATED.map((name) => [name, 'x'])), PORT: '8001', NATS_URL: 'nats://hub:4222' }), [], 'the rest of the environment is left alone');
  t.same(findUnknownSettings({ RETENTION_DAY: undefined }), [], 'a variable set to undefined is absent');
});

t.test('the prefixes and names come from the settings table: a setting added to it is known at once', async (t) => {
  t.same(['MAX_', 'NATS_', 'RETENTION_', 'INDEX_', 'MQTT_', 'CLOUD_', 'SEARCH_'].filter((prefix) => !settingPrefixes().includes(prefix)), []);
  const withScrub = [...SETTING_NAMES, 'SCRUB_PASS_HOURS'];
  t.ok(settingPrefixes(withScrub).includes('SCRUB_'));
  t.same(findUnknownSettings({ SCRUB_PASS_HOURS: '6', SCRUB_PASS_HOUR: '6', SCRUB_INTERVAL: '1' }, withScrub), [
    { name: 'SCRUB_INTERVAL', didYouMean: undefined },
    { name: 'SCRUB_PASS_HOUR', didYouMean: 'SCRUB_PASS_HOURS' },
  ]);
});

t.test('loadConfig keeps what it found; UNKNOWN_SETTINGS=reject refuses it in one line naming each', async (t) => {
  const config = loadConfig(MISSPELT);
  t.same(config.unknownSettingsFound, MISSPELT_FOUND);
  t.equal(config.retentionDays, 1, 'RETENTION_DAY sets nothing');
  t.equal(config.unknownSettings, 'warn', 'the default');
  t.same(loadConfig({}).unknownSettingsFound, []);
  const refusal = t.throws(() => loadConfig({ ...MISSPELT, UNKNOWN_SETTINGS: 'reject' })) as Error;
  t.ok(refusal instanceof UnknownSettingsError && refusal instanceof ConfigError, 'a ConfigError, as every bad setting');
  t.equal(refusal.message, 'UNKNOWN_SETTINGS=reject: these variables of the environment look like settings but are none: '
    + 'ALLOWED_HOST (did you mean ALLOWED_HOSTS?), MAX_VIDEO_UPLOAD_BYTE (did you mean MAX_VIDEO_UPLOAD_BYTES?), RETENTION_DAY (did you mean RETENTION_DAYS?)');
  t.equal(loadConfig({ UNKNOWN_SETTINGS: 'reject' }).unknownSettings, 'reject', 'nothing to refuse');
  t.throws(() => loadConfig({ UNKNOWN_SETTINGS: 'ignore' }), { message: 'Invalid setting UNKNOWN_SETTINGS="ignore": expected warn or reject (unset: warn)' });
});

t.test('/stats names them, with the setting each likely meant', async (t) => {
  const store = await startStore(MISSPELT);
  t.teardown(store.stop);
  const stats = (await getJson(`${store.url}/stats`)).body;
  t.same(stats.unknown_settings, [
    { name: 'ALLOWED_HOST', did_you_mean: 'ALLOWED_HOSTS' },
    { name: 'MAX_VIDEO_UPLOAD_BYTE', did_you_mean: 'MAX_VIDEO_UPLOAD_BYTES' },
    { name: 'RETENTION_DAY', did_you_mean: 'RETENTION_DAYS' },
  ]);
  t.equal(stats.configuration.retention_days, 1);
  t.same(responseProblems('stats', stats), []);
  const plain = await startStore({ NATS_SERVERS: 'nats://hub:4222' });
  t.teardown(plain.stop);
  t.same((await getJson(`${plain.url}/stats`)).body.unknown_settings, [{ name: 'NATS_SERVERS', did_you_mean: null }]);
});

t.test('the store logs one warning line for each at start', async (t) => {
  const store = await spawnStore({ ...MISSPELT, PORT: '0', DATA_DIR: tempDataDir() });
  t.teardown(() => store.child.kill('SIGKILL'));
  const lines = store.output().split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as { level: number; msg: string; setting?: string; did_you_mean?: string });
  const warned = lines.filter((line) => line.setting !== undefined && line.setting in MISSPELT);
  t.same(warned.map(({ level, setting, did_you_mean, msg }) => ({ level, setting, did_you_mean, msg })), MISSPELT_FOUND.map(({ name, didYouMean }) => ({
    level: 40, setting: name, did_you_mean: didYouMean, msg: `${name} is not a setting of the store; did you mean ${didYouMean}?; it is ignored`,
  })));
});

t.test('serve --check-config says what check says, validates the values, and serves nothing', async (t) => {
  const dataDir = path.join(tempDataDir(), 'never-made');
  const env = { ...MISSPELT, DATA_DIR: dataDir };
  const lines = unknownSettingsReport(MISSPELT_FOUND, 'warn');
  t.same(lines, [
    '3 variables of the environment look like settings but are none: the store ignores them.',
    '  ALLOWED_HOST is not a setting of the store; did you mean ALLOWED_HOSTS?',
    '  MAX_VIDEO_UPLOAD_BYTE is not a setting of the store; did you mean MAX_VIDEO_UPLOAD_BYTES?',
    '  RETENTION_DAY is not a setting of the store; did you mean RETENTION_DAYS?',
  ]);
  const valid = await runCli(['serve', '--check-config'], { env });
  t.equal(valid.code, 0, valid.stderr);
  for (const line of lines.slice(1)) t.match(valid.stdout, line);
  t.match(valid.stdout, /The settings are valid: the store would start with them\.\n$/);

  const rejected = await runCli(['serve', '--check-config'], { env: { ...env, UNKNOWN_SETTINGS: 'reject' } });
  t.equal(rejected.code, 1);
  t.match(rejected.stderr, /look like settings but are none: the store refuses to start \(UNKNOWN_SETTINGS=reject\)\./);
  for (const line of lines.slice(1)) t.match(rejected.stderr, line);
  t.equal(rejected.stdout, '');

  const bad = await runCli(['serve', '--check-config'], { env: { ...env, PORT: 'eighty' } });
  t.equal(bad.code, 1);
  t.match(bad.stderr, 'error: Invalid setting PORT="eighty": expected an integer from 0 to 65535\n');
  t.notOk(fs.existsSync(dataDir), 'no data folder made: nothing served');

  const checked = await check(['--data-dir', await usedDataDir()], env);
  t.equal(checked.code, 0, checked.stderr);
  t.match(checked.stdout, `No damage found.\n\n${lines.join('\n')}\n`, 'check says the same lines');
});

t.test('serve under UNKNOWN_SETTINGS=reject exits 1 with one line naming each and its suggestion', async (t) => {
  const dataDir = path.join(tempDataDir(), 'never-made');
  const refused = await runCli(['serve'], { env: { ...MISSPELT, UNKNOWN_SETTINGS: 'reject', PORT: '0', DATA_DIR: dataDir } });
  t.equal(refused.code, 1);
  t.equal(refused.stderr.trimEnd().split('\n').length, 1, refused.stderr);
  t.match(refused.stderr, /^UNKNOWN_SETTINGS=reject: these variables of the environment look like settings but are none: .*ALLOWED_HOST \(did you mean ALLOWED_HOSTS\?\), MAX_VIDEO_UPLOAD_BYTE \(did you mean MAX_VIDEO_UPLOAD_BYTES\?\), RETENTION_DAY \(did you mean RETENTION_DAYS\?\)/);
  t.notOk(fs.existsSync(dataDir), 'refused before the data folder');
});

t.test('check names them in JSON too, and exits 1 under UNKNOWN_SETTINGS=reject', async (t) => {
  const dataDir = await usedDataDir();
  const json = await check(['--data-dir', dataDir, '--json'], MISSPELT);
  t.equal(json.code, 0);
  t.same(JSON.parse(json.stdout).unknown_settings, MISSPELT_FOUND.map(({ name, didYouMean }) => ({ name, did_you_mean: didYouMean })));
  t.same(JSON.parse((await check(['--data-dir', dataDir, '--json'], {})).stdout).unknown_settings, []);
  const rejected = await check(['--data-dir', dataDir], { ...MISSPELT, UNKNOWN_SETTINGS: 'reject' });
  t.equal(rejected.code, 1, 'the store would not start');
  t.match(rejected.stdout, 'No damage found.\n\n3 variables of the environment look like settings but are none: the store refuses to start (UNKNOWN_SETTINGS=reject).\n');
});

t.test('check names settings from the settings table in its help and its errors: NATS_URL, not NATS_SERVERS', async (t) => {
  const help = await runCli(['check', '--help']);
  t.equal(help.code, 0);
  t.same(settingWords(help.stdout).filter((word) => !(SETTING_NAMES as readonly string[]).includes(word)), [], 'every setting it names is one');
  t.match(help.stdout.replace(/\s+/g, ' '), 'no CLOUD_UPLOAD_URL, no NATS_URL');

  const dataDir = await usedDataDir();
  fs.rmSync(path.join(dataDir, 'db'), { recursive: true });
  const refused = await check(['--data-dir', dataDir, '--repair'], {});
  t.equal(refused.code, 1);
  t.match(refused.stderr, 'this environment configures none (no CLOUD_UPLOAD_URL, no NATS_URL); nothing was changed');
  t.same(settingWords(refused.stderr).filter((word) => !(SETTING_NAMES as readonly string[]).includes(word)), []);
});
