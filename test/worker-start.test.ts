/**
 * The store's worker threads start without the preloads of the process that runs them
 * (src/worker-start.ts): those of its command line and those of NODE_OPTIONS, which a worker given
 * options of its own reads again (a test runner's hooks are there); the other Node options stay.
 * The lifecycle worker under real Node options: end-to-end/http-process.test.ts. The stores and
 * commands a test spawns start without tap's hooks too when coverage is off
 * (scripts/lib/spawned-store.ts, `withoutRunnerHooks`).
 */
import t from 'tap';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cliPath, spawnStore, withoutRunnerHooks } from '../scripts/lib/spawned-store.js';
import { tempDataDir } from './support/store-server.js';
import { joinNodeOptions, nodeOptionsWithoutPreloads, splitNodeOptions, startWorker } from '../src/worker-start.js';

t.test('NODE_OPTIONS is split as Node splits it, and joined back to the same arguments', async (t) => {
  t.same(splitNodeOptions('--max-old-space-size=300  --require ./a.cjs'), ['--max-old-space-size=300', '--require', './a.cjs']);
  t.same(splitNodeOptions('"--import=file:///a b/c.mjs" --trace-warnings'), ['--import=file:///a b/c.mjs', '--trace-warnings']);
  t.same(splitNodeOptions('--title="say \\"hi\\" \\\\ there"'), ['--title=say "hi" \\ there']);
  t.same(splitNodeOptions(''), []);
  for (const args of [['--a', 'b c', 'd"e', 'f\\g'], ['--import=file:///x y/z.mjs'], []]) {
    t.same(splitNodeOptions(joinNodeOptions(args)), args, JSON.stringify(args));
  }
});

t.test('a worker does not run the preloads of NODE_OPTIONS, and keeps its other options', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'worker-start-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const required = path.join(dir, 'a preload.cjs');
  fs.writeFileSync(required, 'globalThis.requiredPreload = true;\n');
  const imported = path.join(dir, 'imported.mjs');
  fs.writeFileSync(imported, 'globalThis.importedPreload = true;\n');
  const before = process.env.NODE_OPTIONS;
  t.teardown(() => {
    if (before === undefined) delete process.env.NODE_OPTIONS;
    else process.env.NODE_OPTIONS = before;
  });
  process.env.NODE_OPTIONS = `--trace-warnings --require "${required}" --import=file://${imported} --max-old-space-size=300`;
  const report = new URL(`data:text/javascript,${encodeURIComponent(
    "import { parentPort } from 'node:worker_threads';\n"
    + 'parentPort.postMessage({ nodeOptions: process.env.NODE_OPTIONS, required: globalThis.requiredPreload ?? false, imported: globalThis.importedPreload ?? false });\n',
  )}`);
  const worker = startWorker(report);
  t.teardown(() => worker.terminate());
  const [seen] = await once(worker, 'message') as [{ nodeOptions: string; required: boolean; imported: boolean }];
  t.same(seen, { nodeOptions: '--trace-warnings --max-old-space-size=300', required: false, imported: false });
});

t.test('NODE_OPTIONS less its preloads, given as one argument or two', async (t) => {
  t.equal(nodeOptionsWithoutPreloads('--max-old-space-size=300 "--import=file:///a b/c.mjs" --require ./d.cjs -r ./e.cjs --trace-warnings'), '--max-old-space-size=300 --trace-warnings');
  t.equal(nodeOptionsWithoutPreloads('"--import=file:///a/b.mjs"'), '');
  const untouched = '--max-old-space-size=300  --trace-warnings';
  t.equal(nodeOptionsWithoutPreloads(untouched), untouched, 'without a preload: the value as it was');
});

t.test('a program a test spawns under tap with coverage off gets the NODE_OPTIONS meant for it: inherited less its preloads, its own whole', async (t) => {
  const saved = Object.fromEntries(['TAP', 'TAP_DISABLE_COVERAGE', 'NODE_OPTIONS'].map((name) => [name, process.env[name]]));
  t.teardown(() => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });
  const hook = '"--import=file:///work/node_modules/@tapjs/processinfo/dist/esm/import.mjs"';
  Object.assign(process.env, { TAP: '1', TAP_DISABLE_COVERAGE: '1', NODE_OPTIONS: `--max-old-space-size=300 ${hook}` });
  t.same(withoutRunnerHooks({ ...process.env }), ['/usr/bin/env', 'NODE_OPTIONS=--max-old-space-size=300'], 'inherited: the preload taken out');
  t.same(withoutRunnerHooks({ ...process.env, NODE_OPTIONS: '--require ./shim.cjs' }), ['/usr/bin/env', 'NODE_OPTIONS=--require ./shim.cjs'], 'set by the caller: kept as it is');
  t.same(withoutRunnerHooks({ PATH: '/bin' }), ['/usr/bin/env', '-u', 'NODE_OPTIONS'], 'an environment without it: none');
  process.env.NODE_OPTIONS = hook;
  t.same(withoutRunnerHooks({ ...process.env }), ['/usr/bin/env', '-u', 'NODE_OPTIONS'], 'nothing left: none');
  delete process.env.TAP_DISABLE_COVERAGE;
  t.same(withoutRunnerHooks({ ...process.env }), [], 'with coverage on, the hook stays: it collects the program\'s coverage');
  delete process.env.TAP;
  process.env.TAP_DISABLE_COVERAGE = '1';
  t.same(withoutRunnerHooks({ ...process.env }), [], 'outside tap, nothing changes');
});

t.test('a store a test spawns runs without tap\'s hooks when coverage is off, with them when it is on', async (t) => {
  const store = await spawnStore({ PORT: '0', DATA_DIR: tempDataDir() });
  t.teardown(() => store.child.kill('SIGKILL'));
  const environ = fs.readFileSync(`/proc/${store.child.pid}/environ`, 'utf8').split('\0');
  const nodeOptions = environ.find((entry) => entry.startsWith('NODE_OPTIONS=')) ?? '';
  if (process.env.TAP_DISABLE_COVERAGE === '1') t.notMatch(nodeOptions, /@tapjs/, `coverage off: ${nodeOptions || 'no NODE_OPTIONS'}`);
  else t.match(nodeOptions, /@tapjs\/processinfo/, `coverage on: ${nodeOptions}`);
  t.equal(fs.readFileSync(`/proc/${store.child.pid}/cmdline`, 'utf8').split('\0')[1], cliPath, 'the store itself, in its own process');
});
