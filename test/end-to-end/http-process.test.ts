/**
 * The HTTP layer where only the real `edge-events serve` process shows it: the engine in use
 * logged once at start-up, start-up refused for a bad setting and for a data directory or a port
 * in use, SIGTERM finishing the writes under way, the lifecycle worker under the Node options the
 * store runs with. In one process: http.test.ts.
 */
import t from 'tap';
import { packageVersion } from '../../src/paths.js';
import { currentHost } from '../../src/http/uws/uws-loader.js';
import { getJson, postJson, smallEvent } from '../support/events.js';
import { expectedEngine } from '../support/engines.js';
import { cliPath, refusedStart, spawnStore } from '../../scripts/lib/spawned-store.js';
import { startStore, tempDataDir } from '../support/store-server.js';

t.test('the engine in use is logged once at start-up and reported by /stats', async (t) => {
  // UWS_USE_FALLBACK asked the trufflesuite package for its JavaScript server; the loader loads
  // its binary itself, so the setting can no longer put the store on that fallback.
  const store = await spawnStore({ PORT: '0', DATA_DIR: tempDataDir(), UWS_USE_FALLBACK: '1' });
  t.teardown(() => store.child.kill('SIGTERM'));
  const { runtime } = (await getJson(`${store.url}/stats`)).body;
  const expected = expectedEngine();
  t.same(
    { ...runtime, glibc: undefined },
    { version: packageVersion, node_version: process.version, node_abi: process.versions.modules, http_engine: expected.engine, uws_build: expected.uwsBuild, glibc: undefined },
    `${expected.engine} engine, ${expected.uwsBuild ?? 'no native build'}`,
  );
  t.equal(runtime.glibc, currentHost().glibc, 'the glibc found is reported');
  const engineLines = store.output().split('\n').filter((line) => line.includes('"msg":"HTTP engine: '));
  t.equal(engineLines.length, 1, 'one start-up line names the engine');
  t.match(engineLines[0], expected.engine === 'uws' ? `uWebSockets.js ${expected.uwsBuild} (native)` : 'node:http');
});

t.test('a bad setting stops start-up with a message naming it', async (t) => {
  for (const [name, value] of [['RETENTION_DAYS', 'soon'], ['PORT', '70000'], ['MAX_RECORDS', '-1'], ['CLOUD_UPLOAD_URL', 'ftp://x']]) {
    const { code, stderr } = await refusedStart({ [name]: value, DATA_DIR: tempDataDir() });
    t.equal(code, 1, name);
    t.match(stderr, new RegExp(`Invalid setting ${name}=`), `${name} named`);
  }
});

t.test('SIGTERM finishes in-flight writes: every acknowledged event survives', async (t) => {
  const dataDir = tempDataDir();
  const first = await spawnStore({ PORT: '0', DATA_DIR: dataDir });
  const post = (i: number) => postJson(`${first.url}/v2/events`, smallEvent({ custom_metadata: { i } })).catch(() => undefined);
  const firstWave = Array.from({ length: 20 }, (_, i) => post(i));
  await Promise.any(firstWave.map((write) => write.then((r) => (r?.status === 201 ? r : Promise.reject(new Error('not acknowledged'))))));
  // Once a create is acknowledged, a second wave goes out with the signal: SIGTERM lands while
  // writes are being sent and committed.
  const writes = [...firstWave, ...Array.from({ length: 180 }, (_, i) => post(20 + i))];
  first.child.kill('SIGTERM');
  const [code] = await new Promise<[number | null]>((resolve) => first.child.on('exit', (c) => resolve([c])));
  t.equal(code, 0, 'graceful stop exits 0');
  const acknowledged = (await Promise.all(writes)).filter((r) => r?.status === 201).map((r) => r!.body.id as string);
  const second = await startStore({ DATA_DIR: dataDir });
  t.teardown(second.stop);
  t.ok(acknowledged.length > 0, `${acknowledged.length} of 200 creates acknowledged`);
  const lost: string[] = [];
  for (const id of acknowledged) if ((await getJson(`${second.url}/v2/events/${id}`)).status !== 200) lost.push(id);
  t.same(lost, [], `every one of the ${acknowledged.length} acknowledged events is present`);
});

t.test('one store per data directory and per port', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const sameDir = await refusedStart({ DATA_DIR: store.dataDir });
  t.equal(sameDir.code, 1);
  t.match(sameDir.stderr, new RegExp(`DATA_DIR ${store.dataDir} is in use by another store \\(pid ${process.pid}, `));
  const samePort = await refusedStart({ DATA_DIR: tempDataDir(), PORT: new URL(store.url).port });
  t.equal(samePort.code, 1);
  t.match(samePort.stderr, /cannot listen/);
  t.equal((await getJson(`${store.url}/health`)).status, 200, 'the first store still serves');
});

t.test('the lifecycle worker starts whatever Node options the store runs with: a heap limit, a preload, both', async (t) => {
  // The worker is started without the process's preloads; a worker refuses a process-wide option
  // such as the heap limit when given explicitly, and then inherits them all.
  const preload = '--import=data:text/javascript,globalThis.preloaded=1';
  for (const options of [['--max-old-space-size=512'], [preload], ['--max-old-space-size=512', preload]]) {
    const store = await spawnStore({ PORT: '0', DATA_DIR: tempDataDir() }, process.execPath, { command: [process.execPath, ...options, cliPath] });
    t.teardown(() => store.child.kill('SIGKILL'));
    t.equal((await postJson(`${store.url}/v2/events`, smallEvent())).status, 201, `node ${options.join(' ')}: serving`);
    t.equal((await postJson(`${store.url}/admin/cleanup`, undefined)).status, 200, `node ${options.join(' ')}: its lifecycle worker runs a cleanup`);
    store.child.kill('SIGKILL');
  }
});
