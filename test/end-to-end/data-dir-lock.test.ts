/**
 * One store per data folder, between real processes (src/store/engine/data-dir-lock.ts;
 * docs/STORAGE.md, "One store per folder"): the kernel's lock on `store.lock` keeps a second
 * `edge-events serve` off the folder when each runs in a pid namespace of its own (two
 * containers sharing a volume, both pid 1), when many start at once, and lets the next start in
 * at once when the holder is a zombie its parent has not reaped; `edge-events check --repair`
 * refuses a folder a store holds. A refused process leaves the holder's lock and file alone.
 * The lock module alone: test/data-dir-lock.test.ts.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { spawnStore, type SpawnedStore } from '../../scripts/lib/spawned-store.js';
import { runCli } from '../support/cli-process.js';
import { getJson, postJson, smallEvent } from '../support/events.js';
import { startContender, type LockContender } from '../support/lock-contender.js';
import { tempDataDir } from '../support/store-server.js';
import { until } from '../support/waiting.js';

// Eight starts of the real store, two runs of the real check and 100 trials of racing processes:
// 45 s alone on 2 cores, over 100 s with other test files beside it, near tap's default 120 s.
t.setTimeout(300_000);

/** Runs its arguments as pid 1 of a new pid namespace, with its own /proc; killed when unshare is. */
const OWN_PID_NAMESPACE = ['unshare', '--pid', '--fork', '--mount-proc', '--kill-child'];

const lockFile = (dataDir: string) => path.join(dataDir, 'store.lock');
const holderOf = (dataDir: string) => JSON.parse(fs.readFileSync(lockFile(dataDir), 'utf8')) as { pid: number; host: string };

/** Starts `edge-events serve` on `dataDir`, killed at the test's end; resolves with the store, or the refusal its exit printed. */
async function startOrRefusal(t: Test, dataDir: string, prefix: string[] = []): Promise<{ store?: SpawnedStore; refusal?: string }> {
  let child: ChildProcess | undefined;
  t.teardown(() => void child?.kill('SIGKILL'));
  return spawnStore({ PORT: '0', DATA_DIR: dataDir }, process.execPath, { prefix, spawned: (spawned) => (child = spawned) })
    .then((store) => ({ store }), (err: Error) => ({ refusal: err.message }));
}

/** Creates an event; resolves with its id. */
async function created(store: SpawnedStore): Promise<string> {
  const { status, body } = await postJson(`${store.url}/v2/events`, smallEvent());
  if (status !== 201) throw new Error(`create answered ${status}: ${JSON.stringify(body)}`);
  return body.id as string;
}

t.test('two stores in pid namespaces of their own, both pid 1: the second refuses naming the first, and its exit leaves the first\'s lock', async (t) => {
  const dataDir = tempDataDir();
  const first = await startOrRefusal(t, dataDir, OWN_PID_NAMESPACE);
  t.ok(first.store, first.refusal ?? 'the first store serves');
  const id = await created(first.store!);
  const written = fs.readFileSync(lockFile(dataDir), 'utf8');
  t.match(holderOf(dataDir), { pid: 1, host: os.hostname() }, 'the first store is pid 1 of its namespace');

  const second = await startOrRefusal(t, dataDir, OWN_PID_NAMESPACE);
  t.notOk(second.store, 'the second store does not serve');
  t.match(second.refusal, new RegExp(`^store exited with 1: [^]*DATA_DIR ${dataDir} is in use by another store \\(pid 1, host ${os.hostname()}, since [^)]+\\); one store per data directory`), second.refusal ?? '');

  t.equal(fs.readFileSync(lockFile(dataDir), 'utf8'), written, 'the refused store\'s exit left the lock file as the first wrote it');
  const third = await startContender(OWN_PID_NAMESPACE);
  t.teardown(() => third.stop());
  t.match(await third.lock(dataDir), { won: false, name: 'DataDirLocked' }, 'and the kernel\'s lock still held: a third process, in a namespace of its own, is refused');
  t.equal((await getJson(`${first.store!.url}/v2/events/${id}`)).status, 200, 'the first store serves on');
  t.equal((await postJson(`${first.store!.url}/v2/events`, smallEvent())).status, 201);
});

t.test('racing lock attempts: of 4 processes taking one folder\'s lock at once, exactly one wins, in each of 100 trials, with and without a lock file left by a store that is gone', async (t) => {
  const contenders: LockContender[] = await Promise.all(Array.from({ length: 4 }, () => startContender()));
  t.teardown(() => Promise.all(contenders.map((contender) => contender.stop())));
  const bootId = fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  const gate = path.join(tempDataDir(), 'gate');
  execFileSync('mkfifo', [gate]);
  const winners: number[] = [];
  for (let trial = 0; trial < 100; trial++) {
    const dataDir = tempDataDir();
    // Odd trials: the file a killed store left, naming a pid no process has (pid_max is below 2^22).
    if (trial % 2 === 1) fs.writeFileSync(lockFile(dataDir), JSON.stringify({ pid: 4_194_304 + trial, bootId, startTime: '1' }));
    const armed = await Promise.all(contenders.map((contender) => contender.armed(dataDir, gate)));
    const opened = fs.openSync(gate, 'w'); // wakes every contender; kept open until all tried, for one still on its way to the gate
    const outcomes = await Promise.all(armed.map(({ outcome }) => outcome));
    fs.closeSync(opened);
    winners.push(outcomes.filter((outcome) => outcome.won).length);
    const refused = outcomes.filter((outcome) => !outcome.won);
    if (refused.some((outcome) => outcome.name !== 'DataDirLocked')) t.fail(`trial ${trial}: ${JSON.stringify(refused)}`);
    const winner = contenders[outcomes.findIndex((outcome) => outcome.won)];
    if (!winner) continue;
    t.equal(holderOf(dataDir).pid, winner.child.pid, `trial ${trial}: the file names the winner`);
    await winner.release();
  }
  t.same(winners, Array(100).fill(1), 'one winner in every trial');
});

t.test('racing starts: of 3 stores started at once on one folder, one serves and the others refuse naming it', async (t) => {
  const dataDir = tempDataDir();
  const starts = await Promise.all([0, 1, 2].map(() => startOrRefusal(t, dataDir)));
  const serving = starts.filter((start) => start.store);
  t.equal(serving.length, 1, starts.map((start) => start.refusal ?? 'serves').join('\n'));
  const winner = serving[0]?.store?.child.pid;
  for (const { refusal } of starts.filter((start) => !start.store)) {
    // A store refused in the microseconds between the winner's lock and its writing of the file finds no name in it yet.
    t.match(refusal, new RegExp(`is in use by another store \\((pid ${winner}, |which has not named itself in the lock file yet)`), refusal ?? '');
  }
  t.equal((await postJson(`${serving[0]!.store!.url}/v2/events`, smallEvent())).status, 201, 'the one store serves');
});

/** The state letter of process `pid` (/proc/<pid>/stat: R, S, Z, ...); '' when there is none. */
function processState(pid: number): string {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return '';
  }
}

t.test('a store killed while its parent does not reap it (a zombie) holds nothing: the next start serves at once', async (t) => {
  const dataDir = tempDataDir();
  // A parent that never waits: the shell starts the store, then becomes a sleep, which reaps no child.
  const parent = ['sh', '-c', '"$@" & echo "store pid $!"; exec sleep infinity', 'sh'];
  const first = await startOrRefusal(t, dataDir, parent);
  t.ok(first.store, first.refusal ?? 'the first store serves');
  const pid = Number(/store pid (\d+)/.exec(first.store!.output())![1]);
  t.equal(holderOf(dataDir).pid, pid, 'the store holds the folder');
  process.kill(pid, 'SIGKILL');
  await until('the killed store to be a zombie', () => processState(pid) === 'Z');

  const next = await startOrRefusal(t, dataDir);
  t.ok(next.store, next.refusal ?? 'the next store serves');
  t.equal(processState(pid), 'Z', `the killed store (pid ${pid}) is still a zombie, unreaped`);
  t.equal((await postJson(`${next.store!.url}/v2/events`, smallEvent())).status, 201);
  t.equal(holderOf(dataDir).pid, next.store!.child.pid, 'the file names the new holder');
});

t.test('check --repair refuses a folder a store holds, the store in a pid namespace of its own too, and moves nothing', async (t) => {
  const dataDir = tempDataDir();
  const running = await startOrRefusal(t, dataDir, OWN_PID_NAMESPACE);
  t.ok(running.store, running.refusal ?? 'the store serves');
  const id = await created(running.store!);
  for (const flags of [['--repair', '--without-sinks'], []]) {
    const { code, stdout, stderr } = await runCli(['check', '--data-dir', dataDir, ...flags]);
    t.equal(code, 1, `check ${flags.join(' ')}: exits 1`);
    t.equal(stdout, '');
    t.match(stderr, new RegExp(`^error: DATA_DIR ${dataDir} is in use by another store \\(pid 1, [^)]+\\); one store per data directory: stop it first`), stderr);
  }
  t.same(fs.readdirSync(dataDir).filter((name) => name.includes('damaged') || name.includes('before-rebuild')), [], 'nothing moved aside');
  t.equal(holderOf(dataDir).pid, 1, 'the store\'s lock file as it wrote it');
  t.equal((await getJson(`${running.store!.url}/v2/events/${id}`)).status, 200, 'the store serves on');
});
