/**
 * The settings file the package ships (systemd/edge-events.env.example, installed as
 * /etc/edge-events/edge-events.env by the .deb) says that each commented value is the default:
 * setting any of them must change nothing that loadConfig reads (docs/OPERATIONS.md, "Settings").
 * DATA_DIR (the unit's StateDirectory) and the URLs that turn an optional sink on are examples,
 * set in the baseline so that the settings under them are read.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { loadConfig } from '../src/config.js';
import { packageRoot } from '../src/paths.js';
import { SETTING_NAMES } from '../src/settings.js';

const EXAMPLES = ['DATA_DIR', 'MQTT_URL', 'NATS_URL', 'NATS_SOURCE_URL'];

t.test('every commented value of the env example is the default', async (t) => {
  const text = fs.readFileSync(path.join(packageRoot, 'systemd', 'edge-events.env.example'), 'utf8');
  const settings = [...text.matchAll(/^#([A-Z][A-Z0-9_]*)=(.*)$/gm)].map(([, name, value]) => ({ name: name!, value: value! }));
  t.ok(settings.length >= 40, `${settings.length} settings in the example`);
  const baseline = Object.fromEntries(settings.filter(({ name }) => EXAMPLES.includes(name)).map(({ name, value }) => [name, value]));
  const defaults = loadConfig(baseline);
  const differing = settings.filter(({ name, value }) => value !== '' && !EXAMPLES.includes(name))
    .filter(({ name, value }) => JSON.stringify(loadConfig({ ...baseline, [name]: value })) !== JSON.stringify(defaults));
  t.same(differing.map(({ name, value }) => `${name}=${value}`), [], 'setting the commented value changes nothing');
});

t.test('the env example and docs/OPERATIONS.md name every setting of the settings table, and no other', async (t) => {
  const text = fs.readFileSync(path.join(packageRoot, 'systemd', 'edge-events.env.example'), 'utf8');
  const listed = [...text.matchAll(/^#([A-Z][A-Z0-9_]*)=/gm)].map(([, name]) => name!);
  t.same([...listed].sort(), [...SETTING_NAMES].sort());
  const operations = fs.readFileSync(path.join(packageRoot, 'docs', 'OPERATIONS.md'), 'utf8');
  t.same(SETTING_NAMES.filter((name) => !operations.includes(`\`${name}\``)), [], 'each named in OPERATIONS.md');
});
