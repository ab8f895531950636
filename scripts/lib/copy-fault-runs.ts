/**
 * One run of a fault in the two copies of events' records (copy-faults.ts) on a fresh copy of its
 * data folder, what the store, its scrub and `edge-events check --repair` made of it, and whether
 * that is what docs/RELIABILITY.md, "Disk faults", expects:
 *
 * - `log copy` (checkpointed record frames): the store runs with the scrub set small
 *   (SCRUB_SETTINGS) and finishes a pass; every event reads back; the scrub names each event whose
 *   record frame the damage hit as repaired (`log_copy`), and nothing unrepairable but files (an
 *   image whose bytes the page held has one copy: it may be gone, 404, never served wrong); after
 *   the stop, `edge-events check` counts every event in both copies again (none in the index alone).
 * - `index copy after a cleanup`, `both copies`, `db/ lost after a cleanup`: the store runs on the
 *   damaged copy (the scrub set small, for the two first: what it names is noted), then as an
 *   operator would, `edge-events check` and `check --repair --without-sinks`, then the store
 *   again, with the scrub set small: every event reads back with the JSON it had before the
 *   fault (a file a cleanup had deleted may be back, as docs/STORAGE.md, "What a rebuild
 *   restores", says) and its images' bytes, the repair names no event lost, and a whole pass of
 *   the scrub finds nothing. The lost index is refused at the first start, naming `check --repair`.
 *
 * In every run no store and no check may die by a signal, and no store may hang.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { CopyFault } from './copy-faults.js';
import { applyFault } from './fault-injection.js';
import type { Folder } from './fault-folders.js';
import { diedText, exitText, n, runCheck, SCRUB_DEADLINE_MS, SCRUB_SETTINGS, seconds, startAndRead, copyFolder, type Attempt, type CheckRun } from './fault-store.js';

/** How long the runs on a damaged index wait for the scrub's pass before reading (it may not end: the damage can stop its steps). */
const SCRUB_ON_DAMAGED_INDEX_MS = 45_000;

/** One run: the draw, each start, each check, what was wrong and what was noticed. */
export interface CopyRun {
  fault: CopyFault;
  attempts: Attempt[];
  checks: CheckRun[];
  violations: string[];
  notes: string[];
  /** On the last start: events whose JSON or an image is not as before, but for images the damage hit that are gone (404); those images. */
  notAsBefore: number;
  filesGone: number;
}

/** Fills `run.notAsBefore` and `run.filesGone` from its last start. */
function tally(run: CopyRun, folder: Folder): void {
  const last = run.attempts[run.attempts.length - 1];
  const goneOk = (fileId: string) => run.fault.filesHit.has(fileId) && last.imageOutcomes.get(fileId) === 'missing';
  run.filesGone = [...run.fault.filesHit].filter(goneOk).length;
  run.notAsBefore = folder.events.filter((e) => last.differing.has(e.id) || e.images.some((i) => last.imageOutcomes.has(i.fileId) && last.imageOutcomes.get(i.fileId) !== 'ok' && !goneOk(i.fileId))).length;
}

/** The scrub's findings in `attempt`: ids named repaired in the log, and how many unrepairable. */
function scrubFindings(attempt: Attempt): { repaired: Set<string>; indexNamed: Set<string>; unrepairable: number } {
  const repaired = new Set<string>();
  const indexNamed = new Set<string>();
  for (const finding of attempt.scrub?.recent ?? []) {
    if (finding.copy === 'log_copy' && finding.repaired) for (const id of finding.event_ids) repaired.add(id);
    if (finding.copy === 'index_copy') for (const id of finding.event_ids) indexNamed.add(id);
  }
  return { repaired, indexNamed, unrepairable: attempt.scrub?.unrepairable ?? 0 };
}

/** The events of `folder` a start did not give back whole. */
function lossOf(attempt: Attempt, folder: Folder): { lost: string[]; corrupt: string[] } {
  return { lost: folder.events.map((e) => e.id).filter((id) => !attempt.readable.has(id)), corrupt: [...attempt.corrupt] };
}

/** What every start must do whatever the fault: end by no signal, answer, and end its start-up cleanup. */
function startViolations(attempt: Attempt, which: string, violation: (line: string) => void): void {
  if (attempt.startExit?.signal) violation(`${which} at start-up: ${exitText(attempt.startExit)}`);
  if (attempt.diedDuringReads) violation(`${which} died while read: ${diedText(attempt)}`);
  if (attempt.hung) violation(`${which} stopped answering while read (a hang)`);
  if (attempt.stopExit?.signal) violation(`${which} at its stop: ${exitText(attempt.stopExit)}`);
  if (!attempt.startExit && !attempt.diedDuringReads && !attempt.cleanupDone) violation(`${which}: its start-up cleanup did not end`);
}

/** The scrub's pass on the damaged log: found, mended, told. */
async function scrubRun(run: CopyRun, copy: string, folder: Folder): Promise<void> {
  const violation = (line: string) => run.violations.push(line);
  const attempt = await startAndRead(copy, { events: folder.events, bodies: folder.bodies, env: SCRUB_SETTINGS, scrubPassMs: SCRUB_DEADLINE_MS });
  run.attempts.push(attempt);
  startViolations(attempt, 'the store', violation);
  if (attempt.startExit) violation(`the store refused to start (${exitText(attempt.startExit)})`);
  if (!attempt.startExit && !attempt.scrubPassed) violation(`the scrub did not end a pass within ${seconds(SCRUB_DEADLINE_MS)}`);
  const { repaired } = scrubFindings(attempt);
  const unnamed = [...run.fault.logHit].filter((id) => !repaired.has(id));
  if (unnamed.length > 0) violation(`${unnamed.length} of the ${run.fault.logHit.size} events whose log copy was hit are not named repaired by the scrub: ${unnamed.slice(0, 5).join(' ')}`);
  // A file has one copy: one the damage hit may be gone (404, named by the scrub or dropped by the
  // consistency pass), never served wrong; every other image, and every event, as before.
  const filesNamed = new Set((attempt.scrub?.recent ?? []).filter((f: any) => f.copy === 'file').map((f: any) => f.file_id));
  const otherUnrepairable = (attempt.scrub?.recent ?? []).filter((f: any) => !f.repaired && f.copy !== 'file');
  if (otherUnrepairable.length > 0) violation(`the scrub names ${otherUnrepairable.length} unrepairable findings besides files: ${otherUnrepairable.map((f: any) => f.detail).slice(0, 2).join('; ')}`);
  const wrong = [...attempt.imageOutcomes].filter(([fileId, outcome]) => outcome !== 'ok' && !(run.fault.filesHit.has(fileId) && outcome === 'missing'));
  if (wrong.length > 0) violation(`${wrong.length} images not as sent beyond the hit ones gone: ${wrong.slice(0, 5).map(([id, o]) => `${id} ${o}`).join(', ')}`);
  const { lost } = lossOf(attempt, folder);
  if (lost.length > 0 || attempt.differing.size > 0) violation(`${lost.length} events not readable, ${attempt.differing.size} with JSON not as before: ${[...lost, ...attempt.differing].slice(0, 5).join(' ')}`);
  const gone = [...run.fault.filesHit].filter((id) => attempt.imageOutcomes.get(id) === 'missing');
  if (run.fault.filesHit.size > 0) run.notes.push(`${run.fault.filesHit.size} images hit (one copy): ${gone.length} gone (404), ${[...run.fault.filesHit].filter((id) => filesNamed.has(id)).length} named by the scrub`);
  const beyond = [...repaired].filter((id) => !run.fault.logHit.has(id));
  if (beyond.length > 0) run.notes.push(`the scrub also rewrote ${beyond.length} events whose frames the fault did not hit: ${beyond.slice(0, 5).join(' ')}`);
  const check = await runCheck(copy, false);
  run.checks.push(check);
  const copies = check.report?.check.indexAgainstLog;
  if (check.exit.signal) violation(`edge-events check: ${exitText(check.exit)}`);
  if (!copies || copies.indexOnly !== 0 || copies.bothCopies !== folder.acknowledged) {
    violation(`after the scrub, edge-events check counts ${copies ? `${n(copies.bothCopies)} events in both copies and ${n(copies.indexOnly)} in the index alone` : 'nothing (the index did not open)'}, not all ${n(folder.acknowledged)} in both`);
  }
}

/** A start on the damaged copy, then `check` and `check --repair`, then a start on the repaired one. */
async function repairRun(run: CopyRun, copy: string, folder: Folder): Promise<void> {
  const violation = (line: string) => run.violations.push(line);
  const withScrub = run.fault.kind !== 'db/ lost after a cleanup';
  const first = await startAndRead(copy, { events: folder.events, bodies: folder.bodies, env: withScrub ? SCRUB_SETTINGS : {}, scrubPassMs: withScrub ? SCRUB_ON_DAMAGED_INDEX_MS : undefined });
  run.attempts.push(first);
  startViolations(first, 'the store on the damaged copy', violation);
  if (run.fault.kind === 'db/ lost after a cleanup' && !(first.startExit && first.output.includes('check --repair'))) {
    violation(`the store ${first.startExit ? `refused to start (${exitText(first.startExit)}) without naming check --repair` : 'started on a folder without its index'}`);
  }
  run.checks.push(await runCheck(copy, false), await runCheck(copy, true));
  for (const check of run.checks) if (check.exit.signal) violation(`edge-events check${check.repair ? ' --repair' : ''}: ${exitText(check.exit)}`);
  const repair = run.checks[1].report?.repair;
  if (repair && (repair.lost.length > 0 || repair.salvageIncomplete)) violation(`check --repair names ${repair.lost.length} events lost${repair.salvageIncomplete ? ', and could not read the former index to its end' : ''}: ${repair.lost.slice(0, 5).join(' ')}`);
  if (!run.checks[1].report) violation(`check --repair gave no report (${exitText(run.checks[1].exit)}): ${run.checks[1].stderr.slice(0, 300)}`);
  // The repaired folder: every event as before, and a whole pass of the scrub finds nothing left to mend.
  const after = await startAndRead(copy, { events: folder.events, bodies: folder.bodies, env: SCRUB_SETTINGS, scrubPassMs: SCRUB_DEADLINE_MS });
  run.attempts.push(after);
  startViolations(after, 'the store after check --repair', violation);
  if (after.startExit) violation(`the store refused to start after check --repair (${exitText(after.startExit)}): ${after.output.replace(/\s+/g, ' ').slice(-300)}`);
  else if (!after.scrubPassed) violation(`after check --repair, the scrub did not end a pass within ${seconds(SCRUB_DEADLINE_MS)}`);
  else if (after.scrub?.damaged > 0) violation(`after check --repair, a pass of the scrub still finds ${after.scrub.damaged} damaged: ${(after.scrub.recent ?? []).map((f: any) => `${f.copy} ${f.event_ids.join(' ')}: ${f.detail}`).slice(0, 2).join('; ')}`);
  const { lost, corrupt } = lossOf(after, folder);
  if (lost.length + corrupt.length > 0) violation(`after check --repair ${lost.length} events lost, ${corrupt.length} with their JSON or an image not as before (${after.differing.size} JSON): ${[...lost, ...corrupt].slice(0, 5).join(' ')}`);
  if (after.filesBack.size > 0) run.notes.push(`after check --repair, ${after.filesBack.size} events have a file back that a storage cleanup had deleted, as docs/STORAGE.md, "What a rebuild restores", says (their JSON otherwise as before)`);
  if (after.firstDifference) run.notes.push(`after check --repair, the first JSON not as before: ${after.firstDifference}`);
  const before = lossOf(first, folder);
  if (!first.startExit && before.lost.length + before.corrupt.length > 0) {
    run.notes.push(`the store on the damaged copy, before the repair: ${before.lost.length} not readable, ${before.corrupt.length} not as before (${first.differing.size} JSON)${first.firstDifference ? `; the first: ${first.firstDifference}` : ''}`);
  }
  const { repaired, indexNamed, unrepairable } = scrubFindings(first);
  if (withScrub && !first.startExit) {
    run.notes.push(`its scrub ${first.scrubPassed ? 'ended a pass' : `did not end a pass within ${seconds(SCRUB_ON_DAMAGED_INDEX_MS)}`}: ${repaired.size} events' log copies repaired${run.fault.logHit.size > 0 ? ` (${[...run.fault.logHit].filter((id) => repaired.has(id)).length} of the ${run.fault.logHit.size} hit)` : ''}, `
      + `${indexNamed.size} index copies named (${[...run.fault.indexHit].filter((id) => indexNamed.has(id)).length} of the ${run.fault.indexHit.size} hit), ${unrepairable} unrepairable; /health ${first.health ?? '?'}, index_damage ${JSON.stringify(first.indexDamage ?? null)}`);
  }
}

/** Runs `fault` on a fresh copy of `folder` under `workDir`, and prints it. */
export async function runCopyFault(fault: CopyFault, folder: Folder, workDir: string, label: string): Promise<CopyRun> {
  const copy = path.join(fs.mkdtempSync(path.join(workDir, 'run-')), 'data');
  copyFolder(folder.data, copy);
  for (const f of fault.faults) applyFault(copy, f);
  const run: CopyRun = { fault, attempts: [], checks: [], violations: [], notes: [], notAsBefore: 0, filesGone: 0 };
  if (fault.kind.startsWith('log copy')) await scrubRun(run, copy, folder);
  else await repairRun(run, copy, folder);
  tally(run, folder);
  printCopyRun(label, run, folder);
  const log = path.join(workDir, 'logs', `${label.replace(/[^a-z0-9]+/gi, '-')}.log`);
  fs.mkdirSync(path.dirname(log), { recursive: true });
  fs.writeFileSync(log, run.attempts.map((a) => a.output).join('\n----- next start -----\n'));
  if (run.violations.length > 0) console.log(`  store output: ${log}`);
  fs.rmSync(path.dirname(copy), { recursive: true, force: true });
  return run;
}

/** Prints one run: the draw, each start, each check, the outcome. */
function printCopyRun(label: string, run: CopyRun, folder: Folder): void {
  console.log(`\n${label}: ${run.fault.target}`);
  console.log(`  events hit: ${run.fault.logHit.size} in the log, ${run.fault.indexHit.size} in the index; images hit: ${run.fault.filesHit.size}`);
  const describeAttempt = (a: Attempt, which: string) => {
    if (a.startExit) return console.log(`  ${which}: did not start: ${exitText(a.startExit)}: ${a.output.replace(/\s+/g, ' ').slice(-300)}`);
    const { lost, corrupt } = lossOf(a, folder);
    console.log(`  ${which}: started in ${n(Math.round(a.startMs))} ms; ${n(a.readable.size)} of ${n(folder.events.length)} readable (${lost.length} lost), ${corrupt.length} not as before (${a.differing.size} JSON); `
      + `scrub: ${a.scrub ? `${a.scrub.passes} passes, ${a.scrub.repaired} repaired, ${a.scrub.unrepairable} unrepairable` : '?'}; GET /v2/events/{id}: ${a.statuses}; images: ${a.images}; `
      + `${a.diedDuringReads ? `DIED while read (${exitText(a.diedDuringReads)})` : `stopped: ${a.stopExit ? exitText(a.stopExit) : '?'}`}`);
  };
  describeAttempt(run.attempts[0], 'store');
  for (const check of run.checks) {
    const report = check.report;
    const copies = report?.check.indexAgainstLog;
    const repair = report?.repair;
    console.log(`  edge-events check${check.repair ? ' --repair' : ''}: ${exitText(check.exit)} in ${seconds(check.ms)}; ${report?.check.damage ? 'damage found' : 'no damage found'}${report?.check.rebuild ? ` (${report.check.rebuild})` : ''}`
      + `${copies ? `; copies: ${n(copies.bothCopies)} in both, ${n(copies.indexOnly)} in the index alone` : ''}`
      + `${check.repair ? `; ${repair ? `rebuilt: ${n(repair.replayed)} replayed, ${n(repair.salvaged)} salvaged, ${repair.lost.length} named lost` : 'no rebuild'}${(report as any)?.copies ? `; record copies written back: ${JSON.stringify((report as any).copies).slice(0, 120)}` : ''}` : ''}`
      + `${report ? '' : `: ${check.stderr.slice(0, 300)}`}`);
  }
  if (run.attempts[1]) describeAttempt(run.attempts[1], 'store after check --repair');
  console.log(`  ${run.violations.length === 0 ? 'as expected' : 'NOT AS EXPECTED'}`);
  for (const note of run.notes) console.log(`  note: ${note}`);
  for (const v of run.violations) console.log(`  VIOLATION: ${v}`);
}
