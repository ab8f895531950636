/**
 * `npm run disk-faults [-- --events N --reclaimed-events N --cleanup-events N --sample N --runs N --seed N --only TEXT --setup DIR --keep]`
 *
 * Disk faults on data folders of acknowledged events (docs/RELIABILITY.md, "Disk faults";
 * docs/STORAGE.md, "Damage in the log", "Two copies of every record", "The scrub", "A damaged
 * index"). The folders are made once each (fault-folders.ts), by the built store over HTTP:
 *
 * - the mixed folder: `--events` creates (1,000; every 5th with a 270 KB JPEG), a clean stop
 *   (SIGTERM: all of it checkpointed into LMDB; data.mdb is kept as it was then), a start with
 *   checkpoints 60 s to 5 min apart and cleanup hourly, as many creates again once its start-up
 *   cleanup has checkpointed, and SIGKILL: half the events are in the LMDB index, half only in
 *   the log, replayed at the next start;
 * - the reclaimed folder: `--reclaimed-events` creates (1,500, every 5th with the JPEG), then a
 *   storage limit whose cleanups delete the oldest images, so the first segment is compacted (its
 *   events' records copied forward as record copies) and deleted;
 * - the cleanup folder: `--cleanup-events` small events (16,000, about 1.1 KiB each, 8 in flight),
 *   then `POST /admin/cleanup`, and `--sample` of them (800) read back.
 *
 * Each fault is made on a fresh copy of its folder, `--runs` times (3) at seeded random offsets.
 * On the mixed folder (fault-injection.ts): in the log's segments a flipped byte, a zeroed 4 KiB
 * page, a lost 4 KiB page (reads as the zeros it held before the write), a cut at a random byte
 * and a missing segment; in db/data.mdb a flipped byte, a zeroed page, a lost page (reads as it
 * was at the clean stop; made on each page changed since, in turn) and a cut; in a block file
 * (docs/STORAGE.md, "Blocks") a flipped byte, a zeroed page and a cut, anywhere in it. The store is started
 * on the copy. Once its start-up cleanup has ended (its consistency pass drops file entries whose
 * bytes are missing or fail their CRC), every acknowledged event is read back (`GET
 * /v2/events/{id}`, 200 = readable), every image compared with the bytes sent (missing or
 * differing: corrupt), and /stats `log_damage` read (the events the replay names lost). A store
 * that refuses to start (a damaged index is refused with a message naming `edge-events check
 * --repair`), dies, or loses anything on a damaged data.mdb gets what an operator would do:
 * `edge-events check`, then `check --repair`, and a new start, read back the same way.
 *
 * Expected, and exit 1 otherwise (docs/RELIABILITY.md, "Disk faults"): a fault in a segment
 * loses or corrupts only events with a frame in the damaged bytes (past the cut; in the missing
 * segment), and a flipped byte or zeroed or lost page names every loss of the replayed part in
 * log_damage, but for an event whose record frame's header was hit (nothing names it) and the
 * active segment's torn tail; a damaged data.mdb or block loses nothing once `check --repair` has run,
 * and a refusal names it; no store and no check dies, by a signal or by itself; log_damage names
 * no readable event; the store deletes no segment file.
 *
 * The faults in the two copies of records (docs/STORAGE.md, "Two copies of every record"; copy-faults.ts draws them, copy-fault-runs.ts
 * runs them and says what each must give): a flipped byte, a zeroed page and a lost page in
 * checkpointed record frames of the mixed folder, found and mended by the running store's scrub
 * (SCRUB_PASS_HOURS set small); the same in a page of the index (data.mdb or a block file)
 * holding records of the reclaimed folder's events, then `check --repair`; both copies of different events, in the log and in the
 * index; and the cleanup folder's db/ removed, then `check --repair --without-sinks`. After each,
 * every event reads back as it read before the fault.
 *
 * Prints a line per run, a table per fault, the seed, the machine's load and the run time. The
 * folders, the store output of every run and a repeat command stay in the work directory when
 * anything failed (or with `--keep`): `--setup DIR --seed N --only TEXT` makes the same draws on
 * the same folders (a folder missing there is made first).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AckedEvents } from './lib/acked-events.js';
import { flagOption, numberOption, textOption } from './lib/args.js';
import { copyRunsOf, COPY_FAULT_KINDS, drawCopyFault, folderOf, type CopyFaultKind, type FolderName } from './lib/copy-faults.js';
import { runCopyFault, type CopyRun } from './lib/copy-fault-runs.js';
import { folder, type Folder } from './lib/fault-folders.js';
import { applyFault, drawFault, FAULT_KINDS, runsOf, type Fault, type FaultKind, type FaultLayout } from './lib/fault-injection.js';
import { copyFolder, diedText, exitText, n, runCheck, seconds, startAndRead, type Attempt, type CheckRun } from './lib/fault-store.js';
import { segmentFiles } from './lib/log-frames.js';
import { freshSeed, Random } from './lib/random.js';
import { printLoggedErrors } from './lib/store-log.js';

const eventsPerHalf = numberOption('events', 1000);
const runs = numberOption('runs', 3);
const seed = numberOption('seed', freshSeed());
const only = textOption('only');
const setupDir = textOption('setup');
const sizes = {
  mixedEvents: eventsPerHalf,
  reclaimedEvents: numberOption('reclaimed-events', 1500),
  cleanupEvents: numberOption('cleanup-events', 16_000),
  sample: numberOption('sample', 800),
  seed,
};
/** Settle time of a stop: SIGTERM, SIGKILL past it (fault-store.ts). */
const STOP_DEADLINE_MS = 30_000;
const CLEANUP_DEADLINE_MS = 120_000;

const started = performance.now();
const loads = [os.loadavg()[0]];
const workDir = setupDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'ees-disk-faults-'));
const acked = new AckedEvents();
const violations: string[] = [];
let keep = setupDir !== undefined || flagOption('keep');
/** The mixed folder (the older rows'): its undamaged data folder. */
let pristine = '';

/** One fault on one copy: the draw, what it touched, each start, each check, and what was wrong. */
interface FaultRun {
  fault: Fault | undefined;
  /** Events with a frame in the damaged bytes (the log's faults): all a fault may lose or corrupt. */
  touched: Set<string>;
  attempts: Attempt[];
  checks: CheckRun[];
  violations: string[];
  notes: string[];
}

/** The event ids of the part of the log after the index's position (replayed at a start). */
function replayedEvents(layout: FaultLayout): Set<string> {
  const replayed = new Set<string>();
  for (const frame of layout.frames.frames) {
    if (frame.kind !== 'record') continue;
    const covered = frame.segment < layout.position.segment || (frame.segment === layout.position.segment && frame.end <= layout.position.offset);
    if (!covered) replayed.add(frame.id);
  }
  return replayed;
}

/** What the store lost and corrupted on its last start. */
function lossOf(attempt: Attempt): { lost: string[]; corrupt: string[] } {
  const lost = [...acked.events.keys()].filter((id) => !attempt.readable.has(id));
  return { lost, corrupt: [...attempt.corrupt] };
}

/** `text` on one line, its last `chars` characters. */
function oneLine(text: string, chars: number): string {
  return text.replace(/\s+/g, ' ').slice(-chars);
}

/**
 * Segment files of the undamaged folder that the store deleted or cut on the copy, beyond what
 * the fault itself removed or cut (a store may cut a torn tail: docs/STORAGE.md, "Recovery").
 */
function removedByStore(copy: string, fault: Fault | undefined): { deleted: string[]; cut: string[] } {
  const now = new Map(segmentFiles(copy).map((s) => [s.segment, s.bytes]));
  const deleted: string[] = [];
  const cut: string[] = [];
  for (const { segment, file, bytes } of segmentFiles(pristine)) {
    const faulted = fault?.segment === segment;
    const expected = faulted && fault.kind === 'segment: truncated' ? fault.offset : bytes;
    const size = now.get(segment);
    if (size === undefined && !(faulted && fault.kind === 'segment: missing')) deleted.push(`${path.basename(file)} (${n(bytes)} bytes)`);
    else if (size !== undefined && size < expected) cut.push(`${path.basename(file)} from ${n(expected)} to ${n(size)} bytes`);
  }
  return { deleted, cut };
}

/** Runs one fault (or none, for the control run) on a fresh copy. */
async function runFault(fault: Fault | undefined, layout: FaultLayout, replayed: Set<string>, label: string): Promise<FaultRun> {
  // A folder of its own: two runs with the same --setup never share a copy.
  const copy = path.join(fs.mkdtempSync(path.join(workDir, 'run-')), 'data');
  copyFolder(pristine, copy);
  const run: FaultRun = { fault, touched: new Set(), attempts: [], checks: [], violations: [], notes: [] };
  const onIndex = fault !== undefined && fault.segment === undefined;
  if (fault) {
    applyFault(copy, fault);
    if (fault.segment !== undefined) run.touched = layout.frames.eventsIn(fault.segment, fault.offset, fault.offset + fault.length);
  }
  const violation = (line: string) => run.violations.push(line);
  const signalled = (what: string, exit: Attempt['startExit']) => {
    if (exit?.signal) violation(`${what} ${exitText(exit)}`);
  };

  const events = { events: [...acked.events.values()] };
  let attempt = await startAndRead(copy, events);
  run.attempts.push(attempt);
  const namesRepair = attempt.startExit !== undefined && attempt.output.includes('check --repair');
  const firstLoss = lossOf(attempt);
  const lostOnDamagedIndex = onIndex && attempt.startExit === undefined && firstLoss.lost.length + firstLoss.corrupt.length > 0;
  if (lostOnDamagedIndex) run.notes.push(`the store started on the damaged index and lost ${firstLoss.lost.length}, corrupted ${firstLoss.corrupt.length} events before any repair`);
  if (attempt.startExit || attempt.diedDuringReads || attempt.hung || lostOnDamagedIndex) {
    // As an operator would: the check first (what it says of the damage), then the repair.
    run.checks.push(await runCheck(copy, false), await runCheck(copy, true));
    attempt = await startAndRead(copy, events);
    run.attempts.push(attempt);
  }
  for (const [k, a] of run.attempts.entries()) {
    const which = k === 0 ? 'the store' : 'the store after check --repair';
    signalled(`${which} at start-up:`, a.startExit);
    if (a.diedDuringReads) violation(`${which} died while read: ${diedText(a)}`);
    if (a.hung) violation(`${which} stopped answering while read (a hang)`);
    signalled(`${which} at its stop (SIGTERM, SIGKILL after ${seconds(STOP_DEADLINE_MS)}):`, a.stopExit);
    const refusal = a.startExit && !a.startExit.signal;
    if (refusal && k === 0 && !namesRepair) violation(`the store refused to start (${exitText(a.startExit!)}) without naming check --repair: ${oneLine(a.output, 300)}`);
    if (!a.startExit && !a.diedDuringReads && !a.cleanupDone) violation(`${which}: its start-up cleanup did not end within ${seconds(CLEANUP_DEADLINE_MS)}`);
    if (refusal && k > 0) violation(`the store refused to start after check --repair (${exitText(a.startExit!)}): ${oneLine(a.output, 300)}`);
  }
  for (const [k, check] of run.checks.entries()) signalled(`edge-events check${k === 1 ? ' --repair' : ''}:`, check.exit);

  const { lost, corrupt } = lossOf(attempt);
  const beyond = [...lost, ...corrupt].filter((id) => !run.touched.has(id));
  if (beyond.length > 0) {
    violation(`${beyond.length} events lost or corrupt beyond the damaged frames${fault?.segment !== undefined ? ` (${run.touched.size} touched)` : ''}: ${beyond.slice(0, 5).join(' ')}`);
  }
  const falselyNamed = [...attempt.named].filter((id) => attempt.readable.has(id));
  if (falselyNamed.length > 0) violation(`log_damage names ${falselyNamed.length} events lost that are readable: ${falselyNamed.slice(0, 5).join(' ')}`);
  const unnamed = lost.filter((id) => replayed.has(id) && !attempt.named.has(id));
  const byteFault = fault !== undefined && /flipped byte|zeroed page|lost page/.test(fault.kind) && fault.segment !== undefined;
  if (byteFault && unnamed.length > 0) {
    // docs/STORAGE.md, "Damage in the log": a loss is named where a frame's header still says
    // it; a record frame whose header the damage hit names nothing, and the active segment's
    // torn tail is cut without a word.
    const damagedHeader = unnamed.filter((id) => layout.frames.headerIn(id, fault.segment!, fault.offset, fault.offset + fault.length));
    const lastSegment = layout.segments[layout.segments.length - 1].segment;
    const tornTail = fault.segment === lastSegment && !layout.frames.frameAfter(fault.segment!, fault.offset + fault.length);
    const unexplained = tornTail ? [] : unnamed.filter((id) => !damagedHeader.includes(id));
    if (unexplained.length > 0) violation(`${unexplained.length} events of the replayed part lost without being named in log_damage: ${unexplained.slice(0, 5).join(' ')}`);
    if (tornTail) run.notes.push(`${unnamed.length} lost unnamed as the active segment's torn tail`);
    else if (damagedHeader.length > 0) run.notes.push(`${damagedHeader.length} lost unnamed: their record frame's header was in the damaged bytes`);
  } else if (unnamed.length > 0) {
    run.notes.push(`${unnamed.length} events of the replayed part lost without being named in log_damage`);
  }
  const removed = removedByStore(copy, fault);
  if (removed.deleted.length > 0) violation(`the store deleted segment files of the log: ${removed.deleted.join(', ')}`);
  for (const cut of removed.cut) run.notes.push(`the store cut ${cut}`);
  printRun(label, run, lost, corrupt);
  // Each run's store output, kept with the work directory when a run fails (or with --keep).
  const log = path.join(workDir, 'logs', `${label.replace(/[^a-z0-9]+/gi, '-')}.log`);
  fs.mkdirSync(path.dirname(log), { recursive: true });
  fs.writeFileSync(log, run.attempts.map((a) => a.output).join('\n----- after check --repair -----\n'));
  if (run.violations.length > 0) {
    keep = true;
    console.log(`  store output: ${log}`);
    for (const a of run.attempts) printLoggedErrors(a.output);
    violations.push(...run.violations.map((v) => `${label}: ${v}`));
  }
  fs.rmSync(path.dirname(copy), { recursive: true, force: true });
  return run;
}

/** Prints one run: the fault, each start, each check, the outcome. */
function printRun(label: string, run: FaultRun, lost: string[], corrupt: string[]): void {
  const { fault } = run;
  console.log(`\n${label}${fault ? `: ${fault.target}` : ''}`);
  if (fault) {
    const what = fault.kind.endsWith('truncated') ? `cut at byte ${n(fault.offset)} (${n(fault.length)} bytes gone)`
      : fault.kind.endsWith('missing') ? `deleted (${n(fault.length)} bytes)`
        : `byte ${n(fault.offset)}${fault.length > 1 ? ` to ${n(fault.offset + fault.length)}` : ''}`;
    console.log(`  ${fault.file}: ${what}${fault.segment !== undefined ? `; frames of ${run.touched.size} events in the damaged bytes` : ''}`);
  }
  for (const [k, a] of run.attempts.entries()) {
    if (k > 0) {
      const [check, repair] = run.checks;
      console.log(`  edge-events check: ${exitText(check.exit)}, ${check.report?.check?.damage ? 'damage found' : 'no damage found'}${check.report?.check?.rebuild ? ` (${check.report.check.rebuild})` : ''}; `
        + `check --repair: ${exitText(repair.exit)} in ${seconds(repair.ms)}, ${repair.report?.repair ? `rebuilt, ${n(repair.report.repair.replayed)} events replayed` : 'no rebuild'}${repair.report ? '' : `: ${repair.stderr.slice(0, 300)}`}`);
    }
    if (a.startExit) {
      console.log(`  store did not start: ${exitText(a.startExit)}: ${a.output.replace(/\s+/g, ' ').slice(-400)}`);
      continue;
    }
    const lostHere = acked.events.size - a.readable.size;
    console.log(`  store started in ${n(Math.round(a.startMs))} ms; ${n(a.readable.size)} of ${n(acked.events.size)} readable (${lostHere} lost), ${a.corrupt.size} with a missing or differing image; `
      + `log_damage: ${a.ranges} ranges, ${a.eventsLost} events named; GET /v2/events/{id}: ${a.statuses}; images: ${a.images}; `
      + `${a.hung ? 'STOPPED ANSWERING while read; ' : ''}${a.diedDuringReads ? `DIED while read (${exitText(a.diedDuringReads)})` : `stopped: ${exitText(a.stopExit!)}`}`);
  }
  console.log(`  lost ${lost.length}, corrupt ${corrupt.length}; ${run.violations.length === 0 ? 'as expected' : 'NOT AS EXPECTED'}`);
  for (const note of run.notes) console.log(`  note: ${note}`);
  for (const v of run.violations) console.log(`  VIOLATION: ${v}`);
}

/** Totals of one fault kind over its runs, for the table. */
interface KindTotals {
  runs: number;
  acknowledged: number;
  readable: number;
  named: number;
  lost: number;
  corrupt: number;
  repaired: number;
  violations: number;
}

function printTable(totals: Map<string, KindTotals>): void {
  console.log('\n| fault | runs | events acknowledged | readable after | quarantined (named lost in log_damage) | lost | image missing or differing | store refused, check --repair run | runs not as expected |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const [kind, t] of totals) {
    console.log(`| ${kind} | ${t.runs} | ${n(t.acknowledged)} | ${n(t.readable)} | ${n(t.named)} | ${n(t.lost)} | ${n(t.corrupt)} | ${t.repaired} | ${t.violations} |`);
  }
}

/** Runs the older rows (FAULT_KINDS, and the control run) on the mixed folder. */
async function runMixedKinds(mixed: Folder, totals: Map<string, KindTotals>): Promise<void> {
  const { layout } = mixed;
  pristine = mixed.data;
  for (const event of mixed.events) acked.add(event);
  const replayed = replayedEvents(layout);
  console.log(`mixed data folder: ${n(acked.events.size)} events acknowledged, ${n(acked.events.size - replayed.size)} in the index, ${n(replayed.size)} only in the log `
    + `(position: segment ${layout.position.segment}, byte ${n(layout.position.offset)}); segments ${layout.segments.map((s) => `${s.segment} (${n(s.bytes)} bytes)`).join(', ')}; `
    + `data.mdb ${n(layout.index.length)} bytes, pages of ${n(layout.indexPageSize)}`);
  const kinds: (FaultKind | 'none (control)')[] = ['none (control)', ...FAULT_KINDS];
  for (const [k, kind] of kinds.entries()) {
    if (only && !kind.includes(only)) continue;
    for (let r = 0; r < (kind === 'none (control)' ? 1 : runsOf(kind, layout, runs)); r++) {
      // One generator per run, so that --only repeats a run's draw.
      const rng = new Random((seed + k * 7919 + r * 104729) >>> 0);
      const fault = kind === 'none (control)' ? undefined : drawFault(kind, r, layout, rng);
      const run = await runFault(fault, layout, replayed, `${kind} #${r + 1}`);
      loads.push(os.loadavg()[0]);
      const last = run.attempts[run.attempts.length - 1];
      const t = totals.get(kind) ?? { runs: 0, acknowledged: 0, readable: 0, named: 0, lost: 0, corrupt: 0, repaired: 0, violations: 0 };
      t.runs++;
      t.acknowledged += acked.events.size;
      t.readable += last.readable.size;
      t.named += last.eventsLost;
      t.lost += acked.events.size - last.readable.size;
      t.corrupt += last.corrupt.size;
      t.repaired += run.checks.length > 0 ? 1 : 0;
      t.violations += run.violations.length > 0 ? 1 : 0;
      totals.set(kind, t);
    }
  }
}

/** Totals of one kind of the two copies' faults over its runs, for their table. */
interface CopyTotals {
  runs: number;
  read: number;
  readable: number;
  lost: number;
  corrupt: number;
  filesGone: number;
  hitLog: number;
  hitIndex: number;
  filesHit: number;
  scrubRepaired: number;
  scrubUnrepairable: number;
  repairs: number;
  salvaged: number;
  namedLost: number;
  violations: number;
}

/** Prints the description line of a folder made after a cleanup. */
function describeFolder(f: Folder): void {
  const copies = f.check.indexAgainstLog;
  console.log(`${f.name} data folder: ${n(f.acknowledged)} events acknowledged${f.events.length < f.acknowledged ? ` (${n(f.events.length)} of them read back)` : ''}; `
    + `log: ${f.check.log.segments} segments, ${n(f.check.log.bytes)} bytes, ${n(f.check.log.records)} record frames, ${n(f.check.log.copies)} record copies, ${n(f.check.log.fileFrames)} file frames; `
    + `data.mdb ${n(f.layout.index.length)} bytes; copies: ${copies ? `${n(copies.bothCopies)} events in both, ${n(copies.indexOnly)} in the index alone` : '?'}; `
    + `${n(f.layout.recordPages.length)} leaf pages of records in data.mdb, ${n(f.layout.blockPages.length)} pages of records in blocks`);
}

/** Runs the two copies' rows (COPY_FAULT_KINDS), each on its folder. */
async function runCopyKinds(folders: Map<FolderName, Folder>, totals: Map<string, CopyTotals>): Promise<void> {
  for (const [k, kind] of COPY_FAULT_KINDS.entries()) {
    if (only && !kind.includes(only)) continue;
    const f = folders.get(folderOf(kind))!;
    for (let r = 0; r < copyRunsOf(kind, runs); r++) {
      const rng = new Random((seed + (FAULT_KINDS.length + 1 + k) * 7919 + r * 104729) >>> 0);
      const run = await runCopyFault(drawCopyFault(kind, r, f.layout, rng), f, workDir, `${kind} #${r + 1}`);
      loads.push(os.loadavg()[0]);
      addCopyRun(totals, kind, run, f);
      if (run.violations.length > 0) {
        keep = true;
        for (const a of run.attempts) printLoggedErrors(a.output);
        violations.push(...run.violations.map((v) => `${kind} #${r + 1}: ${v}`));
      }
    }
  }
}

function addCopyRun(totals: Map<string, CopyTotals>, kind: CopyFaultKind, run: CopyRun, f: Folder): void {
  const last = run.attempts[run.attempts.length - 1];
  const t = totals.get(kind) ?? { runs: 0, read: 0, readable: 0, lost: 0, corrupt: 0, filesGone: 0, hitLog: 0, hitIndex: 0, filesHit: 0, scrubRepaired: 0, scrubUnrepairable: 0, repairs: 0, salvaged: 0, namedLost: 0, violations: 0 };
  t.runs++;
  t.read += f.events.length;
  t.readable += last.readable.size;
  t.lost += f.events.length - last.readable.size;
  t.corrupt += run.notAsBefore;
  t.filesGone += run.filesGone;
  t.hitLog += run.fault.logHit.size;
  t.hitIndex += run.fault.indexHit.size;
  t.filesHit += run.fault.filesHit.size;
  t.scrubRepaired += run.attempts[0].scrub?.repaired ?? 0;
  t.scrubUnrepairable += run.attempts[0].scrub?.unrepairable ?? 0;
  const repair = run.checks.find((c) => c.repair)?.report?.repair;
  if (repair) {
    t.repairs++;
    t.salvaged += repair.salvaged;
    t.namedLost += repair.lost.length;
  }
  t.violations += run.violations.length > 0 ? 1 : 0;
  totals.set(kind, t);
}

function printCopyTable(totals: Map<string, CopyTotals>): void {
  if (totals.size === 0) return;
  console.log('\n| fault | runs | events hit: log copy, index copy | events read back | readable after | lost | JSON or image not as before | images hit, gone (one copy) | scrub findings: repaired, unrepairable | check --repair rebuilt: runs, records salvaged, events named lost | runs not as expected |');
  console.log('|---|---|---|---|---|---|---|---|---|---|---|');
  for (const [kind, t] of totals) {
    console.log(`| ${kind} | ${t.runs} | ${n(t.hitLog)}, ${n(t.hitIndex)} | ${n(t.read)} | ${n(t.readable)} | ${n(t.lost)} | ${n(t.corrupt)} | ${n(t.filesHit)}, ${n(t.filesGone)} | ${t.scrubRepaired}, ${t.scrubUnrepairable} | ${t.repairs}, ${n(t.salvaged)}, ${n(t.namedLost)} | ${t.violations} |`);
  }
}

console.log(`disk-faults: seed ${seed}, ${runs} runs per fault, work directory ${workDir}`);
let fatal: string | undefined;
const totals = new Map<string, KindTotals>();
const copyTotals = new Map<string, CopyTotals>();
try {
  const wanted = new Set<FolderName>();
  if (!only || [...FAULT_KINDS, 'none (control)'].some((kind) => kind.includes(only))) wanted.add('mixed');
  for (const kind of COPY_FAULT_KINDS) if (!only || kind.includes(only)) wanted.add(folderOf(kind));
  const folders = new Map<FolderName, Folder>();
  for (const name of ['mixed', 'reclaimed', 'cleanup'] as const) if (wanted.has(name)) folders.set(name, await folder(workDir, name, sizes));
  console.log(`set up in ${seconds(performance.now() - started)}`);
  for (const f of folders.values()) if (f.name !== 'mixed') describeFolder(f);
  if (folders.has('mixed')) await runMixedKinds(folders.get('mixed')!, totals);
  await runCopyKinds(folders, copyTotals);
} catch (err) {
  fatal = (err as Error).stack;
  keep = true;
}
printTable(totals);
printCopyTable(copyTotals);
const load = os.loadavg();
console.log(`\nseed ${seed}; run time ${seconds(performance.now() - started)}; load average ${loads[0].toFixed(2)} at the start, ${load.map((l) => l.toFixed(2)).join(' ')} at the end, `
  + `max ${Math.max(...loads).toFixed(2)} after a run (${os.cpus().length} cores)`);
if (fatal) console.log(`FATAL: ${fatal}`);
for (const v of violations) console.log(`VIOLATION: ${v}`);
if (keep) console.log(`work directory kept: ${workDir} (repeat with --setup ${workDir} --seed ${seed} [--only TEXT])`);
else fs.rmSync(workDir, { recursive: true, force: true });
const failed = fatal !== undefined || violations.length > 0;
console.log(failed ? 'disk-faults: FAILED' : 'disk-faults: PASSED');
process.exit(failed ? 1 : 0);
