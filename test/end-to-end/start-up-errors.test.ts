/**
 * Start-up refusals name their cause and a fix (docs/OPERATIONS.md, "Start-up errors"): a
 * read-only DATA_DIR, one the store's user may not write, a file in its place, a lock file it may
 * not write, a port in use, a port below 1024 for a user who may not bind it, a file or a symbolic
 * link in the place of one of DATA_DIR's own folders (a symlinked staging/ is refused before
 * start-up empties the folder it points to), a folder in the place of a quarantine entry's file.
 * Each runs the real
 * `edge-events serve`.
 */
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { segmentNumberOf } from '../../src/store/log/segment-files.js';
import { refusedStart, spawnStore } from '../../scripts/lib/spawned-store.js';
import { imageEvent, postJson } from '../support/events.js';
import { unprivileged } from '../support/cli-process.js';
import { tempDataDir } from '../support/store-server.js';

/** A folder the store may enter but, when `writable` is false, not write. */
function folderFor(writable: boolean): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'edge-start-'));
  fs.chmodSync(dir, writable ? 0o777 : 0o555);
  return dir;
}

t.test('a read-only DATA_DIR, existing or to be created, is named as read-only', async (t) => {
  const dir = folderFor(true);
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.mkdirSync(path.join(dir, 'data'));
  // A read-only tmpfs over `dir`, in a mount namespace of the store's own (unshare(1)): real
  // EROFS, with nothing mounted on the machine.
  const script = `mount -t tmpfs -o ro tmpfs "$0" && exec "$@"`;
  for (const dataDir of [dir, path.join(dir, 'missing', 'data')]) {
    const { code, stderr } = await refusedStart({ DATA_DIR: dataDir }, process.execPath, ['unshare', '--mount', '--map-root-user', 'sh', '-c', script, dir]);
    t.equal(code, 1, `${dataDir}: exits 1`);
    t.match(stderr, /is on a read-only file system; set DATA_DIR to a folder on a writable disk/, stderr);
    t.notMatch(stderr, /ENOENT/, 'no errno of a mkdir in its place');
  }
});

t.test('a DATA_DIR the user may not write, or a file in its place, is named', async (t) => {
  const locked = folderFor(false);
  t.teardown(() => fs.rmSync(locked, { recursive: true, force: true }));
  const inside = await refusedStart({ DATA_DIR: locked }, process.execPath, unprivileged());
  t.equal(inside.code, 1);
  t.match(inside.stderr, new RegExp(`DATA_DIR ${locked} is not writable by .*uid \\d+.*chown`), inside.stderr);
  const below = await refusedStart({ DATA_DIR: path.join(locked, 'data') }, process.execPath, unprivileged());
  t.equal(below.code, 1);
  t.match(below.stderr, new RegExp(`DATA_DIR ${locked}/data cannot be created: ${locked} is not writable by`), below.stderr);

  const file = path.join(tempDataDir(), 'a-file');
  fs.writeFileSync(file, 'x');
  const notFolder = await refusedStart({ DATA_DIR: file });
  t.equal(notFolder.code, 1);
  t.match(notFolder.stderr, /is a file, not a folder/, notFolder.stderr);
});

t.test('a lock file the store\'s user may not write is named, and left in place', async (t) => {
  // As a root-owned store.lock in the service user's folder (data-dir-lock.ts gives the file to
  // the folder's owner since). Root's kernel credentials stay root's in a user namespace, so
  // here the file's mode, not its owner, denies the write.
  const dir = folderFor(true);
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.writeFileSync(path.join(dir, 'store.lock'), '', { mode: 0o444 });
  const { code, stderr } = await refusedStart({ DATA_DIR: dir }, process.execPath, unprivileged());
  t.equal(code, 1);
  t.match(stderr, new RegExp(`DATA_DIR ${dir}: its lock file store\\.lock is not writable by .*uid \\d+.*; give that user the file \\(chown\\)`), stderr);
  t.ok(fs.existsSync(path.join(dir, 'store.lock')), 'the file is not removed');
});

t.test('a port in use, and a port below 1024, are told apart', async (t) => {
  const other = net.createServer();
  await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
  t.teardown(() => other.close());
  const port = (other.address() as net.AddressInfo).port;
  const inUse = await refusedStart({ DATA_DIR: tempDataDir(), PORT: String(port) });
  t.equal(inUse.code, 1);
  t.match(inUse.stderr, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: the port is in use by another process`), inUse.stderr);

  // Ports below net.ipv4.ip_unprivileged_port_start (1024 by default) need a capability.
  const firstFree = Number(fs.readFileSync('/proc/sys/net/ipv4/ip_unprivileged_port_start', 'utf8'));
  t.ok(firstFree > 80, `port 80 is privileged here (ip_unprivileged_port_start ${firstFree})`);
  const privileged = folderFor(true);
  t.teardown(() => fs.rmSync(privileged, { recursive: true, force: true }));
  const low = await refusedStart({ DATA_DIR: path.join(privileged, 'data'), PORT: '80' }, process.execPath, unprivileged());
  t.equal(low.code, 1);
  t.match(low.stderr, /cannot listen on 127\.0\.0\.1:80: ports below 1024 need root or the CAP_NET_BIND_SERVICE capability; set PORT to 1024 or above/, low.stderr);
  t.notMatch(low.stderr, /in use/, 'not mistaken for a port in use');
});

t.test('a symbolic link or a file in the place of staging/, blobs/ or quarantine/ is refused, and nothing outside DATA_DIR is emptied', async (t) => {
  for (const place of ['staging', 'blobs', 'quarantine']) {
    const dataDir = tempDataDir();
    const outside = tempDataDir();
    fs.writeFileSync(path.join(outside, 'keep.txt'), 'not the store\'s');
    fs.mkdirSync(dataDir, { recursive: true });
    fs.symlinkSync(outside, path.join(dataDir, place));
    const linked = await refusedStart({ DATA_DIR: dataDir });
    t.equal(linked.code, 1, `${place} linked: exits 1`);
    t.match(linked.stderr, `DATA_DIR ${dataDir}: ${place} is a symbolic link (to ${outside}), and the store `, linked.stderr);
    t.match(linked.stderr, `replace the link with a folder (rm ${dataDir}/${place} && mkdir ${dataDir}/${place}), or set DATA_DIR to a folder on the disk it points to`);
    t.same(fs.readdirSync(outside), ['keep.txt'], `${place} linked: the folder it points to keeps its file`);
  }
  const dataDir = tempDataDir();
  fs.mkdirSync(dataDir, { recursive: true });
  fs.writeFileSync(path.join(dataDir, 'quarantine'), 'x');
  const file = await refusedStart({ DATA_DIR: dataDir });
  t.equal(file.code, 1, 'a file named quarantine: exits 1');
  t.match(file.stderr, `DATA_DIR ${dataDir}: quarantine is a file, not a folder, and the store keeps the damaged bytes of the log in quarantine/`, file.stderr);
  t.match(file.stderr, `move the file away (mv ${dataDir}/quarantine ${dataDir}/quarantine.moved) and start again`);
  t.notMatch(file.stderr, /EEXIST/, 'no errno of a mkdir');
});

t.test('a folder in the place of the file of a quarantine entry is named, with its fix', async (t) => {
  const dataDir = tempDataDir();
  const store = await spawnStore({ PORT: '0', DATA_DIR: dataDir, CLEANUP_INTERVAL_SECONDS: '3600' });
  t.teardown(() => void store.child.kill('SIGKILL'));
  t.equal((await postJson(`${store.url}/v2/events`, imageEvent())).status, 201);
  const exited = once(store.child, 'exit');
  store.child.kill('SIGTERM'); // a clean stop: the index counts on the segment's bytes
  await exited;
  // The segment gone: the next start quarantines its missing bytes as seg-NNNNNNNN-0.bin (docs/STORAGE.md, "Damage in the log").
  const [segment] = fs.readdirSync(path.join(dataDir, 'blobs')).filter((name) => segmentNumberOf(name) !== undefined);
  fs.rmSync(path.join(dataDir, 'blobs', segment));
  const entry = path.join(dataDir, 'quarantine', segment.replace(/\.blob$/, '-0.bin'));
  fs.mkdirSync(entry, { recursive: true });
  const refused = await refusedStart({ DATA_DIR: dataDir });
  t.equal(refused.code, 1);
  t.match(refused.stderr, `${entry} is a folder where the store writes a quarantine entry (the damaged bytes of the log it went past`, refused.stderr);
  t.match(refused.stderr, `move the folder out of quarantine/ (mv ${entry} ${dataDir}/) and start again`);
  t.notMatch(refused.stderr, /EISDIR/, 'no raw errno');
});
