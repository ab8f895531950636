/**
 * `npm run disk-faults [-- --events N --runs N --seed N --only TEXT --setup DIR --keep]`
 *
 * Disk faults on a data folder of acknowledged events (docs/RELIABILITY.md, "Disk faults";
 * docs/STORAGE.md, "Damage in the log"). The folder is made once: the built store on a new
 * DATA_DIR takes `--events` creates (1,000; every 5th with a 270 KB JPEG) and is stopped cleanly
 * (SIGTERM: all of it checkpointed into LMDB; data.mdb is kept as it was then), started again
 * with checkpoints 60 s to 5 min apart and cleanup hourly, takes as many creates again once its
 * start-up cleanup has checkpointed, and is killed (SIGKILL): half the events are in the LMDB
 * index, half only in the log, replayed at the next start.
 *
 * Each fault (fault-injection.ts) is made on a fresh copy of that folder, `--runs` times (3) at
 * seeded random offsets: in the log's segments a flipped byte, a zeroed 4 KiB page, a lost 4 KiB
 * page (reads as the zeros it held before the write), a cut at a random byte and a missing
 * segment; in db/data.mdb a flipped byte, a zeroed page, a lost page (reads as it was at the
 * clean stop; made on each page changed since, in turn) and a cut. The store is started on the copy. Once its start-up cleanup has ended (its
 * consistency pass drops file entries whose bytes are missing or fail their CRC), every
 * acknowledged event is read back (`GET /v2/events/{id}`, 200 = readable), every image compared
 * with the bytes sent (missing or differing: corrupt), and /stats `log_damage` read (the events
 * the replay names lost). A store that refuses to start (a damaged index is refused with a
 * message naming `edge-events check --repair`), dies, or loses anything on a damaged data.mdb
 * gets what an operator would do: `edge-events check`, then `check --repair`, and a new start,
 * read back the same way.
 *
 * Expected, and exit 1 otherwise (docs/RELIABILITY.md, "Disk faults"): a fault in a segment
 * loses or corrupts only events with a frame in the damaged bytes (past the cut; in the missing
 * segment), and a flipped byte or zeroed or lost page names every loss of the replayed part in
 * log_damage, but for an event whose record frame's header was hit (nothing names it) and the
 * active segment's torn tail; a damaged data.mdb loses nothing once `check --repair` has run,
 * and a refusal names it; no store and no check dies, by a signal or by itself; log_damage names
 * no readable event; the store deletes no segment file. Prints a line per run, a table per
 * fault, the seed, the machine's load and the run time. The folder, the store output of every
 * run and a repeat command stay in the work directory when anything failed (or with `--keep`):
 * `--setup DIR --seed N --only TEXT` makes the same draws on the same folder.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AckedEvents, type AckedEvent } from './lib/acked-events.js';
import { flagOption, numberOption, textOption } from './lib/args.js';
import { eventBody } from './lib/disk-fill.js';
import { applyFault, drawFault, FAULT_KINDS, runsOf, type Fault, type FaultKind, type FaultLayout } from './lib/fault-injection.js';
import { fixture } from './lib/fixtures.js';
import { StoreClient } from './lib/http-client.js';
import { FrameMap, readLogFrames, segmentFiles } from './lib/log-frames.js';
import { freshSeed, Random } from './lib/random.js';
import { cliPath } from './lib/spawned-store.js';
import { failureOutcome, StatusTally } from './lib/status-tally.js';
import { printLoggedErrors } from './lib/store-log.js';
import { launchStore, StoreNotStarted, type Exit, type StoreProcess } from './lib/store-process.js';
import { checkFile, mapParallel } from './lib/store-reads.js';
import type { CheckReport, RebuildReport } from '../src/store/engine/check-report.js';

const eventsPerHalf = numberOption('events', 1000);
const runs = numberOption('runs', 3);
const seed = numberOption('seed', freshSeed());
const only = textOption('only');
const setupDir = textOption('setup');
const WRITERS = 4;
const READERS = 8;
const IMAGE = 'retina.jpg';
/** The second life of the folder: no checkpoint and no cleanup of its own after the start-up one, so its creates stay in the log alone. */
const SECOND_LIFE = { INDEX_CHECKPOINT_MS: '60000', INDEX_CHECKPOINT_MAX_MS: '300000', CLEANUP_INTERVAL_SECONDS: '3600' };
const STOP_DEADLINE_MS = 30_000;
/** Deadline of a probe (`/health`, `/stats` while waiting for the start-up cleanup). */
const PROBE_DEADLINE_MS = 5_000;
const CLEANUP_DEADLINE_MS = 120_000;
const CHECK_DEADLINE_MS = 600_000;

const started = performance.now();
const loads = [os.loadavg()[0]];
const workDir = setupDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'ees-disk-faults-'));
const pristine = path.join(workDir, 'data');
const acked = new AckedEvents();
const violations: string[] = [];
let keep = setupDir !== undefined || flagOption('keep');

const n = (value: number) => value.toLocaleString('en-US');
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const exitText = (exit: Exit) => (exit.signal ? `killed by ${exit.signal}` : `exit ${exit.code}`);

/** Stops `store` with SIGTERM, or SIGKILL past STOP_DEADLINE_MS. */
async function stopStore(store: StoreProcess): Promise<Exit> {
  const timer = setTimeout(() => store.signal('SIGKILL'), STOP_DEADLINE_MS);
  const exit = await store.kill('SIGTERM');
  clearTimeout(timer);
  return exit;
}

/**
 * Waits until the store's start-up cleanup has ended (/stats `last_cleanup` set): its checkpoint
 * commits what the start replayed, and its consistency pass drops file entries whose bytes are
 * missing or fail their CRC (docs/OPERATIONS.md, "Keeping the disk bounded").
 * @returns false when CLEANUP_DEADLINE_MS passed first or the store ended
 */
async function startUpCleanupDone(client: StoreClient, store: StoreProcess): Promise<boolean> {
  for (const deadline = performance.now() + CLEANUP_DEADLINE_MS; performance.now() < deadline && !store.hasExited(); await sleep(200)) {
    const answer = await client.request('GET', '/stats', { timeoutMs: PROBE_DEADLINE_MS }).catch(() => undefined);
    if (answer?.status === 200 && answer.json().last_cleanup !== null) return true;
  }
  return false;
}

/** Creates `count` events with WRITERS writers, every 5th with IMAGE; each must be acknowledged. @throws Error on any other answer */
async function createEvents(client: StoreClient, count: number): Promise<void> {
  let next = 0;
  const writer = async () => {
    while (next < count) {
      const k = next++;
      const images = k % 5 === 0 ? [IMAGE] : [];
      const answer = await client.request('POST', '/v2/events', { json: eventBody(images, 'disk-faults') });
      if (answer.status !== 201) throw new Error(`create ${k} answered ${answer.status}: ${answer.bytes.toString('utf8', 0, 300)}`);
      const body = answer.json();
      acked.add({ id: body.id, createdAt: body.created_at, images: body.image_ids.map((fileId: string, i: number) => ({ fileId, fixture: images[i] })) });
    }
  };
  await Promise.all(Array.from({ length: WRITERS }, writer));
}

/** What the setup leaves beside the folder, for `--setup` to run the faults on it again. */
interface SetupFile {
  events: AckedEvent[];
  segmentBytesAtCleanStop: [number, number][];
}

/** Builds the data folder (see the module's comment) in `pristine`, data.mdb of the clean stop in `clean-stop.mdb`. */
async function setUp(): Promise<void> {
  fs.mkdirSync(pristine);
  let store = await launchStore({ DATA_DIR: pristine });
  let client = new StoreClient(store.url, 60_000);
  await createEvents(client, eventsPerHalf);
  const stopped = await stopStore(store);
  if (stopped.code !== 0) throw new Error(`the clean stop ended with ${exitText(stopped)}: ${store.output().slice(-2000)}`);
  fs.copyFileSync(path.join(pristine, 'db', 'data.mdb'), path.join(workDir, 'clean-stop.mdb'));
  const atStop = segmentFiles(pristine).map((s) => [s.segment, s.bytes] as [number, number]);
  store = await launchStore({ DATA_DIR: pristine, ...SECOND_LIFE });
  client = new StoreClient(store.url, 60_000);
  if (!(await startUpCleanupDone(client, store))) throw new Error(`the start-up cleanup did not end within ${seconds(CLEANUP_DEADLINE_MS)}`);
  await createEvents(client, eventsPerHalf);
  await store.kill('SIGKILL');
  const setup: SetupFile = { events: [...acked.events.values()], segmentBytesAtCleanStop: atStop };
  fs.writeFileSync(path.join(workDir, 'setup.json'), JSON.stringify(setup));
}

/** `edge-events check --json`'s output (src/check/check-command.ts). */
interface CheckJson {
  check: CheckReport;
  repair: RebuildReport | null;
  recheck: CheckReport | null;
}

/** How `edge-events check` ended, with its JSON report when it gave one. */
interface CheckRun {
  exit: Exit;
  report: CheckJson | undefined;
  stderr: string;
  ms: number;
}

/**
 * Runs `edge-events check --json [--repair --without-sinks]` on `dataDir` (docs/OPERATIONS.md,
 * "Checking and repairing a data folder"): the harness's stores ship to no sink.
 */
function runCheck(dataDir: string, repair: boolean): Promise<CheckRun> {
  const args = [cliPath, 'check', '--json', '--data-dir', dataDir, ...(repair ? ['--repair', '--without-sinks'] : [])];
  const begun = performance.now();
  return new Promise((resolve) => {
    execFile(process.execPath, args, { env: { ...process.env, DATA_DIR: dataDir }, maxBuffer: 64 * 1024 * 1024, timeout: CHECK_DEADLINE_MS }, (err, stdout, stderr) => {
      const failed = err as (NodeJS.ErrnoException & { code?: number | string; signal?: NodeJS.Signals }) | null;
      const exit: Exit = { code: failed ? (typeof failed.code === 'number' ? failed.code : null) : 0, signal: failed?.signal ?? null };
      let report: CheckJson | undefined;
      try {
        report = JSON.parse(stdout) as CheckJson;
      } catch {
        report = undefined;
      }
      resolve({ exit, report, stderr, ms: performance.now() - begun });
    });
  });
}

/** Copies the undamaged folder to `target`, without its store.lock (the killed store's). */
function copyPristine(target: string): void {
  fs.cpSync(pristine, target, { recursive: true, filter: (source) => path.basename(source) !== 'store.lock' });
}

/** Reads the layout the faults are drawn on from the undamaged folder. */
async function readLayout(): Promise<FaultLayout> {
  const setup = JSON.parse(fs.readFileSync(path.join(workDir, 'setup.json'), 'utf8')) as SetupFile;
  for (const event of setup.events) acked.add(event);
  const fileEvents = new Map<string, string>();
  for (const event of setup.events) for (const image of event.images) fileEvents.set(image.fileId, event.id);
  const scratch = path.join(fs.mkdtempSync(path.join(workDir, 'layout-')), 'data');
  copyPristine(scratch);
  const check = await runCheck(scratch, false);
  fs.rmSync(path.dirname(scratch), { recursive: true, force: true });
  const report = check.report?.check;
  const position = report?.indexAgainstLog?.logPosition;
  if (!report || !position || report.index.pageSize === null) throw new Error(`edge-events check on the undamaged folder gave no log position or page size (${exitText(check.exit)}): ${check.stderr.slice(0, 2000)}`);
  if (report.damage) throw new Error(`edge-events check finds damage in the undamaged folder: ${JSON.stringify(report).slice(0, 2000)}`);
  const index = fs.readFileSync(path.join(pristine, 'db', 'data.mdb'));
  return {
    segments: segmentFiles(pristine),
    frames: new FrameMap(await readLogFrames(pristine), (fileId) => fileEvents.get(fileId)),
    position,
    segmentBytesAtCleanStop: new Map(setup.segmentBytesAtCleanStop),
    index,
    indexAtCleanStop: fs.readFileSync(path.join(workDir, 'clean-stop.mdb')),
    indexPageSize: report.index.pageSize,
  };
}

/** One start of the store on a copy and what reading it back gave. */
interface Attempt {
  /** How the store ended: before listening (refused or killed), during the reads, or at its stop. */
  startExit: Exit | undefined;
  diedDuringReads: Exit | undefined;
  /** The store stopped answering (a request past its deadline, then /health too); the reads left were not sent. */
  hung: boolean;
  stopExit: Exit | undefined;
  startMs: number;
  /** Whether the start-up cleanup ended before the reads began (startUpCleanupDone). */
  cleanupDone: boolean;
  readable: Set<string>;
  corrupt: Set<string>;
  statuses: StatusTally;
  images: StatusTally;
  /** /stats log_damage: events named lost, and the quarantined ranges. */
  named: Set<string>;
  eventsLost: number;
  ranges: number;
  output: string;
}

/** Whether the store at `client` answers `GET /health` within PROBE_DEADLINE_MS. */
async function answers(client: StoreClient): Promise<boolean> {
  const answer = await client.request('GET', '/health', { timeoutMs: PROBE_DEADLINE_MS }).catch(() => undefined);
  return answer?.status === 200;
}

/** Starts the store on `dataDir`, reads every acknowledged event and image back and /stats, and stops it. */
async function startAndRead(dataDir: string): Promise<Attempt> {
  const attempt: Attempt = {
    startExit: undefined, diedDuringReads: undefined, hung: false, stopExit: undefined, startMs: 0, cleanupDone: false,
    readable: new Set(), corrupt: new Set(), statuses: new StatusTally(), images: new StatusTally(), named: new Set(), eventsLost: 0, ranges: 0, output: '',
  };
  const begun = performance.now();
  let store: StoreProcess;
  try {
    store = await launchStore({ DATA_DIR: dataDir });
  } catch (err) {
    if (!(err instanceof StoreNotStarted)) throw err;
    attempt.startExit = err.exit;
    attempt.output = err.message;
    return attempt;
  }
  attempt.startMs = performance.now() - begun;
  const client = new StoreClient(store.url, 30_000);
  attempt.cleanupDone = await startUpCleanupDone(client, store);
  await mapParallel([...acked.events.values()], READERS, async (event) => {
    if (attempt.hung) return attempt.statuses.add('not sent: the store had stopped answering');
    try {
      const answer = await client.request('GET', `/v2/events/${event.id}`);
      attempt.statuses.add(answer.status);
      if (answer.status !== 200) return;
      attempt.readable.add(event.id);
      for (const image of event.images) {
        const found = await checkFile(client, `/images/${image.fileId}`, fixture(image.fixture)).catch((err: Error) => (/answered (\d+)/.exec(err.message)?.[1] ?? failureOutcome(err)));
        attempt.images.add(found);
        if (found !== 'ok') attempt.corrupt.add(event.id);
      }
    } catch (err) {
      const outcome = failureOutcome(err);
      attempt.statuses.add(outcome);
      // A request past its deadline while /health does not answer either: the store hangs, and
      // the reads left would each wait out their deadline.
      if (outcome === 'timeout' && !(await answers(client))) attempt.hung = true;
    }
  });
  try {
    if (attempt.hung) throw new Error('not asked: the store had stopped answering');
    const damage = (await client.getJson('/stats')).log_damage;
    attempt.eventsLost = damage.events_lost;
    attempt.ranges = damage.quarantined_ranges;
    for (const range of damage.recent) for (const id of range.lost_events) attempt.named.add(id);
  } catch (err) {
    attempt.statuses.add(`/stats ${(err as Error).message.slice(0, 80)}`);
  }
  if (store.hasExited()) attempt.diedDuringReads = await store.exited;
  else attempt.stopExit = await stopStore(store);
  attempt.output = store.output();
  return attempt;
}

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
  copyPristine(copy);
  const run: FaultRun = { fault, touched: new Set(), attempts: [], checks: [], violations: [], notes: [] };
  const onIndex = fault !== undefined && fault.segment === undefined;
  if (fault) {
    applyFault(copy, fault);
    if (fault.segment !== undefined) run.touched = layout.frames.eventsIn(fault.segment, fault.offset, fault.offset + fault.length);
  }
  const violation = (line: string) => run.violations.push(line);
  const signalled = (what: string, exit: Exit | undefined) => {
    if (exit?.signal) violation(`${what} ${exitText(exit)}`);
  };

  let attempt = await startAndRead(copy);
  run.attempts.push(attempt);
  const namesRepair = attempt.startExit !== undefined && attempt.output.includes('check --repair');
  const firstLoss = lossOf(attempt);
  const lostOnDamagedIndex = onIndex && attempt.startExit === undefined && firstLoss.lost.length + firstLoss.corrupt.length > 0;
  if (lostOnDamagedIndex) run.notes.push(`the store started on the damaged data.mdb and lost ${firstLoss.lost.length}, corrupted ${firstLoss.corrupt.length} events before any repair`);
  if (attempt.startExit || attempt.diedDuringReads || attempt.hung || lostOnDamagedIndex) {
    // As an operator would: the check first (what it says of the damage), then the repair.
    run.checks.push(await runCheck(copy, false), await runCheck(copy, true));
    attempt = await startAndRead(copy);
    run.attempts.push(attempt);
  }
  for (const [k, a] of run.attempts.entries()) {
    const which = k === 0 ? 'the store' : 'the store after check --repair';
    signalled(`${which} at start-up:`, a.startExit);
    if (a.diedDuringReads) violation(`${which} died while read: ${exitText(a.diedDuringReads)}`);
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

console.log(`disk-faults: seed ${seed}, ${runs} runs per fault, work directory ${workDir}`);
let fatal: string | undefined;
const totals = new Map<string, KindTotals>();
try {
  if (!setupDir) {
    console.log(`setting up: ${n(eventsPerHalf)} creates, a clean stop, a start, ${n(eventsPerHalf)} creates, SIGKILL`);
    await setUp();
  }
  const layout = await readLayout();
  const replayed = replayedEvents(layout);
  console.log(`data folder: ${n(acked.events.size)} events acknowledged, ${n(acked.events.size - replayed.size)} in the index, ${n(replayed.size)} only in the log `
    + `(position: segment ${layout.position.segment}, byte ${n(layout.position.offset)}); segments ${layout.segments.map((s) => `${s.segment} (${n(s.bytes)} bytes)`).join(', ')}; `
    + `data.mdb ${n(layout.index.length)} bytes, pages of ${n(layout.indexPageSize)}; set up in ${seconds(performance.now() - started)}`);
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
} catch (err) {
  fatal = (err as Error).stack;
  keep = true;
}
printTable(totals);
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
