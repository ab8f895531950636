/**
 * Group commit (src/store/engine/group-commit.ts; docs/STORAGE.md, "Creates"): jobs of one event turn
 * share a batch, jobs submitted while a batch commits form the next one, batches commit in
 * submission order, and `release` is the only thing that lets the next batch start before the
 * previous one settles. Pause, resume, `whenIdle` and the failure of one batch, then two
 * committers chained, the first releasing before it waits on the second.
 *
 * No clock and no sleeps: every batch is held by a test-controlled commit until the test lets
 * it go, and "has not started" is checked after letting pending setImmediate callbacks run
 * (the committer schedules batches with setImmediate and nothing else).
 */
import t from 'tap';
import { GroupCommitter } from '../src/store/engine/group-commit.js';

/** One call of the commit function, held until the test settles it. */
interface HeldBatch<Job, Result> {
  jobs: Job[];
  release: () => void;
  finish: (results: Result[]) => void;
  fail: (err: Error) => void;
}

/**
 * A commit function that records each batch and holds it until the test settles it; `started`
 * resolves at the next batch.
 */
function heldCommits<Job, Result>() {
  const batches: HeldBatch<Job, Result>[] = [];
  let onStart: ((batch: HeldBatch<Job, Result>) => void) | undefined;
  const commit = (jobs: Job[], release: () => void): Promise<Result[]> => new Promise<Result[]>((resolve, reject) => {
    const batch = { jobs, release, finish: resolve, fail: reject };
    batches.push(batch);
    onStart?.(batch);
    onStart = undefined;
  });
  return {
    batches,
    commit,
    /** The next batch to start (or the one started since the last call, if any is pending). */
    started: (): Promise<HeldBatch<Job, Result>> => new Promise((resolve) => (onStart = resolve)),
  };
}

/** Lets every callback already queued with setImmediate run, a few rounds deep. */
async function turns(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** Tracks whether a promise has settled, and how. */
function watch<T>(promise: Promise<T>): { settled: () => boolean; value: () => T | undefined; error: () => unknown } {
  let state: { value?: T; error?: unknown; done: boolean } = { done: false };
  promise.then((value) => (state = { value, done: true }), (error: unknown) => (state = { error, done: true }));
  return { settled: () => state.done, value: () => state.value, error: () => state.error };
}

t.test('jobs submitted in one event turn share one batch; each gets its own result, in order', async (t) => {
  const held = heldCommits<number, string>();
  const committer = new GroupCommitter(held.commit);
  const started = held.started();
  const results = [1, 2, 3, 4, 5].map((job) => committer.submit(job));
  const batch = await started;
  t.same(batch.jobs, [1, 2, 3, 4, 5], 'one batch of the five jobs');
  batch.finish(batch.jobs.map((job) => `done ${job}`));
  t.same(await Promise.all(results), ['done 1', 'done 2', 'done 3', 'done 4', 'done 5']);
  t.equal(held.batches.length, 1);
});

t.test('jobs submitted while a batch commits wait and form the next batch, committed after it', async (t) => {
  const held = heldCommits<string, string>();
  const committer = new GroupCommitter(held.commit);
  let started = held.started();
  const first = ['a', 'b'].map((job) => committer.submit(job));
  const one = await started;
  // Submitted in three later event turns while the first batch is held, never released.
  const second: Promise<string>[] = [];
  for (const job of ['c', 'd', 'e']) {
    second.push(committer.submit(job));
    await turns(1);
  }
  await turns();
  t.equal(held.batches.length, 1, 'no second batch while the first neither released nor settled');
  started = held.started();
  one.finish(['A', 'B']);
  t.same(await Promise.all(first), ['A', 'B']);
  const two = await started;
  t.same(two.jobs, ['c', 'd', 'e'], 'the jobs that waited go together, in submission order');
  two.finish(['C', 'D', 'E']);
  t.same(await Promise.all(second), ['C', 'D', 'E']);
  t.same(held.batches.map((b) => b.jobs), [['a', 'b'], ['c', 'd', 'e']]);
});

t.test('maxBatch splits a burst into batches of at most that many, in submission order', async (t) => {
  const order: number[][] = [];
  const committer = new GroupCommitter<number, number>(async (jobs) => {
    order.push(jobs);
    return jobs.map((job) => job * 10);
  }, 3);
  const results = await Promise.all([1, 2, 3, 4, 5, 6, 7].map((job) => committer.submit(job)));
  t.same(order, [[1, 2, 3], [4, 5, 6], [7]]);
  t.same(results, [10, 20, 30, 40, 50, 60, 70]);
});

t.test('release lets the next batch start while the first is still finishing; jobs resolve with their own batch', async (t) => {
  const held = heldCommits<string, string>();
  const committer = new GroupCommitter(held.commit);
  let started = held.started();
  const a = watch(committer.submit('a'));
  const one = await started;
  const b = watch(committer.submit('b'));
  await turns();
  t.equal(held.batches.length, 1, 'the next batch waits for release');
  started = held.started();
  one.release();
  const two = await started;
  t.same(two.jobs, ['b'], 'released: the next batch starts before the first settles');
  two.finish(['B']);
  await turns();
  t.same([b.settled(), b.value(), a.settled()], [true, 'B', false], 'b resolves with its batch, a still waits for its own');
  one.finish(['A']);
  await turns();
  t.same([a.settled(), a.value()], [true, 'A']);
});

t.test('release is counted once: a batch calling it twice never lets two later batches run together', async (t) => {
  const held = heldCommits<string, string>();
  const committer = new GroupCommitter(held.commit);
  let started = held.started();
  void committer.submit('a');
  const one = await started;
  started = held.started();
  void committer.submit('b');
  one.release();
  one.release();
  const two = await started;
  void committer.submit('c');
  await turns();
  t.same(held.batches.map((b) => b.jobs), [['a'], ['b']], 'c waits: batch b has not released');
  started = held.started();
  two.release();
  t.same((await started).jobs, ['c']);
  for (const batch of held.batches) batch.finish(batch.jobs);
});

t.test('a batch that never calls release only means no overlap: the next starts once it settles', async (t) => {
  const log: string[] = [];
  const committer = new GroupCommitter<number, number>(async (jobs) => {
    log.push(`start ${jobs.join(',')}`);
    await turns(2);
    log.push(`end ${jobs.join(',')}`);
    return jobs;
  });
  const first = committer.submit(1);
  await turns(1);
  const second = committer.submit(2);
  await Promise.all([first, second]);
  t.same(log, ['start 1', 'end 1', 'start 2', 'end 2']);
});

t.test('pause waits for every batch in flight, released or not; jobs submitted meanwhile run after resume', async (t) => {
  const held = heldCommits<string, string>();
  const committer = new GroupCommitter(held.commit);
  let started = held.started();
  void committer.submit('a');
  const one = await started;
  one.release(); // finishing, no longer blocking: pause must still wait for it
  const paused = watch(committer.pause());
  const b = watch(committer.submit('b'));
  await turns();
  t.notOk(paused.settled(), 'pause waits for the released batch to settle');
  one.finish(['A']);
  await turns();
  t.ok(paused.settled(), 'and resolves once it has');
  t.same(held.batches.length, 1, 'b waits while paused');
  started = held.started();
  committer.resume();
  const two = await started;
  t.same(two.jobs, ['b']);
  two.finish(['B']);
  await turns();
  t.equal(b.value(), 'B');
});

t.test('pause in the same turn as a release-scheduled batch still holds that batch back', async (t) => {
  const held = heldCommits<string, string>();
  const committer = new GroupCommitter(held.commit);
  const started = held.started();
  void committer.submit('a');
  const one = await started;
  void committer.submit('b');
  one.release(); // schedules b's batch for the next turn...
  const paused = committer.pause(); // ...which must not start now
  one.finish(['A']);
  await paused;
  await turns();
  t.same(held.batches.map((b) => b.jobs), [['a']], 'b has not started');
  const next = held.started();
  committer.resume();
  t.same((await next).jobs, ['b']);
  (held.batches[1]).finish(['B']);
});

t.test('pause resolves at once when nothing is under way', async (t) => {
  const committer = new GroupCommitter<number, number>(async (jobs) => jobs);
  const paused = watch(committer.pause());
  await turns(1);
  t.ok(paused.settled());
  const job = watch(committer.submit(1));
  await turns();
  t.notOk(job.settled(), 'a job submitted while paused waits');
  committer.resume();
  t.equal(await committer.submit(2), 2);
  t.equal(job.value(), 1);
});

t.test('whenIdle waits for queued jobs and every batch in flight, including ones that fail', async (t) => {
  const idleAtOnce = watch(new GroupCommitter<number, number>(async (jobs) => jobs).whenIdle());
  await turns(1);
  t.ok(idleAtOnce.settled(), 'resolves at once with nothing submitted');

  const held = heldCommits<string, string>();
  const committer = new GroupCommitter(held.commit);
  let started = held.started();
  const a = committer.submit('a').catch((err: Error) => err.message);
  const idle = watch(committer.whenIdle());
  const one = await started;
  const b = committer.submit('b');
  started = held.started();
  one.fail(new Error('injected'));
  const two = await started;
  await turns();
  t.notOk(idle.settled(), 'not idle while b is queued or committing');
  two.finish(['B']);
  await turns();
  t.ok(idle.settled(), 'idle once the last batch settled');
  t.same([await a, await b], ['injected', 'B']);
});

t.test('a failed batch rejects each of its jobs with its error; the next batch still commits', async (t) => {
  const held = heldCommits<string, string>();
  const committer = new GroupCommitter(held.commit);
  let started = held.started();
  const failing = ['a', 'b'].map((job) => committer.submit(job).then(() => 'resolved', (err: Error) => err));
  const one = await started;
  const after = committer.submit('c');
  started = held.started();
  const cause = new Error('EIO: injected');
  one.fail(cause);
  const outcomes = await Promise.all(failing);
  t.equal(outcomes.length, 2);
  t.ok(outcomes.every((outcome) => outcome === cause), 'both jobs of the batch rejected with the batch error');
  const two = await started;
  two.finish(['C']);
  t.equal(await after, 'C', 'the batch after it commits');
});

t.test('two committers chained: the second takes every batch the first released while it was busy, in order', async (t) => {
  // The two-stage pipeline the store ran before its head (native-bench/PROFILE.md, "Storage
  // engine v2"), kept as the case that shows `release`: the log stage appends a batch, releases, then
  // waits for the index stage; the index stage has no release, so batches appended while it
  // commits wait and go into its next round. The store now runs the log stage alone.
  const appended: string[][] = [];
  const indexRounds = heldCommits<string[], undefined>();
  const index = new GroupCommitter(indexRounds.commit);
  const log = new GroupCommitter<string, string>(async (jobs, release) => {
    appended.push(jobs); // the append: durable here
    release();
    await index.submit(jobs);
    return jobs.map((job) => `${job} visible`);
  });
  let round = indexRounds.started();
  const first = log.submit('a');
  const one = await round; // the index stage holds its first round
  t.same(one.jobs, [['a']]);
  const later = [];
  for (const job of ['b', 'c', 'd']) {
    later.push(log.submit(job));
    await turns(); // each its own log batch
  }
  t.same(appended, [['a'], ['b'], ['c'], ['d']], 'the log stage keeps appending while the index stage is busy');
  round = indexRounds.started();
  one.finish([undefined]);
  t.equal(await first, 'a visible');
  const two = await round;
  t.same(two.jobs, [['b'], ['c'], ['d']], 'one index round takes the three appended batches, in log order');
  two.finish([undefined, undefined, undefined]);
  t.same(await Promise.all(later), ['b visible', 'c visible', 'd visible']);
  await Promise.all([log.whenIdle(), index.whenIdle()]);
});
