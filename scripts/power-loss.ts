/**
 * `npm run power-loss [-- --cuts N --cuts-per-image N --image-mib N --max-cut-ms N --max-records N --reset-every-ms N --seed N --same-boot]`, as root
 *
 * Power cuts on a real file system (docs/RELIABILITY.md, "Power loss"): DATA_DIR is on an ext4
 * image mounted through a loop device (loop-image.ts). While the crash loop's writers write
 * (crash-writers.ts: image events with real JPEGs, drafts with streamed video and local-only
 * uploads, finalizes), the store is frozen at a random moment, the image file copied, and the
 * store resumed (power-cut.ts): the copy holds what ext4 had written to its device, not its page
 * cache. After `--cuts-per-image` cuts the store is killed and a new image begins; each copy of
 * the image is then mounted on a loop device of its own (ext4 replays its journal), the built
 * store started on it as after a reboot (new-boot.ts: it reads another boot id, as after a real
 * cut), and audited (crash-audit.ts) against the ledger as it stood at that cut's
 * SIGSTOP: every event acknowledged before the cut listed with its fields, every acknowledged
 * file with its exact bytes, nothing refused stored, staging empty, counters and filtered
 * queries in agreement. A write in flight at the freeze may be there or not.
 *
 * Nothing acknowledged may be undone either: a finalize, an upload, and the removals the writers
 * have acknowledged (crash-writers.ts): the store runs with MAX_RECORDS=`--max-records` (150), so
 * cleanup deletes the oldest events while the cuts fall and a writer has each deletion it sees
 * acknowledged by `POST /admin/cleanup`, and a writer resets the store about every
 * `--reset-every-ms` (4000). No event removed before a cut may be listed on its copy.
 *
 * With `--same-boot` the store on a copy reads the current boot id: the device lost power alone
 * (a disk unplugged, the machine running on), and what reads the boot id takes the cut for a
 * restart of the store's process. Copies are audited once the store that wrote them is gone, so
 * that one store runs at a time.
 *
 * Prints a line per cut and a summary. Exits 1 on any lost or corrupt event or file,
 * inconsistency, unexpected answer, copy that does not mount, store that does not start on a copy,
 * or audit request that fails on it (the other cuts are still audited); 2 when it cannot run
 * here (not root, no loop device). Loop devices, mounts and temporary files are removed on every
 * exit; the copy of a cut with a finding is kept, as cut (before its journal was replayed), and
 * named.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { flagOption, numberOption } from './lib/args.js';
import { AuditTally } from './lib/audit-tally.js';
import { startAndAudit, StoreFailed } from './lib/audited-start.js';
import { addTally, emptyTally, Ledger } from './lib/crash-ledger.js';
import { CrashWriters } from './lib/crash-writers.js';
import { StoreClient } from './lib/http-client.js';
import { LoopRefused, loopMountRefusal, makeExt4Image, mountImage, type MountedImage } from './lib/loop-image.js';
import { newBootPrefix } from './lib/new-boot.js';
import { cutPower, type Cut } from './lib/power-cut.js';
import { freshSeed, Random } from './lib/random.js';
import { launchStore } from './lib/store-process.js';

const cuts = numberOption('cuts', 100);
const cutsPerImage = numberOption('cuts-per-image', 10);
const imageMiB = numberOption('image-mib', 1024);
const maxCutMs = numberOption('max-cut-ms', 1500);
const recordCap = numberOption('max-records', 150);
const resetEveryMs = numberOption('reset-every-ms', 4000);
const seed = numberOption('seed', freshSeed());
const sameBoot = flagOption('same-boot');
const IMAGE_WRITERS = 4;
const DRAFT_WRITERS = 2;
/** As in the crash loop: cleanup runs every second (consistency pass included), and deletes beyond the record cap. */
const STORE_ENV: Record<string, string> = {
  CLEANUP_INTERVAL_SECONDS: '1', RETENTION_DAYS: '3650', DRAFT_AUTO_FINALIZE_SECONDS: '86400', MAX_RECORDS: String(recordCap),
};
const MiB = 1024 * 1024;

const refusal = loopMountRefusal();
if (refusal) {
  console.error(`power-loss: ${refusal}`);
  process.exit(2);
}

const rng = new Random(seed);
const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ees-power-loss-'));
// Runs after loop-image.ts's own exit hook (registered when it was imported) has unmounted everything.
process.on('exit', () => fs.rmSync(workDir, { recursive: true, force: true }));
const copyPrefix = sameBoot ? [] : newBootPrefix(path.join(workDir, 'boot_id'));

const findings = new AuditTally();
const unexpected: string[] = [];
const failedAudits: string[] = [];
const keptCopies: string[] = [];
const written = emptyTally();
const atCuts = emptyTally();
const totals = { cuts: 0, images: 0, copiesRetaken: 0, notQuiet: 0, sectorsDuringCopies: 0 };
const times = { start: [] as number[], audit: [] as number[], copy: [] as number[], frozen: [] as number[], copyMiB: [] as number[] };
const loads = [os.loadavg()[0]];
const runStarted = performance.now();

class Fatal extends Error {}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** Creates `dir` and makes its entry durable (fsync of the parent directory, fsync(2)): the device as provisioned. */
function mkdirDurable(dir: string): void {
  fs.mkdirSync(dir);
  const fd = fs.openSync(path.dirname(dir), 'r');
  fs.fsyncSync(fd);
  fs.closeSync(fd);
}

/** Mounts the copy of cut `n`, starts the store on it and audits it against the ledger of the cut. */
async function auditCut(n: number, cut: Cut): Promise<void> {
  const asCut = `${cut.copy}.as-cut`;
  execFileSync('cp', ['--sparse=always', cut.copy, asCut]);
  const problemsBefore = findings.problems() + failedAudits.length;
  let line: string;
  let mount: MountedImage | undefined;
  try {
    mount = mountImage(cut.copy, path.join(workDir, `cut-${n}`));
    const audited = await startAndAudit(path.join(mount.mountPoint, 'data'), STORE_ENV, cut.expected, rng, { prefix: copyPrefix, recordCap });
    await audited.store.kill('SIGKILL');
    times.start.push(audited.startMs);
    times.audit.push(audited.auditMs);
    findings.add(audited.found, `cut ${n}${cut.quiet ? '' : ' (copy not quiet)'}: `);
    line = `store started on the copy in ${audited.startMs.toFixed(0)} ms; audit ${seconds(audited.auditMs)}: ${audited.found.eventsChecked} events, ${audited.found.filesChecked} files verified`;
  } catch (err) {
    if (!(err instanceof StoreFailed || err instanceof LoopRefused)) throw err;
    failedAudits.push(`cut ${n}: ${err.message}`);
    line = `FAILED: ${err.message}`;
  } finally {
    mount?.release();
  }
  const tally = cut.expected.tally();
  addTally(atCuts, tally);
  fs.rmSync(cut.copy);
  if (findings.problems() + failedAudits.length > problemsBefore) {
    const kept = path.join(os.tmpdir(), `ees-power-loss-seed-${seed}-cut-${n}.img`);
    fs.renameSync(asCut, kept);
    keptCopies.push(kept);
  } else {
    fs.rmSync(asCut);
  }
  const quiet = cut.quiet ? (cut.copies === 1 ? 'quiet' : `quiet on copy ${cut.copies}`) : `NOT quiet after ${cut.copies} copies`;
  console.log(`cut ${n}/${cuts}: ${tally.acked} acknowledged at the cut, ${tally.unknown} creates in flight (${tally.unknownKept} found); `
    + `copy ${(cut.copyBytes / MiB).toFixed(0)} MiB in ${cut.copyMs.toFixed(0)} ms (${quiet}), frozen ${cut.frozenMs.toFixed(0)} ms; ${line}`);
}

/** One image's life: the store on it under the writers and `count` cuts; then the store killed and each copy audited. */
async function imageLife(first: number, count: number): Promise<void> {
  const n = ++totals.images;
  const image = path.join(workDir, `image-${n}.img`);
  makeExt4Image(image, imageMiB);
  const live = mountImage(image, path.join(workDir, `image-${n}`));
  const dataDir = path.join(live.mountPoint, 'data');
  mkdirDurable(dataDir);
  const ledger = new Ledger();
  const taken: Cut[] = [];
  const started = performance.now();
  const store = await launchStore({ DATA_DIR: dataDir, ...STORE_ENV }).catch((err: Error) => {
    throw new Fatal(`the store did not start on a new image: ${err.message.slice(-2000)}`);
  });
  const writers = new CrashWriters(new StoreClient(store.url, 60_000), ledger, rng, { recordCap: true, resetEveryMs });
  writers.start(IMAGE_WRITERS, DRAFT_WRITERS);
  try {
    for (let k = 0; k < count; k++) {
      await sleep(rng.int(100, maxCutMs));
      if (store.hasExited()) throw new Fatal(`the store died by itself while written to: ${store.output().slice(-2000)}`);
      const cut = await cutPower(store, live, ledger, path.join(workDir, `cut-${first + k}.img`));
      taken.push(cut);
      totals.cuts++;
      totals.copiesRetaken += cut.copies - 1;
      totals.sectorsDuringCopies += cut.sectorsDuringCopies;
      if (!cut.quiet) totals.notQuiet++;
      times.copy.push(cut.copyMs);
      times.frozen.push(cut.frozenMs);
      times.copyMiB.push(cut.copyBytes / MiB);
      loads.push(os.loadavg()[0]);
    }
  } finally {
    await store.kill('SIGKILL');
    await writers.stop();
    live.release();
    fs.rmSync(image);
  }
  for (const u of writers.unexpected) unexpected.push(`${u.request}: ${u.status} ${u.body}`);
  const tally = ledger.tally();
  addTally(written, tally);
  console.log(`image ${n}: ${count} cuts in ${seconds(performance.now() - started)}, ${tally.acked} events acknowledged; store killed, auditing the copies`);
  for (const [k, cut] of taken.entries()) await auditCut(first + k, cut);
}

function summary(fatal: string | undefined): number {
  const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
  const max = (values: number[]) => Math.max(0, ...values);
  const load = os.loadavg();
  console.log('\npower-loss summary');
  console.log(`  seed                   ${seed}`);
  console.log(`  cuts                   ${totals.cuts} over ${totals.images} ext4 images of ${imageMiB} MiB (sparse), ${cutsPerImage} cuts each; `
    + `copies started ${sameBoot ? 'in the same boot (--same-boot)' : 'as after a reboot (another boot id)'}`);
  console.log(`  events acknowledged    ${written.acked} by the stores cut (${written.files} files, ${written.finalized} finalizes)`);
  console.log(`  expected at the cuts   ${atCuts.acked} acknowledged events and ${atCuts.files} files summed over the cuts, each audited on its copy; `
    + `${atCuts.unknown} creates in flight at a cut, ${atCuts.unknownKept} of them found stored`);
  console.log(`  verified               ${findings.eventsVerified} event reads, ${findings.filesVerified} file downloads`);
  console.log(`  deleted by cleanup     ${findings.deletedByCleanup} events found gone on a copy, oldest first (MAX_RECORDS=${recordCap})`);
  console.log(findings.removalLine(written));
  console.log(`  copies                 ${mean(times.copyMiB).toFixed(0)} MiB allocated on average; copy mean ${mean(times.copy).toFixed(0)} ms, max ${max(times.copy).toFixed(0)} ms; `
    + `store frozen mean ${mean(times.frozen).toFixed(0)} ms, max ${max(times.frozen).toFixed(0)} ms`);
  console.log(`  writes during a copy   ${totals.copiesRetaken} copies taken again (${totals.sectorsDuringCopies} sectors reached the device while one was read); ${totals.notQuiet} audited though not quiet`);
  console.log(`  recovery start-up      mean ${mean(times.start).toFixed(0)} ms, max ${max(times.start).toFixed(0)} ms (the store on a copy, spawn to listening); audit mean ${seconds(mean(times.audit))}`);
  for (const line of findings.summaryLines()) console.log(line);
  console.log(`  failed audits          ${failedAudits.length} (the copy did not mount, the store did not start on it, or an audit request failed)`);
  for (const line of failedAudits.slice(0, 10)) console.log(`    ${line}`);
  console.log(`  unexpected answers     ${unexpected.length}`);
  for (const line of unexpected.slice(0, 10)) console.log(`    ${line}`);
  for (const kept of keptCopies) console.log(`  copy kept, as cut      ${kept}`);
  console.log(`  run time               ${((performance.now() - runStarted) / 60_000).toFixed(1)} min`);
  console.log(`  machine load           1-min load average ${loads[0].toFixed(2)} at the start, ${load[0].toFixed(2)} at the end, max ${max(loads).toFixed(2)} at a cut (${os.cpus().length} cores)`);
  if (fatal) console.log(`  FATAL                  ${fatal}`);
  // A run that read back no acknowledged event proved nothing: it does not pass.
  if (findings.eventsVerified === 0) console.log('  NOTHING VERIFIED       no acknowledged event was read back');
  const failed = fatal !== undefined || findings.problems() + failedAudits.length + unexpected.length > 0 || findings.eventsVerified === 0;
  console.log(failed ? 'FAILED' : 'PASSED');
  return failed ? 1 : 0;
}

console.log(`power-loss: ${cuts} cuts, ${cutsPerImage} per ${imageMiB} MiB ext4 image, MAX_RECORDS=${recordCap}, a reset about every ${resetEveryMs} ms, `
  + `seed ${seed}${sameBoot ? ', same boot' : ''}; work directory ${workDir}`);
let fatal: string | undefined;
try {
  for (let first = 1; first <= cuts; first += cutsPerImage) await imageLife(first, Math.min(cutsPerImage, cuts - first + 1));
} catch (err) {
  if (err instanceof LoopRefused && totals.cuts === 0) {
    console.error(`power-loss: cannot mount an ext4 image on a loop device here: ${err.message}`);
    process.exit(2);
  }
  fatal = err instanceof Fatal || err instanceof LoopRefused ? err.message : (err as Error).stack;
}
process.exit(summary(fatal));
