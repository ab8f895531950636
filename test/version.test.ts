/**
 * The store's version, where an operator looks for it: `edge-events --version` (and `-V`), the
 * start-up log line, and /stats `runtime.version` (docs/OPERATIONS.md, "Logs" and "HTTP engines"),
 * each package.json's.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { cliPath, spawnStore } from '../scripts/lib/spawned-store.js';
import { packageRoot } from '../src/paths.js';
import { getJson } from './support/events.js';
import { tempDataDir } from './support/store-server.js';

const run = promisify(execFile);
const { version } = JSON.parse(fs.readFileSync(path.join(packageRoot, 'package.json'), 'utf8')) as { version: string };

t.test('edge-events --version, the start-up line and /stats name the package\'s version', async (t) => {
  t.equal((await run(process.execPath, [cliPath, '--version'])).stdout, `${version}\n`);
  t.equal((await run(process.execPath, [cliPath, '-V'])).stdout, `${version}\n`);
  const store = await spawnStore({ PORT: '0', DATA_DIR: path.join(tempDataDir(), 'store') });
  t.teardown(() => store.child.kill('SIGKILL'));
  const listening = store.output().split('\n').find((line) => line.includes('edge-event-store listening'));
  t.equal(listening && (JSON.parse(listening) as { version?: string }).version, version, 'the start-up log line');
  t.equal((await getJson(`${store.url}/stats`)).body.runtime.version, version, '/stats runtime.version');
});
