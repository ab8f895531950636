/**
 * The settings table (src/settings.ts; docs/OPERATIONS.md, "Settings"): the one list of the
 * settings' names, which loadConfig reads and the CLI's text names.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { runCheckCli } from '../src/check/check-command.js';
import { loadConfig } from '../src/config.js';
import { SETTING_NAMES, SETTINGS } from '../src/settings.js';
import { runCli } from './support/cli-process.js';
import { postJson, smallEvent } from './support/events.js';
import { startStore } from './support/store-server.js';

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
  t.same(Object.keys(SETTINGS).sort(), Object.keys(loadConfig({})).sort(), 'each row named as its field');
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
