/**
 * Where small appends are written (src/store/log/append-pace.ts; docs/STORAGE.md, "Small appends on
 * the calling thread"): the first on the thread pool, then on the calling thread while recent
 * ones took under INLINE_BOUND_MS, on the pool from the first slow one until its duration
 * decays, and with every failure passed on. The clock is the test's, so each duration is exact.
 */
import t from 'tap';
import { AppendPace, INLINE_BOUND_MS } from '../src/store/log/append-pace.js';

/** A pace on a clock the test moves: `write(ms)` takes `ms` on whichever thread the pace picks. */
function pacedWrites() {
  let clock = 0;
  const pace = new AppendPace(() => clock);
  const threads: string[] = [];
  const write = (ms: number, fail = false): Promise<void> =>
    pace.write(
      () => {
        threads.push('inline');
        clock += ms;
        if (fail) throw new Error('EIO: i/o error, write');
      },
      async () => {
        threads.push('pool');
        clock += ms;
        if (fail) throw new Error('EIO: i/o error, write');
      },
    );
  return { pace, threads, write };
}

t.test('the first small append goes to the pool; fast ones after it stay on the calling thread', async (t) => {
  const { threads, write } = pacedWrites();
  await write(0.28);
  for (let i = 0; i < 100; i++) await write(0.13);
  t.same(threads, ['pool', ...Array(100).fill('inline')]);
});

t.test('one slow append sends the next ones to the pool until its duration decays under the bound', async (t) => {
  const { pace, threads, write } = pacedWrites();
  for (let i = 0; i < 11; i++) await write(0.13);
  await write(50); // a card's sync that took 50 ms, on the calling thread
  t.equal(threads.at(-1), 'inline', 'the slow one was inline: nothing foretold it');
  t.notOk(pace.inline, 'its 50 ms set the recent duration at once');
  let pooled = 0;
  while (!pace.inline) {
    await write(0.28); // the pool's durations, hand-over included
    pooled++;
  }
  // 0.28 + 49.72 x (7/8)^n < 1 from n = 32.
  t.equal(pooled, 32, `${pooled} appends of 0.28 ms went to the pool before the recent duration fell under ${INLINE_BOUND_MS} ms`);
  t.same(threads.slice(12), Array(pooled).fill('pool'));
  await write(0.13);
  t.equal(threads.at(-1), 'inline', 'then inline again');
});

t.test('on a device whose syncs stay slow, appends stay on the pool', async (t) => {
  const { threads, write } = pacedWrites();
  for (let i = 0; i < 200; i++) await write(4);
  t.same(threads, Array(200).fill('pool'), 'appends of 4 ms each: none blocked the calling thread');
});

t.test('a failed write rejects with its error, on either thread, and is timed', async (t) => {
  const { pace, threads, write } = pacedWrites();
  await write(0.28);
  await t.rejects(write(20, true), /EIO/, 'inline: the thrown error becomes the rejection');
  t.notOk(pace.inline, "the failure's 20 ms counted");
  await t.rejects(write(0.3, true), /EIO/, 'pooled: the same');
  t.same(threads, ['pool', 'inline', 'pool']);
});
