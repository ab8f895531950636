/**
 * Lifecycle benchmark:
 *   - ingest p99 of small events at 50 connections, quiet, then with a cleanup deleting
 *     100,000 events running beside it (target: p99 at most 2x the quiet figure);
 *   - the time from starting the store to a healthy /health with N events stored
 *     (target with 1,000,000: under 1 s).
 *
 * The cleanup is made to fall inside the measured run by retention: the store runs with
 * RETENTION_DAYS of RETENTION_SECONDS; the preloaded events come of age during the quiet run,
 * and `POST /admin/cleanup` is sent 2 s into the second run.
 *
 * Run: `node lifecycle.js [--quick] [--startup-dir DIR]` (DIR: a data directory holding a large
 * store, e.g. .data/store-preloaded from bench.js, timed as it is); writes RESULTS.lifecycle.md.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeSmallEvents } from './lib/payloads.js';
import { writeResults } from './lib/side-results.js';
import { StoreProcess } from './lib/store-process.js';
import { runWrk } from './lib/wrk.js';

const RETENTION_SECONDS = 60;

async function preload(store, file, count) {
  const run = runWrk({ url: store.url, file, mode: 'post', connections: 50, seconds: 600 });
  for (;;) {
    await new Promise((r) => setTimeout(r, 500));
    if ((await store.eventCount()) >= count) break;
  }
  run.stop();
  await run.result;
}

/**
 * Ingest p99 quiet and beside a cleanup deleting `deleteCount` events.
 * @returns {{ quiet, beside, cleanup, preloadSeconds }}
 */
export async function runCleanupBeside({ dataRoot, deleteCount = 100_000, seconds = 15 }) {
  const dataDir = fs.mkdtempSync(path.join(dataRoot, 'cleanup-'));
  const requests = writeSmallEvents(fs.mkdtempSync(path.join(dataRoot, 'requests-'))).file;
  process.env.RETENTION_DAYS = String(RETENTION_SECONDS / 86_400); // the store inherits the environment
  const store = await StoreProcess.start(dataDir);
  try {
    const started = Date.now();
    await preload(store, requests, deleteCount);
    const preloaded = Date.now();
    const quiet = await runWrk({ url: store.url, file: requests, mode: 'post', connections: 50, seconds }).result;
    // Let every preloaded event pass retention (the quiet run's events stay younger).
    const ripe = preloaded + RETENTION_SECONDS * 1000 + 1000;
    if (Date.now() < ripe) await new Promise((r) => setTimeout(r, ripe - Date.now()));
    const run = runWrk({ url: store.url, file: requests, mode: 'post', connections: 50, seconds });
    await new Promise((r) => setTimeout(r, 2000));
    const cleanupResponse = await fetch(`${store.url}/admin/cleanup`, { method: 'POST' });
    const cleanup = await cleanupResponse.json();
    const beside = await run.result;
    return { quiet, beside, cleanup, preloadSeconds: (preloaded - started) / 1000 };
  } finally {
    delete process.env.RETENTION_DAYS;
    await store.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * Time (ms) from spawning the store to its first healthy /health, on `dataDir` as it is
 * (best of `tries`, each after a graceful stop).
 */
export async function timeStartup(dataDir, tries = 3) {
  const times = [];
  for (let i = 0; i < tries; i++) {
    const started = performance.now();
    const store = await StoreProcess.start(dataDir);
    times.push(performance.now() - started);
    const events = await store.eventCount();
    await store.stop();
    if (i === tries - 1) return { events, bestMs: Math.min(...times), times };
  }
  throw new Error('unreachable');
}

/** The figures as Markdown. */
export function lifecycleTable({ cleanupBeside, startup }) {
  const { quiet, beside, cleanup } = cleanupBeside;
  const ratio = beside.p99Ms / quiet.p99Ms;
  const lines = [
    '| Figure | Without cleanup | Beside the cleanup | Target | |',
    '|---|---|---|---|---|',
    `| Ingest p99, small events, 50 connections | ${quiet.p99Ms.toFixed(2)} ms | ${beside.p99Ms.toFixed(2)} ms (${ratio.toFixed(2)}x) | at most 2x | ${ratio <= 2 ? 'met' : '**missed**'} |`,
    `| Ingest rate | ${Math.round(quiet.rate).toLocaleString('en')}/s | ${Math.round(beside.rate).toLocaleString('en')}/s | | |`,
    '',
    `The cleanup deleted ${cleanup.records_deleted?.total?.toLocaleString('en')} records (retention) in ${cleanup.duration_seconds} s while the second run went on.`,
  ];
  if (startup) {
    lines.push('', `Start-up to a healthy /health with ${startup.events.toLocaleString('en')} events stored: best ${startup.bestMs.toFixed(0)} ms of ${startup.times.length} (${startup.times.map((t) => t.toFixed(0)).join(', ')} ms); target under 1,000 ms: ${startup.bestMs < 1000 ? 'met' : '**missed**'}.`);
  }
  return lines.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const quick = process.argv.includes('--quick');
  const dataRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'ees-bench-'));
  const at = process.argv.indexOf('--startup-dir');
  const cleanupBeside = await runCleanupBeside({ dataRoot, deleteCount: quick ? 20_000 : 100_000, seconds: quick ? 8 : 15 });
  const startup = at > 0 ? await timeStartup(process.argv[at + 1]) : undefined;
  writeResults('RESULTS.lifecycle.md', 'Lifecycle benchmark', quick, lifecycleTable({ cleanupBeside, startup }));
}
