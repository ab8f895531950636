/**
 * Start-up refusals name their cause and a fix (docs/OPERATIONS.md, "Start-up errors"): a
 * read-only DATA_DIR, one the store's user may not write, a file in its place, a lock file it may
 * not write, a port in use, a port below 1024 for a user who may not bind it. Each runs the real
 * `edge-events serve`.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { refusedStart } from '../../scripts/lib/spawned-store.js';
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
