/**
 * The store under a bounded address space (docs/STORAGE.md, "The index's map"): a box's
 * `ulimit -v` or systemd's `LimitAS=`, like qemu-user's placeholder mappings, refuses a large
 * memory map, and lmdb-js then dies with a segfault before the first log line. Under an 8 GiB
 * limit (util-linux `prlimit --as`), a real `edge-events serve` starts, acknowledges creates until
 * its index has outgrown its first map, and has every one of them after a
 * kill -9 and a start under the same limit. With a 32 GiB map from the start it died at open.
 */
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { spawnStore } from '../../scripts/lib/spawned-store.js';
import { INITIAL_MAP_BYTES } from '../../src/store/index/lmdb-env.js';
import { fixture, getJson, postJson, smallEvent } from '../support/events.js';
import { tempDataDir } from '../support/store-server.js';

const LIMIT = ['prlimit', `--as=${8 * 1024 ** 3}`];

t.test('under an 8 GiB address-space limit the store starts, its index outgrows the first map, and a kill -9 loses nothing', async (t) => {
  // Checkpoints at once, so the index file grows with the creates rather than minutes later.
  const env = { PORT: '0', DATA_DIR: tempDataDir(), INDEX_CHECKPOINT_MS: '20', INDEX_CHECKPOINT_MAX_MS: '20' };
  const store = await spawnStore(env, process.execPath, { prefix: LIMIT });
  t.teardown(() => store.child.kill('SIGKILL'));
  // About 200 KB of stored record each: one image with 2,000 detections. Drafts, each finalized
  // once checkpointed: LMDB holds an event updated since its block was written (docs/STORAGE.md,
  // "Blocks in the running store"), so its records make data.mdb grow.
  const detections = Array.from({ length: 2000 }, (_, i) => ({ class: `part-${i}`, x: i, y: i, width: 10, height: 10, confidence: 0.5 }));
  const heavy = smallEvent({ draft: true, images: [{ label: 'front', base64_image: fixture('cat.jpg').toString('base64'), object_detections: detections }] });
  const indexFile = path.join(env.DATA_DIR, 'db', 'data.mdb');
  let acknowledged = 0;
  while (fs.statSync(indexFile).size <= INITIAL_MAP_BYTES) {
    const created = await Promise.all(Array.from({ length: 8 }, () => postJson(`${store.url}/v2/events`, heavy)));
    // Checkpointed into a block first, so the finalize moves each to LMDB.
    if ((await postJson(`${store.url}/admin/cleanup`, '')).status !== 200) t.fail('the cleanup that checkpoints the head');
    const statuses = await Promise.all(created.map(async (c) => (c.status === 201 ? ((await postJson(`${store.url}/v2/events/${c.body.id}/finalize`, {})).status === 200 ? 201 : 500) : c.status)));
    acknowledged += statuses.filter((s) => s === 201).length;
    if (statuses.some((s) => s !== 201)) {
      t.fail(`a create answered ${statuses.find((s) => s !== 201)}`);
      break;
    }
  }
  t.ok(acknowledged > 0, `${acknowledged} creates, data.mdb ${fs.statSync(indexFile).size} bytes`);

  store.child.kill('SIGKILL');
  await once(store.child, 'exit');
  const restarted = await spawnStore(env, process.execPath, { prefix: LIMIT });
  t.teardown(() => restarted.child.kill('SIGKILL'));
  t.equal((await getJson(`${restarted.url}/stats`)).body.current.total_events, acknowledged, 'every acknowledged create is there after a kill -9');
});
