/**
 * `npm run crash-loop [-- --cycles N --cycles-per-store N --seed N --max-kill-ms N --max-records N --reset-every-ms N]`
 *
 * Power cuts, simulated: starts the built store on a fresh DATA_DIR, runs concurrent writers
 * (image events with real JPEGs, drafts with streamed video and local-only uploads, finalizes),
 * SIGKILLs the store at a random moment, restarts it on the same DATA_DIR and audits it against
 * what was acknowledged (crash-audit.ts): every acknowledged event readable with its fields,
 * every acknowledged file with its exact bytes, staging empty, counters and filtered queries in
 * agreement with the records, nothing refused stored. Every `--cycles-per-store` kills the
 * store is stopped gracefully after a last audit and a new DATA_DIR begins, so an audit (which
 * reads everything back) stays quick.
 *
 * With `--max-records N` the store runs with MAX_RECORDS=N, so cleanup deletes the oldest events
 * (and reclaims their segments) while the writers write and the kills fall; an event may then be
 * missing only if it is older than every event still listed, and each deletion seen and then
 * acknowledged by `POST /admin/cleanup` must hold. With `--reset-every-ms N` a writer resets the
 * store about every N ms: no event stored before an acknowledged reset may be listed again.
 *
 * Prints one line per cycle and a summary; exits 1 on any lost or corrupt event or file, any
 * inconsistency, any unexpected answer, or a store that fails to start or dies by itself.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { numberOption, optionalNumberOption } from './lib/args.js';
import { AuditTally } from './lib/audit-tally.js';
import { startAndAudit, StoreFailed, type AuditedStart } from './lib/audited-start.js';
import { addTally, emptyTally, Ledger } from './lib/crash-ledger.js';
import { CrashWriters } from './lib/crash-writers.js';
import { freshSeed, Random } from './lib/random.js';

const cycles = numberOption('cycles', 200);
const cyclesPerStore = numberOption('cycles-per-store', 25);
const seed = numberOption('seed', freshSeed());
const maxKillMs = numberOption('max-kill-ms', 1500);
const recordCap = optionalNumberOption('max-records');
const resetEveryMs = optionalNumberOption('reset-every-ms');
const IMAGE_WRITERS = 4;
const DRAFT_WRITERS = 2;
/** Cleanup runs every second (consistency pass included) and deletes nothing unless there is a record cap. */
const STORE_ENV: Record<string, string> = {
  CLEANUP_INTERVAL_SECONDS: '1', RETENTION_DAYS: '3650', DRAFT_AUTO_FINALIZE_SECONDS: '86400',
  ...(recordCap === undefined ? {} : { MAX_RECORDS: String(recordCap) }),
};

const rng = new Random(seed);
const findings = new AuditTally();
const unexpected: string[] = [];
const totals = { cycles: 0, stores: 0, ...emptyTally() };
const restartMs: number[] = [];
const auditMs: number[] = [];

class Fatal extends Error {}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Starts the store on `dataDir` and audits it. */
async function restartAndAudit(dataDir: string, ledger: Ledger): Promise<AuditedStart> {
  const started = await startAndAudit(dataDir, STORE_ENV, ledger, rng, { recordCap });
  restartMs.push(started.startMs);
  auditMs.push(started.auditMs);
  findings.add(started.found);
  return started;
}

/** One kill cycle: start, audit, write, kill at a random moment. */
async function cycle(n: number, dataDir: string, ledger: Ledger): Promise<void> {
  const started = performance.now();
  const { store, client, found } = await restartAndAudit(dataDir, ledger);
  const before = ledger.tally();
  const writers = new CrashWriters(client, ledger, rng, { recordCap: recordCap !== undefined, resetEveryMs });
  writers.start(IMAGE_WRITERS, DRAFT_WRITERS);
  const killAfter = rng.int(50, maxKillMs);
  await sleep(killAfter);
  const diedByItself = store.hasExited();
  await store.kill('SIGKILL');
  await writers.stop();
  for (const u of writers.unexpected) unexpected.push(`${u.request}: ${u.status} ${u.body}`);
  if (diedByItself) throw new Fatal(`the store died by itself while written to: ${store.output().slice(-2000)}`);
  const after = ledger.tally();
  totals.cycles++;
  console.log(`cycle ${n}/${cycles}: verified ${found.eventsChecked} events, ${found.filesChecked} files; `
    + `wrote ${after.acked - before.acked} acked, ${after.unknown - before.unknown} unknown; killed after ${killAfter} ms; `
    + `cycle ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

/** One DATA_DIR's life: `count` kill cycles, then a last audit and a graceful stop. */
async function storeLife(first: number, count: number): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ees-crash-'));
  const ledger = new Ledger();
  totals.stores++;
  for (let n = first; n < first + count; n++) await cycle(n, dataDir, ledger);
  const { store } = await restartAndAudit(dataDir, ledger);
  const exit = await store.kill('SIGTERM');
  if (exit.code !== 0) throw new Fatal(`graceful stop exited with ${exit.code ?? exit.signal}: ${store.output().slice(-2000)}`);
  addTally(totals, ledger.tally());
  if (findings.problems() === 0) fs.rmSync(dataDir, { recursive: true, force: true });
  else console.log(`  DATA_DIR kept for inspection: ${dataDir}`);
}

function summary(fatal: string | undefined): number {
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
  console.log('\ncrash-loop summary');
  console.log(`  seed                   ${seed}`);
  console.log(`  cycles (SIGKILLs)      ${totals.cycles} over ${totals.stores} data directories`);
  console.log(`  events acknowledged    ${totals.acked} (+${totals.unknown} cut off by the kill, ${totals.unknownKept} of them found stored; ${totals.refused} refused or sent after the kill)`);
  console.log(`  files acknowledged     ${totals.files} (images and uploads); finalizes acknowledged ${totals.finalized}`);
  console.log(`  verified               ${findings.eventsVerified} event reads, ${findings.filesVerified} file downloads`);
  if (recordCap !== undefined) console.log(`  deleted by cleanup     ${findings.deletedByCleanup} events, oldest first (MAX_RECORDS=${recordCap})`);
  if (recordCap !== undefined || resetEveryMs !== undefined) console.log(findings.removalLine(totals));
  console.log(`  restart to listening   median ${median(restartMs).toFixed(0)} ms, max ${Math.max(0, ...restartMs).toFixed(0)} ms; audit median ${median(auditMs).toFixed(0)} ms`);
  for (const line of findings.summaryLines()) console.log(line);
  console.log(`  unexpected answers     ${unexpected.length}`);
  for (const line of unexpected.slice(0, 10)) console.log(`    ${line}`);
  if (fatal) console.log(`  FATAL                  ${fatal}`);
  // A run that read back no acknowledged event proved nothing: it does not pass.
  if (findings.eventsVerified === 0) console.log('  NOTHING VERIFIED       no acknowledged event was read back');
  const failed = fatal !== undefined || findings.problems() + unexpected.length > 0 || findings.eventsVerified === 0;
  console.log(failed ? 'FAILED' : 'PASSED');
  return failed ? 1 : 0;
}

console.log(`crash-loop: ${cycles} cycles, ${cyclesPerStore} per data directory, seed ${seed}`
  + `${recordCap === undefined ? '' : `, MAX_RECORDS=${recordCap}`}${resetEveryMs === undefined ? '' : `, a reset about every ${resetEveryMs} ms`}`);
let fatal: string | undefined;
try {
  for (let first = 1; first <= cycles; first += cyclesPerStore) await storeLife(first, Math.min(cyclesPerStore, cycles - first + 1));
} catch (err) {
  fatal = err instanceof Fatal || err instanceof StoreFailed ? err.message : (err as Error).stack;
}
process.exit(summary(fatal));
