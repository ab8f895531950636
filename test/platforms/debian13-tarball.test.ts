/**
 * The release tarball on Debian 13 (glibc 2.41) with Node 24, where the native uWebSockets.js
 * engine loads (docs/OPERATIONS.md, "Platforms"): installed into a Debian 13 root
 * (scripts/platform-root.sh) as a box installs it, its postinstall run there, it must keep the
 * uWebSockets.js binary for Node 24 and glibc 2.38 or newer, serve on it, and store and serve an
 * image event. The HTTP-engine files run on that engine too (`npm run test:debian13`, the
 * checkout's build in the same root).
 *
 * Slow (a build, an install): not part of `npm test`; `npm run test:debian13` runs it, and
 * .ci/run runs that.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { residentBytes } from '../../scripts/lib/proc-stats.js';
import { fixture, getJson, imageEvent, postJson } from '../support/events.js';
import { rootWithTarball } from '../support/platform-root.js';

const DATA_DIR = '/var/lib/edge-events-test';
/** The servers of the engine files' root (package.json, `test:debian13`): one root, made once, for both. */
const ENGINE_FILES_PACKAGES = 'chromium,mosquitto,nats-server,python3,python3-requests';

t.test('the release tarball serves Node 24 on the native engine on Debian 13', async (t) => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'ees-debian13-'));
  t.teardown(() => fs.rmSync(work, { recursive: true, force: true }));
  const platform = await rootWithTarball('trixie', 'amd64', 24, work, ENGINE_FILES_PACKAGES);
  t.match(platform.postinstall, /uWebSockets\.js kept for linux-x64, glibc 2\.41: .*uws_linux_x64_137\.node/, `the postinstall keeps Node 24's binary: ${platform.postinstall}`);

  fs.rmSync(path.join(platform.root, DATA_DIR), { recursive: true, force: true });
  const starting = performance.now();
  const store = await platform.serve(DATA_DIR);
  t.teardown(() => store.child.kill('SIGKILL'));
  t.comment(`listening ${((performance.now() - starting) / 1000).toFixed(1)} s after its start`);
  const { runtime } = (await getJson(`${store.url}/stats`)).body as { runtime: { http_engine: string; uws_build: string | null; node_version: string; glibc: string } };
  t.match(runtime, { http_engine: 'uws', uws_build: /^@btc-vision\/uwebsockets\.js@/, node_version: /^v24\./, glibc: '2.41' }, 'uWebSockets.js serves Node 24');

  const created = await postJson(`${store.url}/v2/events`, imageEvent({ deviceId: 'box-13' }));
  t.equal(created.status, 201, 'an image event');
  const image = await fetch(`${store.url}/images/${created.body.image_ids[0]}`);
  t.ok(Buffer.from(await image.arrayBuffer()).equals(fixture('cat.jpg')), 'its image, byte for byte');
  t.comment(`resident memory after: ${(residentBytes(store.child.pid!) / 2 ** 20).toFixed(0)} MiB; installed: ${(await platform.exec('du', '-sm', '/opt/edge-events')).stdout.split('\t')[0]} MiB`);
});
