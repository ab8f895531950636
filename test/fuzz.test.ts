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

t.test('no hostile request crashes the store, answers a 5xx, or leaves anything behind', async (t) => {
  const store = await startStore();
  t.teardown(store.stop);
  const ctx = await prepareFuzz({ url: store.url, port: Number(new URL(store.url).port), dataDir: store.dataDir });
  const properties = [...requestProperties, ...clientProperties];
  t.ok(properties.length > 0, `${properties.length} properties`);
  for (const property of properties) {
    const details = await checkProperty(property, ctx, { numRuns: RUNS_PER_PROPERTY, interruptAfterTimeLimit: MS_PER_PROPERTY, markInterruptAsFailure: false });
    const failure = details.failed ? { diagnostic: true, error: String(details.errorInstance), report: fc.defaultReportMessage(details) } : {};
    t.notOk(details.failed, `${property.name}: ${details.numRuns} runs`, failure);
    // The time budget may interrupt a property: it must still have run, or it proved nothing.
    t.ok(details.numRuns > 0, `${property.name} ran at least once`);
  }
  await assertHealthy(ctx, 'the fuzz run');
  await assertStagingDrains(ctx, 'the fuzz run');
  t.pass('the store is healthy after the run, its staging empty (assertHealthy and assertStagingDrains throw otherwise)');
});
