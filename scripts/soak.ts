/**
 * `npm run soak [-- --minutes N --interval S --workers W]`: mixed traffic for N minutes (default
 * 5) against the built store with small limits, so cleanup keeps deleting while ingest, queries,
 * downloads and uploads go on. Every S seconds (default 30) prints a row: requests, errors,
 * p50/p99 latency overall and per kind, the store's RSS and open fds (/proc), its DATA_DIR's disk
 * bytes, and the events it holds. Ends with first/last/max of each figure. Traffic goes to
 * 127.0.0.1 only and stops by itself; exits 1 when the store dies or answers a 5xx other than
 * 507/529, or a request fails or hangs.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { numberOption } from './lib/args.js';
import { StoreClient } from './lib/http-client.js';
import { LatencyWindow, percentile } from './lib/latency.js';
import { diskBytes, openFds, residentBytes } from './lib/proc-stats.js';
import { freshSeed, Random } from './lib/random.js';
import { SoakTraffic } from './lib/soak-traffic.js';
import { printLoggedErrors } from './lib/store-log.js';
import { launchStore } from './lib/store-process.js';

const minutes = numberOption('minutes', 5);
const intervalSeconds = numberOption('interval', 30);
const workers = numberOption('workers', 8);
const seed = numberOption('seed', freshSeed());
const MiB = 1024 * 1024;
const LIMITS = { MAX_RECORDS: '3000', MAX_STORAGE_BYTES: String(96 * MiB), CLEANUP_INTERVAL_SECONDS: '10', DRAFT_AUTO_FINALIZE_SECONDS: '60', RETENTION_DAYS: '1' };
const KINDS = ['ingest', 'query', 'download', 'upload', 'stats'];

interface Row {
  t: number;
  requests: number;
  errors: number;
  p50: number;
  p99: number;
  perKind: number[];
  rss: number;
  fds: number;
  disk: number;
  events: number;
}

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ees-soak-'));
const store = await launchStore({ DATA_DIR: dataDir, ...LIMITS });
const client = new StoreClient(store.url, 30_000);
const latency = new LatencyWindow();
const traffic = new SoakTraffic(client, latency, new Random(seed));
console.log(`soak: ${minutes} min, ${workers} workers, a row every ${intervalSeconds} s, seed ${seed}; store pid ${store.pid}, limits ${JSON.stringify(LIMITS)}`);
console.log(`${'min'.padStart(6)} ${'reqs'.padStart(7)} ${'errors'.padStart(6)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)} | ${KINDS.map((k) => `${k} p99`.padStart(13)).join(' ')} | ${'RSS MiB'.padStart(7)} ${'fds'.padStart(5)} ${'disk MiB'.padStart(8)} ${'events'.padStart(7)}`);

const rows: Row[] = [];
const counted = () => {
  let requests = 0;
  let errors = 0;
  for (const tally of traffic.tallies.values()) {
    for (const n of tally.counts.values()) requests += n;
    errors += tally.failures();
  }
  return { requests, errors };
};
const fmt = (n: number, digits = 1) => (Number.isNaN(n) ? '-' : n.toFixed(digits));

async function report(startedAt: number, previous: { requests: number; errors: number }): Promise<{ requests: number; errors: number }> {
  const now = counted();
  const all = latency.values();
  const events = await client.getJson('/stats').then((s) => s.current.total_events as number, () => NaN);
  const row: Row = {
    t: (performance.now() - startedAt) / 60_000,
    requests: now.requests - previous.requests,
    errors: now.errors - previous.errors,
    p50: percentile(all, 50),
    p99: percentile(all, 99),
    perKind: KINDS.map((k) => percentile(latency.values(k), 99)),
    rss: residentBytes(store.pid) / MiB,
    fds: openFds(store.pid),
    disk: diskBytes(dataDir) / MiB,
    events,
  };
  rows.push(row);
  latency.reset();
  console.log(`${fmt(row.t).padStart(6)} ${String(row.requests).padStart(7)} ${String(row.errors).padStart(6)} ${fmt(row.p50).padStart(7)} ${fmt(row.p99).padStart(7)} | ${row.perKind.map((v) => fmt(v).padStart(13)).join(' ')} | ${fmt(row.rss).padStart(7)} ${String(row.fds).padStart(5)} ${fmt(row.disk).padStart(8)} ${String(row.events).padStart(7)}`);
  return now;
}

const startedAt = performance.now();
traffic.start(workers);
let previous = { requests: 0, errors: 0 };
while (performance.now() - startedAt < minutes * 60_000 && !store.hasExited()) {
  await new Promise((resolve) => setTimeout(resolve, Math.min(intervalSeconds * 1000, minutes * 60_000 - (performance.now() - startedAt))));
  previous = await report(startedAt, previous);
}
await traffic.stop();

const died = store.hasExited();
const exit = died ? await store.exited : await store.kill('SIGTERM');
const figure = (name: string, pick: (r: Row) => number, unit: string) => {
  const values = rows.map(pick).filter((v) => !Number.isNaN(v));
  console.log(`  ${name.padEnd(12)} first ${fmt(values[0])} ${unit}, last ${fmt(values[values.length - 1])} ${unit}, max ${fmt(Math.max(...values))} ${unit}`);
};
console.log('\nsoak summary');
figure('RSS', (r) => r.rss, 'MiB');
figure('open fds', (r) => r.fds, '');
figure('disk', (r) => r.disk, 'MiB');
figure('p99', (r) => r.p99, 'ms');
figure('events', (r) => r.events, '');
for (const kind of KINDS) console.log(`  ${kind.padEnd(12)} ${traffic.tally(kind)}`);
console.log(`  store        ${died ? 'DIED' : 'stopped by SIGTERM'}: exit ${exit.code ?? exit.signal}`);
printLoggedErrors(store.output());
const { errors } = counted();
const failed = died || errors > 0 || exit.code !== 0;
console.log(failed ? `FAILED: ${errors} errors${died ? ', the store died' : ''}` : 'PASSED');
if (!failed) fs.rmSync(dataDir, { recursive: true, force: true });
else console.log(`DATA_DIR kept for inspection: ${dataDir}`);
process.exit(failed ? 1 : 0);
