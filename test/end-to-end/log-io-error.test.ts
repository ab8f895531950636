/**
 * An I/O error in the log (docs/STORAGE.md, "An I/O error in the log"): a write of the segment
 * log that fails with EIO, as a bad flash page fails it, is not acknowledged; the answer is 503
 * `disk_io_error` with Retry-After; the store gives that segment up, part-written frame and all,
 * and the creates after it go to a new segment, where a restart's replay finds every one of them.
 * The error is injected by a preload (scripts/lib/eio-preload.ts) into a real store process.
 */
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { segmentNumberOf } from '../../src/store/log/segment-files.js';
import { getJson, postJson, smallEvent } from '../support/events.js';
import { cliPath, spawnStore, type SpawnedStore } from '../../scripts/lib/spawned-store.js';
import { tempDataDir } from '../support/store-server.js';
import { until } from '../support/waiting.js';

const preload = path.join(path.dirname(cliPath), '..', 'scripts', 'lib', 'eio-preload.js');

async function kill(store: SpawnedStore): Promise<void> {
  const exited = once(store.child, 'exit');
  store.child.kill('SIGKILL');
  await exited;
}

t.test('a log write that fails with EIO answers 503, and the creates after it go to a new segment that a restart replays whole', async (t) => {
  const dataDir = tempDataDir();
  const trigger = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'eio-')), 'fail-next-write');
  // No checkpoint before the kill: every create must come back from the log.
  const env = { PORT: '0', DATA_DIR: dataDir, INDEX_CHECKPOINT_MS: '60000', INDEX_CHECKPOINT_MAX_MS: '300000', CLEANUP_INTERVAL_SECONDS: '3600', EDGE_EVENTS_EIO_TRIGGER: trigger };
  let store = await spawnStore(env, process.execPath, { command: [process.execPath, '--import', preload, cliPath] });
  t.teardown(() => void store.child.kill('SIGKILL'));
  await until('the start-up cleanup is done', async () => (await getJson(`${store.url}/stats`)).body.last_cleanup !== null);

  const acknowledged: string[] = [];
  const create = async () => postJson(`${store.url}/v2/events`, smallEvent({ custom_metadata: { n: acknowledged.length } }));
  for (let i = 0; i < 5; i++) acknowledged.push((await create()).body.id);

  fs.writeFileSync(trigger, '');
  const failed = await fetch(`${store.url}/v2/events`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(smallEvent()) });
  t.equal(failed.status, 503, 'the create whose write failed is not acknowledged');
  t.match((await failed.json()).detail, /I\/O error writing the event log; nothing was stored/, 'the answer says why (disk_io_error)');
  t.equal(failed.headers.get('retry-after'), '1', 'and when to try again');
  t.notOk(fs.existsSync(trigger), 'the preload failed the write');

  const created = await until('a create succeeds again', async () => {
    const res = await create();
    return res.status === 201 ? res.body.id as string : undefined;
  });
  acknowledged.push(created);
  for (let i = 0; i < 5; i++) {
    const res = await create();
    t.equal(res.status, 201);
    acknowledged.push(res.body.id);
  }
  const segments = fs.readdirSync(path.join(dataDir, 'blobs')).map(segmentNumberOf).filter((n) => n !== undefined);
  t.equal(segments.length, 2, 'the creates after the failure went to a new segment');

  await kill(store);
  store = await spawnStore({ ...env, EDGE_EVENTS_EIO_TRIGGER: '' });
  const lost: string[] = [];
  for (const id of acknowledged) if ((await getJson(`${store.url}/v2/events/${id}`)).status !== 200) lost.push(id);
  t.same(lost, [], `each of the ${acknowledged.length} acknowledged creates is there after a kill -9`);
  t.equal((await getJson(`${store.url}/stats`)).body.log_damage.quarantined_ranges, 0, 'the part-written frame is cut, not reported as damage');
});
