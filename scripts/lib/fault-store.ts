/**
 * The store and `edge-events check` as the disk-fault harness runs them (scripts/disk-faults.ts;
 * docs/RELIABILITY.md, "Disk faults"): the built store started on a copy of a data folder, every
 * acknowledged event read back (its JSON compared with what was read before the fault, where the
 * folder kept it), every image compared with the bytes sent, /stats read (`log_damage`, `scrub`),
 * the store stopped; and the check, with or without `--repair`, with its JSON report.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { AckedEvent } from './acked-events.js';
import { fixture } from './fixtures.js';
import { StoreClient } from './http-client.js';
import { cliPath } from './spawned-store.js';
import { failureOutcome, StatusTally } from './status-tally.js';
import { launchStore, StoreNotStarted, type Exit, type StoreProcess } from './store-process.js';
import { checkFile, mapParallel } from './store-reads.js';
import type { CheckReport, RebuildReport } from '../../src/store/engine/check-report.js';

const READERS = 8;
const STOP_DEADLINE_MS = 30_000;
/** Deadline of a probe (`/health`, `/stats` while waiting for the start-up cleanup or the scrub). */
const PROBE_DEADLINE_MS = 5_000;
const CLEANUP_DEADLINE_MS = 120_000;
/** How long a whole pass of the scrub may take at SCRUB_SETTINGS' pace, with the start-up and a busy machine. */
export const SCRUB_DEADLINE_MS = 180_000;
const CHECK_DEADLINE_MS = 600_000;

/** The scrub set small (docs/STORAGE.md, "The scrub"): a pass over a 100 MB log takes about 7 s, a few steps. */
export const SCRUB_SETTINGS = { SCRUB_PASS_HOURS: '0.002' };

export const n = (value: number) => value.toLocaleString('en-US');
export const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
export const exitText = (exit: Exit) => (exit.signal ? `killed by ${exit.signal}` : `exit ${exit.code}`);

/**
 * How a store that ended by itself while read ended, in words: a stop on a SIGTERM the harness did
 * not send (it sends one only after the reads) is another process's on the machine, and voids the run.
 */
export function diedText(attempt: { diedDuringReads?: Exit; output: string }): string {
  const exit = attempt.diedDuringReads!;
  const outside = exit.code === 0 && /"signal":"SIGTERM","msg":"stopping"/.test(attempt.output);
  return `${exitText(exit)}${outside ? ' (its log: stopping on a SIGTERM the harness did not send, from another process on the machine: the run is void, repeat it with --only)' : ''}`;
}

/** Stops `store` with SIGTERM, or SIGKILL past STOP_DEADLINE_MS. */
export async function stopStore(store: StoreProcess): Promise<Exit> {
  const timer = setTimeout(() => store.signal('SIGKILL'), STOP_DEADLINE_MS);
  const exit = await store.kill('SIGTERM');
  clearTimeout(timer);
  return exit;
}

/**
 * Waits until `done(/stats)` holds, polling every 200 ms.
 * @returns false when `deadlineMs` passed first or the store ended
 */
async function statsUntil(client: StoreClient, store: StoreProcess, deadlineMs: number, done: (stats: any) => boolean): Promise<boolean> {
  for (const deadline = performance.now() + deadlineMs; performance.now() < deadline && !store.hasExited(); await sleep(200)) {
    const answer = await client.request('GET', '/stats', { timeoutMs: PROBE_DEADLINE_MS }).catch(() => undefined);
    if (answer?.status === 200 && done(answer.json())) return true;
  }
  return false;
}

/**
 * Waits until the store's start-up cleanup has ended (/stats `last_cleanup` set): its checkpoint
 * commits what the start replayed, and its consistency pass drops file entries whose bytes are
 * missing or fail their CRC (docs/OPERATIONS.md, "Keeping the disk bounded").
 * @returns false when CLEANUP_DEADLINE_MS passed first or the store ended
 */
export function startUpCleanupDone(client: StoreClient, store: StoreProcess): Promise<boolean> {
  return statsUntil(client, store, CLEANUP_DEADLINE_MS, (stats) => stats.last_cleanup !== null);
}

/**
 * Sends `count` creates, `writers` at a time, each body from `body(k)`; each must be acknowledged.
 * @returns the acknowledged events, in the order of their answers
 * @throws Error on any other answer
 */
export async function createEvents(client: StoreClient, count: number, writers: number, body: (k: number) => { json: Record<string, unknown>; images: string[] }): Promise<AckedEvent[]> {
  const acked: AckedEvent[] = [];
  let next = 0;
  const writer = async () => {
    while (next < count) {
      const k = next++;
      const { json, images } = body(k);
      const answer = await client.request('POST', '/v2/events', { json });
      if (answer.status !== 201) throw new Error(`create ${k} answered ${answer.status}: ${answer.bytes.toString('utf8', 0, 300)}`);
      const created = answer.json();
      acked.push({ id: created.id, createdAt: created.created_at, images: created.image_ids.map((fileId: string, i: number) => ({ fileId, fixture: images[i] })) });
    }
  };
  await Promise.all(Array.from({ length: writers }, writer));
  return acked;
}

/**
 * Reads each of `events` back (`GET /v2/events/{id}`) with its JSON, and keeps only the images
 * that still download whole (a storage cleanup deletes files and keeps their records).
 * @returns each event as it now reads, and its JSON, by id
 * @throws Error when an event does not answer 200 or an image answers other than 200 or 404
 */
export async function readExpected(client: StoreClient, events: AckedEvent[]): Promise<{ events: AckedEvent[]; bodies: Map<string, string> }> {
  const bodies = new Map<string, string>();
  const kept = await mapParallel(events, READERS, async (event) => {
    const answer = await client.request('GET', `/v2/events/${event.id}`);
    if (answer.status !== 200) throw new Error(`GET /v2/events/${event.id} answered ${answer.status} before any fault`);
    bodies.set(event.id, answer.bytes.toString('utf8'));
    const images = [];
    for (const image of event.images) if ((await checkFile(client, `/images/${image.fileId}`, fixture(image.fixture))) === 'ok') images.push(image);
    return { ...event, images };
  });
  return { events: kept, bodies };
}

/** `edge-events check --json`'s output (src/check/check-command.ts). */
export interface CheckJson {
  check: CheckReport;
  repair: RebuildReport | null;
  recheck: CheckReport | null;
}

/** How `edge-events check` ended, with its JSON report when it gave one. */
export interface CheckRun {
  repair: boolean;
  exit: Exit;
  report: CheckJson | undefined;
  stderr: string;
  ms: number;
}

/**
 * Runs `edge-events check --json [--repair --without-sinks]` on `dataDir` (docs/OPERATIONS.md,
 * "Checking and repairing a data folder"): the harness's stores ship to no sink.
 */
export function runCheck(dataDir: string, repair: boolean): Promise<CheckRun> {
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
      resolve({ repair, exit, report, stderr, ms: performance.now() - begun });
    });
  });
}

/** Copies the data folder `from` to `to`, without its store.lock (a killed store's). */
export function copyFolder(from: string, to: string): void {
  fs.cpSync(from, to, { recursive: true, filter: (source) => path.basename(source) !== 'store.lock' });
}

/** One start of the store on a copy and what reading it back gave. */
export interface Attempt {
  /** How the store ended: before listening (refused or killed), during the reads, or at its stop. */
  startExit: Exit | undefined;
  diedDuringReads: Exit | undefined;
  /** The store stopped answering (a request past its deadline, then /health too); the reads left were not sent. */
  hung: boolean;
  stopExit: Exit | undefined;
  startMs: number;
  /** Whether the start-up cleanup ended before the reads began (startUpCleanupDone). */
  cleanupDone: boolean;
  /** With the scrub set small: whether it finished a whole pass before the reads began. */
  scrubPassed: boolean;
  readable: Set<string>;
  /** Events with an image missing or differing, or (where the folder kept them) JSON that differs from before the fault. */
  corrupt: Set<string>;
  /** Of `corrupt`, those whose JSON differs, and where the first of them differs first. */
  differing: Set<string>;
  firstDifference: string | undefined;
  /** Events whose JSON is as before but for a file a cleanup had deleted, back (`fileCameBack`): not corrupt. */
  filesBack: Set<string>;
  statuses: StatusTally;
  images: StatusTally;
  /** What each image's download gave (`ok`, `missing`, `different`, a status or a failure), by file id. */
  imageOutcomes: Map<string, string>;
  /** /stats log_damage: events named lost, and the quarantined ranges. */
  named: Set<string>;
  eventsLost: number;
  ranges: number;
  /** /stats `scrub` and `index_damage`, and /health's `status`, read after the reads. */
  scrub: any;
  indexDamage: any;
  health: string | undefined;
  output: string;
}

/** What a start reads back, and how. */
export interface ReadOptions {
  /** The events to read back, and their images. */
  events: AckedEvent[];
  /** Their JSON before the fault, when the folder kept it: a read that differs is corrupt. */
  bodies?: Map<string, string>;
  /** Settings of the store besides DATA_DIR (e.g. SCRUB_SETTINGS). */
  env?: Record<string, string>;
  /** Wait up to this long (ms) for a whole pass of the scrub after the start-up cleanup, before reading. */
  scrubPassMs?: number;
}

/** Whether the store at `client` answers `GET /health` within PROBE_DEADLINE_MS. */
async function answers(client: StoreClient): Promise<boolean> {
  const answer = await client.request('GET', '/health', { timeoutMs: PROBE_DEADLINE_MS }).catch(() => undefined);
  return answer?.status === 200;
}

/**
 * Whether event JSON `now` is `before` but for a higher `current_file_count`: a file a storage
 * cleanup deleted, given back by a rebuild while its segment is on disk (docs/STORAGE.md, "What a
 * rebuild restores").
 */
function fileCameBack(before: string, now: string): boolean {
  let a, b;
  try {
    a = JSON.parse(before);
    b = JSON.parse(now);
  } catch {
    return false; // the store answered bytes that are not JSON
  }
  return b.current_file_count > a.current_file_count && b.current_file_count <= b.original_file_count && JSON.stringify({ ...b, current_file_count: a.current_file_count }) === JSON.stringify(a);
}

/** Where JSON `now` first differs from `before`, with some context, in one line. */
function difference(id: string, before: string, now: string): string {
  let at = 0;
  while (at < before.length && before[at] === now[at]) at++;
  const from = Math.max(0, at - 60);
  return `event ${id}, from character ${at}: before ${JSON.stringify(before.slice(from, at + 60))}, now ${JSON.stringify(now.slice(from, at + 60))}`;
}

/** Reads `event` back into `attempt`. */
async function readEvent(client: StoreClient, attempt: Attempt, event: AckedEvent, bodies: Map<string, string> | undefined): Promise<void> {
  if (attempt.hung) return attempt.statuses.add('not sent: the store had stopped answering');
  try {
    const answer = await client.request('GET', `/v2/events/${event.id}`);
    attempt.statuses.add(answer.status);
    if (answer.status !== 200) return;
    attempt.readable.add(event.id);
    const before = bodies?.get(event.id);
    const now = answer.bytes.toString('utf8');
    if (before !== undefined && now !== before && fileCameBack(before, now)) {
      attempt.filesBack.add(event.id);
    } else if (before !== undefined && now !== before) {
      attempt.corrupt.add(event.id);
      attempt.differing.add(event.id);
      attempt.firstDifference ??= difference(event.id, before, now);
    }
    for (const image of event.images) {
      const found = await checkFile(client, `/images/${image.fileId}`, fixture(image.fixture)).catch((err: Error) => (/answered (\d+)/.exec(err.message)?.[1] ?? failureOutcome(err)));
      attempt.images.add(found);
      attempt.imageOutcomes.set(image.fileId, found);
      if (found !== 'ok') attempt.corrupt.add(event.id);
    }
  } catch (err) {
    const outcome = failureOutcome(err);
    attempt.statuses.add(outcome);
    // A request past its deadline while /health does not answer either: the store hangs, and
    // the reads left would each wait out their deadline.
    if (outcome === 'timeout' && !(await answers(client))) attempt.hung = true;
  }
}

/** Reads /stats and /health into `attempt`. */
async function readStats(client: StoreClient, attempt: Attempt): Promise<void> {
  try {
    if (attempt.hung) throw new Error('not asked: the store had stopped answering');
    const stats = await client.getJson('/stats');
    attempt.eventsLost = stats.log_damage.events_lost;
    attempt.ranges = stats.log_damage.quarantined_ranges;
    for (const range of stats.log_damage.recent) for (const id of range.lost_events) attempt.named.add(id);
    attempt.scrub = stats.scrub;
    attempt.indexDamage = stats.index_damage;
    attempt.health = (await client.request('GET', '/health')).json()?.status;
  } catch (err) {
    attempt.statuses.add(`/stats ${(err as Error).message.slice(0, 80)}`);
  }
}

/** Starts the store on `dataDir`, reads back what `options` says and /stats, and stops it. */
export async function startAndRead(dataDir: string, options: ReadOptions): Promise<Attempt> {
  const attempt: Attempt = {
    startExit: undefined, diedDuringReads: undefined, hung: false, stopExit: undefined, startMs: 0, cleanupDone: false, scrubPassed: false,
    readable: new Set(), corrupt: new Set(), differing: new Set(), firstDifference: undefined, filesBack: new Set(), statuses: new StatusTally(), images: new StatusTally(), imageOutcomes: new Map(), named: new Set(), eventsLost: 0, ranges: 0,
    scrub: undefined, indexDamage: undefined, health: undefined, output: '',
  };
  const begun = performance.now();
  let store: StoreProcess;
  try {
    store = await launchStore({ DATA_DIR: dataDir, ...options.env });
  } catch (err) {
    if (!(err instanceof StoreNotStarted)) throw err;
    attempt.startExit = err.exit;
    attempt.output = err.message;
    return attempt;
  }
  attempt.startMs = performance.now() - begun;
  const client = new StoreClient(store.url, 30_000);
  attempt.cleanupDone = await startUpCleanupDone(client, store);
  if (options.scrubPassMs) attempt.scrubPassed = await statsUntil(client, store, options.scrubPassMs, (stats) => stats.scrub.passes >= 1);
  await mapParallel(options.events, READERS, (event) => readEvent(client, attempt, event, options.bodies));
  await readStats(client, attempt);
  if (store.hasExited()) attempt.diedDuringReads = await store.exited;
  else attempt.stopExit = await stopStore(store);
  attempt.output = store.output();
  return attempt;
}
