/**
 * The data directory's lock (src/store/engine/data-dir-lock.ts; docs/OPERATIONS.md, "Start-up errors"):
 * a lock left by a store that is gone is taken over, even when its pid now names another process.
 * One store per data directory is tested in http.test.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { spawnStore } from '../scripts/lib/spawned-store.js';
import { getJson } from './support/events.js';
import { tempDataDir } from './support/store-server.js';

// Found by a review of crash loops after a power cut, commit 2adfd78.
t.test('after a power cut, a lock file naming a pid now used by another process does not stop the store (found by crash-loop review)', async (t) => {
  // DATA_DIR/store.lock holds the pid of the store that took it. After a power cut the machine
  // reboots and that pid is handed to some other process (pids restart at boot; the store may
  // even get its own old pid back). lockDataDir takes a live pid for a live store and refuses to
  // start, so systemd restarts it in vain and the device stores nothing until someone deletes
  // the lock by hand.
  const dataDir = tempDataDir();
  fs.writeFileSync(path.join(dataDir, 'store.lock'), String(process.pid)); // a live process that is no store
  // A refusal rejects with the store's own start-up line, which fails this test naming the cause.
  const store = await spawnStore({ PORT: '0', DATA_DIR: dataDir });
  t.teardown(() => void store.child.kill('SIGKILL'));
  t.equal((await getJson(`${store.url}/health`)).status, 200, 'it starts and serves');
});
