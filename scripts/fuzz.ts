/**
 * `npm run fuzz [-- --minutes N --seed N]`: the long fuzz run (test/fuzz.test.ts is the short one).
 *
 * Starts the built store on a fresh DATA_DIR and runs every fuzz property (create bodies, query
 * strings, metadata_filter, Range headers, multipart bodies, path ids, slow and aborting clients)
 * for an equal share of `--minutes` (default 5), checking after each that the process is alive.
 * At the end: staging empty, /health 200, and a graceful stop (SIGTERM) that exits 0. Prints
 * one line per property (runs, and the shrunk counterexample of a failure with its seed) and
 * exits 1 on any failure.
 */
import fc from 'fast-check';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { numberOption } from './lib/args.js';
import { clientProperties } from './lib/fuzz-client-properties.js';
import { requestProperties } from './lib/fuzz-properties.js';
import { checkProperty } from './lib/fuzz-runner.js';
import { assertHealthy, assertStagingDrains, prepareFuzz } from './lib/fuzz-target.js';
import { freshSeed } from './lib/random.js';
import { launchStore } from './lib/store-process.js';
import { printLoggedErrors } from './lib/store-log.js';

const minutes = numberOption('minutes', 5);
const seed = numberOption('seed', freshSeed());
const properties = [...requestProperties, ...clientProperties];
const budgetMs = (minutes * 60_000) / properties.length;

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ees-fuzz-'));
const store = await launchStore({ DATA_DIR: dataDir });
const ctx = await prepareFuzz({ url: store.url, port: Number(new URL(store.url).port), dataDir });
console.log(`fuzz: ${properties.length} properties, ${(budgetMs / 1000).toFixed(0)} s each, seed ${seed}, store pid ${store.pid}`);

const failures: string[] = [];
let totalRuns = 0;
for (const [i, property] of properties.entries()) {
  const details = await checkProperty(property, ctx, {
    seed: seed + i, numRuns: Number.MAX_SAFE_INTEGER, interruptAfterTimeLimit: budgetMs, markInterruptAsFailure: false,
  });
  totalRuns += details.numRuns;
  console.log(`  ${property.name.padEnd(16)} ${String(details.numRuns).padStart(7)} runs  ${details.failed ? 'FAILED' : 'ok'}`);
  // Interrupted by its time budget before a single run, a property proved nothing.
  if (details.numRuns === 0) failures.push(`${property.name}: no run within ${(budgetMs / 1000).toFixed(0)} s`);
  if (details.failed) {
    failures.push(`${property.name}: ${String(details.errorInstance)}\n${fc.defaultReportMessage(details)}`);
    console.log(`    ${String(details.errorInstance).slice(0, 600)}\n    seed ${seed + i}, counterexample ${fc.stringify(details.counterexample).slice(0, 600)}`);
  }
  if (store.hasExited()) {
    failures.push(`the store died during "${property.name}": ${store.output().slice(-3000)}`);
    break;
  }
}

if (!store.hasExited()) {
  try {
    await assertStagingDrains(ctx, 'the fuzz run');
    await assertHealthy(ctx, 'the fuzz run');
  } catch (err) {
    failures.push(String(err));
  }
  const stopping = performance.now();
  const exit = await store.kill('SIGTERM');
  const stopMs = performance.now() - stopping;
  console.log(`graceful stop: exit ${exit.code ?? exit.signal} after ${stopMs.toFixed(0)} ms`);
  if (exit.code !== 0) failures.push(`graceful stop exited with ${exit.code ?? exit.signal}`);
}

printLoggedErrors(store.output());
console.log(`\nfuzz summary: ${totalRuns} runs in ${minutes} min, ${failures.length} failures`);
for (const failure of failures) console.log(`- ${failure.slice(0, 2000)}`);
if (failures.length === 0) fs.rmSync(dataDir, { recursive: true, force: true });
else console.log(`DATA_DIR kept for inspection: ${dataDir}`);
process.exit(failures.length > 0 ? 1 : 0);
