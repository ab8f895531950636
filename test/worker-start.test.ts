/**
 * The store's worker threads start without the preloads of the process that runs them
 * (src/worker-start.ts): those of its command line and those of NODE_OPTIONS, which a worker given
 * options of its own reads again (a test runner's hooks are there); the other Node options stay.
 * The lifecycle worker under real Node options: http.test.ts.
 */
import t from 'tap';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { joinNodeOptions, splitNodeOptions, startWorker } from '../src/worker-start.js';

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
