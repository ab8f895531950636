/**
 * The data directory's lock (src/store/engine/data-dir-lock.ts; docs/STORAGE.md, "One store per
 * folder"): the kernel's lock on `store.lock` decides, never what the file says; a refusal names
 * the holder and leaves its file and lock alone; the kernel releases the lock when its holder's
 * descriptor closes, kill -9 included; the file is never removed; the check command's hold lets
 * its own steps through and nobody else. Stores in other pid namespaces, racing starts, a zombie
 * holder and `check --repair` against a running store are in end-to-end/data-dir-lock.test.ts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { DataDirLocked, holdDataDir, lockDataDir } from '../src/store/engine/data-dir-lock.js';
import { startContender } from './support/lock-contender.js';
import { tempDataDir } from './support/store-server.js';

const lockFile = (dataDir: string) => path.join(dataDir, 'store.lock');

/** This process's start time in clock ticks since boot, as /proc/self/stat gives it. */
function ownStartTime(): string {
  const stat = fs.readFileSync('/proc/self/stat', 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
}

// Found by a review of crash loops after a power cut, commit 2adfd78; then by a field probe (docs/RELIABILITY.md, "Defects found by the harness"):
// in another pid namespace, and for a zombie, a pid that names a live process is no proof of a store.
t.test('a lock file naming a live process that holds no lock stops nothing: only the kernel\'s lock decides', async (t) => {
  // A store killed after writing its lock file, whose pid is now a live process (after a reboot,
  // in a container where every store is pid 1, or a zombie): here, this very process, named
  // exactly as it would name itself (pid, boot id, start time).
  const dataDir = tempDataDir();
  const bootId = fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  fs.writeFileSync(lockFile(dataDir), JSON.stringify({ pid: process.pid, bootId, startTime: ownStartTime() }));
  const release = lockDataDir(dataDir);
  t.match(JSON.parse(fs.readFileSync(lockFile(dataDir), 'utf8')), { pid: process.pid, host: os.hostname(), since: /^\d{4}-/ }, 'the holder names itself in the file');
  release();
});

t.test('a lock another process holds is refused, naming it; the refusal leaves its file and lock; kill -9 releases it', async (t) => {
  const dataDir = tempDataDir();
  const holder = await startContender();
  t.teardown(() => holder.stop());
  t.same(await holder.lock(dataDir), { won: true });
  const written = fs.readFileSync(lockFile(dataDir), 'utf8');

  const refusal = t.throws(() => lockDataDir(dataDir), DataDirLocked) as DataDirLocked;
  t.match(refusal.message, new RegExp(`^DATA_DIR ${dataDir} is in use by another store \\(pid ${holder.child.pid}, host ${os.hostname()}, since \\d{4}-[^)]+\\); one store per data directory$`));
  t.match(refusal.holder, { pid: holder.child.pid });
  t.equal(fs.readFileSync(lockFile(dataDir), 'utf8'), written, 'the refused process left the file as the holder wrote it');
  const other = await startContender();
  t.teardown(() => other.stop());
  t.match(await other.lock(dataDir), { won: false, name: 'DataDirLocked' }, 'the lock is still held: another process is refused too');

  holder.child.kill('SIGKILL');
  await holder.stop();
  t.same(await other.lock(dataDir), { won: true }, 'the kernel released it at the holder\'s death: the next process takes it at once');
  t.match(JSON.parse(fs.readFileSync(lockFile(dataDir), 'utf8')), { pid: other.child.pid }, 'and names itself');
});

t.test('a second open in the same process is refused too; a release closes the lock and keeps the file', async (t) => {
  const dataDir = tempDataDir();
  const release = lockDataDir(dataDir);
  t.throws(() => lockDataDir(dataDir), { name: 'DataDirLocked', message: new RegExp(`in use by another store \\(pid ${process.pid},`) });
  release();
  release();
  t.ok(fs.existsSync(lockFile(dataDir)), 'the file stays: a file made anew while another process held the old one would be a second lock');
  const contender = await startContender();
  t.teardown(() => contender.stop());
  t.same(await contender.lock(dataDir), { won: true }, 'released: another process takes it');
});

t.test('the check command\'s hold lets its own steps take the lock, and no one else', async (t) => {
  const dataDir = tempDataDir();
  const contender = await startContender();
  t.teardown(() => contender.stop());
  const outcome = await holdDataDir(dataDir, lockDataDir, async () => {
    const step = lockDataDir(dataDir); // the check
    step();
    await holdDataDir(dataDir, lockDataDir, async () => lockDataDir(dataDir)()); // the repair, a hold of its own, and its open of the store
    lockDataDir(dataDir)(); // the recheck, after the inner hold ended
    return contender.lock(dataDir);
  });
  t.match(outcome, { won: false, name: 'DataDirLocked' }, 'held throughout: another process was refused after the steps and an inner hold released their turns');
  t.same(await contender.lock(dataDir), { won: true }, 'released at the end of the work');
  await contender.release();
  await t.rejects(holdDataDir(dataDir, lockDataDir, async () => {
    throw new Error('the check failed');
  }), /the check failed/);
  t.same(await contender.lock(dataDir), { won: true }, 'released when the work fails too');
});

t.test('taken by root in a folder another user owns, the lock file is that user\'s, for the store that runs as that user', async (t) => {
  t.equal(process.getuid?.(), 0, 'runs as root, as CI does');
  const dataDir = tempDataDir();
  fs.chownSync(dataDir, 65534, 65534);
  const release = lockDataDir(dataDir); // `sudo edge-events check` on the service user's folder
  release();
  const stat = fs.statSync(lockFile(dataDir));
  t.same([stat.uid, stat.gid], [65534, 65534]);
});
