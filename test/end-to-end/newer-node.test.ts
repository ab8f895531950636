/**
 * The built store under Node 22, 24 and 26 (official builds from the npm registry, cached outside the
 * repository, see support/node-release.ts): it serves on this machine on the engine the builds'
 * declared needs predict. Where no native uWebSockets.js fits (Node 24 on glibc < 2.38, as on
 * Debian 12), that is the node:http engine, announced once in the log, and HTTP_ENGINE=uws
 * refuses to start with the reasons, as native-bench/range-quick.js asked for it does. The glibc
 * a build declares is checked by loading its binary.
 */
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { packageRoot, packageVersion } from '../../src/paths.js';
import { chooseUwsBuilds, compareVersions, UWS_BUILDS } from '../../src/http/uws/uws-builds.js';
import { currentHost, installedBuilds } from '../../src/http/uws/uws-loader.js';
import { fixture, getJson, imageEvent, postJson } from '../support/events.js';
import { nodeRelease } from '../support/node-release.js';
import { refusedStart, spawnStore } from '../../scripts/lib/spawned-store.js';
import { tempDataDir } from '../support/store-server.js';

const run = promisify(execFile);
t.setTimeout(600_000); // the first run installs three Node releases

for (const major of [22, 24, 26]) {
  t.test(`Node ${major}: the built store serves on this machine and names its engine`, async (t) => {
    const node = await nodeRelease(major);
    const [version, abi] = (await run(node, ['-p', 'process.version + " " + process.versions.modules'])).stdout.trim().split(' ');
    t.match(version, new RegExp(`^v${major}\\.`), `${node} is Node ${version}, ABI ${abi}`);
    const host = { ...currentHost(), abi: Number(abi) };
    const { versions, dirs } = installedBuilds();
    const choice = chooseUwsBuilds(host, versions);
    const expected = choice.candidates[0] ? { engine: 'uws', uwsBuild: `${choice.candidates[0].build.packageName}@${versions[choice.candidates[0].build.id]}` } : { engine: 'node', uwsBuild: null };

    const store = await spawnStore({ PORT: '0', DATA_DIR: tempDataDir(), HTTP_ENGINE: '', LOG_LEVEL: 'info' }, node);
    const { runtime } = (await getJson(`${store.url}/stats`)).body;
    t.same(runtime, { version: packageVersion, node_version: version, node_abi: abi, http_engine: expected.engine, uws_build: expected.uwsBuild, glibc: host.glibc }, `serves on ${expected.engine}`);
    t.equal((await getJson(`${store.url}/health`)).status, 200);
    const created = await postJson(`${store.url}/v2/events`, imageEvent());
    t.equal(created.status, 201, 'takes an event with an image');
    const range = await fetch(`${store.url}/images/${created.body.image_ids[0]}`, { headers: { Range: 'bytes=100-1099' } });
    t.equal(range.status, 206);
    t.same(Buffer.from(await range.arrayBuffer()), fixture('cat.jpg').subarray(100, 1100), 'and serves it back with Range');

    const lines = store.output().split('\n').filter((line) => line.includes('"msg":"HTTP engine: '));
    t.equal(lines.length, 1, 'one start-up line names the engine');
    if (expected.engine === 'node') {
      const line = JSON.parse(lines[0]);
      t.equal(line.level, 40, 'logged as a warning');
      t.match(line.msg, `HTTP engine: node:http FALLBACK. No native uWebSockets.js loads on Node ${version} (ABI ${abi}), ${host.platform}-${host.arch}`);
      if (host.glibc) t.match(line.msg, `glibc ${host.glibc}`, 'names the glibc found');
      t.match(line.msg, 'uWebSockets.js would need:', 'says what the native engine needs');
      t.match(line.msg, 'native-bench/RESULTS.md', 'and where its cost is measured');
    } else {
      t.match(lines[0], `HTTP engine: uWebSockets.js ${expected.uwsBuild} (native)`);
    }
    store.child.kill('SIGTERM');
    const [code] = (await once(store.child, 'exit')) as [number | null];
    t.equal(code, 0, 'stops gracefully');

    if (expected.engine === 'node') {
      const forced = await refusedStart({ HTTP_ENGINE: 'uws', DATA_DIR: tempDataDir() }, node);
      t.equal(forced.code, 1, 'HTTP_ENGINE=uws refuses to start');
      t.match(forced.stderr, 'HTTP_ENGINE=uws but no native uWebSockets.js build loads here');
      // native-bench/range-quick.js asked for the native engine says why it cannot, as bench.js and sweep.js do.
      const quick = await run(node, [path.join(packageRoot, 'native-bench', 'range-quick.js'), '1', 'uws']).then(() => ({ code: 0, stderr: '' }), (err: { code: number; stderr: string }) => err);
      t.equal(quick.code, 1, 'range-quick.js uws stops');
      t.match(quick.stderr, 'No native uWebSockets.js build loads on', 'saying why');
      t.match(quick.stderr, 'uws cannot run here; --engines=node benches the node:http engine');
      t.notMatch(quick.stderr, /\n\s+at /, 'with no stack trace');
    }

    // The glibc the redistribution declares, checked by loading its binary for this Node here.
    const btc = UWS_BUILDS['btc-vision'];
    if (host.platform === 'linux' && host.glibc && btc.abis!.includes(host.abi) && dirs['btc-vision']) {
      const binary = path.join(dirs['btc-vision'], `uws_linux_${host.arch}_${host.abi}.node`);
      const loaded = await run(node, ['-e', `require(${JSON.stringify(binary)})`]).then(() => 'loaded', (err: { stderr: string }) => err.stderr);
      if (compareVersions(host.glibc, btc.minGlibc![host.arch]) < 0) t.match(loaded, `GLIBC_${btc.minGlibc![host.arch]}' not found`, `its binary needs glibc ${btc.minGlibc![host.arch]}`);
      else t.equal(loaded, 'loaded', 'its binary loads');
    }
  });
}
