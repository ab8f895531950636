/**
 * Hostile input, time-boxed (docs/RELIABILITY.md, "How each promise is tested"): a short fast-check
 * run of every fuzz property (create bodies, query strings, metadata_filter, Range headers,
 * multipart bodies, path ids, slow and aborting clients) against a real store. Each property gets a
 * small budget of runs and milliseconds; `npm run fuzz` is the long run. A failure prints
 * fast-check's seed and shrunk counterexample, so it can be replayed.
 */
import fc from 'fast-check';
import t from 'tap';
import { clientProperties } from '../scripts/lib/fuzz-client-properties.js';
import { requestProperties } from '../scripts/lib/fuzz-properties.js';
import { checkProperty } from '../scripts/lib/fuzz-runner.js';
import { assertHealthy, assertStagingDrains, prepareFuzz } from '../scripts/lib/fuzz-target.js';
import { startStore } from './support/store-server.js';

const RUNS_PER_PROPERTY = 30;
const MS_PER_PROPERTY = 700;

/**
 * Whether fast-check's run failed for a reason of the store's: a run that failed, or too many
 * skipped; not the time budget interrupting the runs before one finished (no counterexample).
 */
function counterexampleFound(details: fc.RunDetails<unknown>): boolean {
  return details.failed && !(details.interrupted && details.counterexample === null);
}

t.test('no hostile request crashes the store, answers a 5xx, or leaves anything behind', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const ctx = await prepareFuzz({ url: store.url, port: Number(new URL(store.url).port), dataDir: store.dataDir });
  const properties = [...requestProperties, ...clientProperties];
  t.ok(properties.length > 0, `${properties.length} properties`);
  for (const property of properties) {
    // The first run has no time budget: on a loaded machine one run can outlast it, and fast-check
    // then fails the property with no counterexample. The other runs share the budget.
    const first = await checkProperty(property, ctx, { numRuns: 1 });
    const rest = counterexampleFound(first) ? undefined : await checkProperty(property, ctx, { numRuns: RUNS_PER_PROPERTY - 1, interruptAfterTimeLimit: MS_PER_PROPERTY, markInterruptAsFailure: false });
    const failed = [first, rest].find((details) => details !== undefined && counterexampleFound(details));
    const failure = failed ? { diagnostic: true, error: String(failed.errorInstance), report: fc.defaultReportMessage(failed) } : {};
    const runs = first.numRuns + (rest?.numRuns ?? 0);
    t.notOk(failed, `${property.name}: ${runs} runs`, failure);
    // The time budget may interrupt a property: it must still have run, or it proved nothing.
    t.ok(runs > 0, `${property.name} ran at least once`);
  }
  await assertHealthy(ctx, 'the fuzz run');
  await assertStagingDrains(ctx, 'the fuzz run');
  t.pass('the store is healthy after the run, its staging empty (assertHealthy and assertStagingDrains throw otherwise)');
});
