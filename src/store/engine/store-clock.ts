/**
 * The store against a wall clock that jumps (docs/STORAGE.md, "A clock that jumps"). A box
 * without a real-time clock (a Raspberry Pi boots at the time it last saved; Jetson dev kits ship
 * without the RTC's battery) runs on a wrong clock until NTP steps it, and created_at, retention
 * and time queries all read the wall clock. Three things are kept, in LMDB's `meta`:
 *
 * - **The running time**: how long the store has run, over all its starts, by the monotonic clock
 *   (`process.hrtime`, CLOCK_MONOTONIC: no setting of the time moves it). Each start continues
 *   from the last saved value (`meta['storeClock:saved']`: saved at a cleanup by the lifecycle
 *   worker and at a clean stop), so downtime does not count, and a crash loses the time since the
 *   last save, which only keeps events longer. Retention deletes an event only once the store has
 *   also run RETENTION_DAYS since its created_at (cleanup-queries.ts `retentionCutoff`).
 * - **Epochs**: how created_at maps to running time. Within one start, created_at and the running
 *   time both advance with the monotonic clock (timestamps.ts `StampClock`), so their difference
 *   is constant until the created_at clock follows a jump forward; each start and each followed
 *   jump begins an epoch `{from, offset, run}`. Events stamped before the first epoch (by a
 *   release without it) have no running time: the wall clock alone judges them, as it did.
 * - **Jumps found**, counted for `/stats` and `/metrics`: while running (the created_at clock
 *   compares the wall clock with the monotonic one at every stamp and every WATCH_MS), at start
 *   against the newest stored event (a clock behind it was set back: those events are re-stamped,
 *   restamp.ts), and over a downtime within one boot (the wall clock against the monotonic clock
 *   since the last save, as systemd-journald keeps realtime, monotonic time and the boot id of
 *   each entry).
 *
 * The HTTP thread's `StoreClock` writes `meta['storeClock']` (at open and at a jump); the saved
 * running time is written by whichever thread saves. Times are µs.
 */
import fs from 'node:fs';
import type { StoreDatabases } from '../index/lmdb-env.js';
import type { RecordPresenter } from '../index/record-codec.js';
import { restampAheadSync, type Restamped } from './restamp.js';
import type { StoredEvents } from '../read/stored-events.js';
import { storeHandles, type StoreView } from '../read/store-view.js';
import { CLOCK_JUMP_MICROS, createdAtClock, lastUniqueMicros, restartUniqueMicros, type ClockJump } from '../record/timestamps.js';

/** `meta` key of the clock's record (`ClockRecord`), written by the HTTP thread. */
const CLOCK_KEY = 'storeClock';
/** `meta` key of the running time last saved (`SavedRun`). */
const SAVED_KEY = 'storeClock:saved';
/** How often (ms) a running store reads its clock for a jump when no create reads it. */
const WATCH_MS = 5000;
/** Where Linux gives the boot's id (proc(5), /proc/sys/kernel/random/boot_id). */
const BOOT_ID_FILE = '/proc/sys/kernel/random/boot_id';

/**
 * A stretch of created_at values stamped at one pace, from `from` up to the next epoch's `from`.
 * An event of it created at running time r has created_at = r + offset (more, when the
 * uniqueness of created_at pushed it up, which only keeps it longer).
 */
export interface ClockEpoch {
  /** The first created_at of the epoch (µs). */
  from: number;
  /** created_at − running time over the epoch (µs); null: each of its events counts as created at `run` (re-stamped events). */
  offset: number | null;
  /** The running time at the epoch's start (µs). */
  run: number;
}

/** Where a jump was found: while running, at start against the newest event, or over a downtime. */
export type JumpFound = 'running' | 'start' | 'downtime';

/** A jump of the wall clock the store found. */
export interface JumpRecord {
  /** Its size (µs; < 0: set back); at start, how far the wall clock was behind the newest event. */
  micros: number;
  found: JumpFound;
  /** The wall clock when it was found (µs since the epoch). */
  at: number;
  /** Events re-stamped for it (a jump back found at start). */
  restamped: number;
}

/** What `meta['storeClock']` holds. */
interface ClockRecord {
  /** By `from`, increasing. */
  epochs: ClockEpoch[];
  /** This process's start: the running time then, the monotonic clock then (µs), its pid. */
  start: { run: number; monotonic: number; pid: number };
  jumps: { forward: number; backward: number; restamped: number; last: JumpRecord | null };
}

/** What `meta['storeClock:saved']` holds: the running time, and the wall and monotonic clocks and the boot when it was saved. */
interface SavedRun {
  run: number;
  wall: number;
  monotonic: number;
  boot: string | null;
}

/** The monotonic clock (µs; CLOCK_MONOTONIC, the same in every thread and process of a boot). */
export function monotonicMicros(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

/** This boot's id, or null where Linux does not give one. */
function bootId(): string | null {
  try {
    return fs.readFileSync(BOOT_ID_FILE, 'utf8').trim();
  } catch {
    return null;
  }
}

function readClock(dbs: StoreDatabases): ClockRecord | undefined {
  return dbs.meta.get(CLOCK_KEY) as ClockRecord | undefined;
}

function readSaved(dbs: StoreDatabases): SavedRun | undefined {
  return dbs.meta.get(SAVED_KEY) as SavedRun | undefined;
}

/**
 * How long the store has run, over all its starts (µs): in the process that opened it, from its
 * start; elsewhere, as last saved. 0 for a store that never ran with a running clock.
 */
export function runningMicros(store: StoreView): number {
  const saved = readSaved(store[storeHandles].dbs)?.run ?? 0;
  const start = readClock(store[storeHandles].dbs)?.start;
  if (!start || start.pid !== process.pid) return saved;
  return Math.max(saved, start.run + monotonicMicros() - start.monotonic);
}

/**
 * Saves the running time (`meta['storeClock:saved']`), with the wall and monotonic clocks and the
 * boot, so the next start continues it and can tell a jump over the downtime. The lifecycle worker
 * saves at a cleanup, at most once a minute; the store at a clean stop.
 * @throws the lmdb error of a failed commit
 */
export async function saveRunningTime(store: StoreView): Promise<void> {
  const { dbs } = store[storeHandles];
  await dbs.root.transaction(() => {
    const run = Math.max(runningMicros(store), readSaved(dbs)?.run ?? 0);
    dbs.meta.putSync(SAVED_KEY, { run, wall: Date.now() * 1000, monotonic: monotonicMicros(), boot: bootId() } satisfies SavedRun);
  });
}

/** What retention reckons held time by: the running time now and the epochs (µs). */
export interface HeldClock {
  running: number;
  epochs: readonly ClockEpoch[];
}

/**
 * The store's held-time clock now.
 * @param running the running time to reckon with (µs; default: `runningMicros`): tests hand it
 */
export function heldClock(store: StoreView, running = runningMicros(store)): HeldClock {
  return { running, epochs: readClock(store[storeHandles].dbs)?.epochs ?? [] };
}

/**
 * The running time at which the event stamped `createdAt` was created, or later (µs): never
 * earlier, so the time the store has held it is never overstated. -Infinity for an event stamped
 * before the first epoch, which has none.
 */
export function runningAtCreation(held: HeldClock, createdAt: number): number {
  const { epochs } = held;
  let k = epochs.length - 1;
  while (k >= 0 && epochs[k].from > createdAt) k--;
  if (k < 0) return -Infinity;
  const { offset, run } = epochs[k];
  const at = offset === null ? run : Math.max(createdAt - offset, run);
  return k + 1 < epochs.length ? Math.min(at, epochs[k + 1].run) : at;
}

/**
 * The created_at (µs, exclusive) before which every event has been held for `retentionMicros` of
 * the store's running time (docs/STORAGE.md, "A clock that jumps"): the greatest bound with
 * `runningAtCreation` ≤ running − retention below it. Infinity when no epoch exists (a store of a
 * release without them: the wall clock alone judges).
 */
export function heldCutoff(held: HeldClock, retentionMicros: number): number {
  const { epochs } = held;
  if (epochs.length === 0) return Infinity;
  const latest = held.running - retentionMicros;
  for (let k = epochs.length - 1; k >= 0; k--) {
    const { from, offset, run } = epochs[k];
    if (run > latest) continue;
    // Every event before this epoch counts as created by its start, at `run` or earlier.
    const end = k + 1 < epochs.length ? epochs[k + 1].from : Infinity;
    return offset === null ? end : Math.max(from, Math.min(Math.floor(latest + offset) + 1, end));
  }
  return epochs[0].from;
}

/** The clock's state for `/stats` and `/metrics`. Times in µs. */
export interface ClockStatus {
  /** How long the store has run, over all its starts. */
  running: number;
  /** How far created_at runs ahead of the wall clock: a jump back while running, until the next start. */
  ahead: number;
  jumps: ClockRecord['jumps'];
}

/** The clock's state (on the thread that stamps: `ahead` is its created_at clock's). */
export function clockStatus(store: StoreView): ClockStatus {
  const jumps = readClock(store[storeHandles].dbs)?.jumps ?? { forward: 0, backward: 0, restamped: 0, last: null };
  return { running: runningMicros(store), ahead: createdAtClock.ahead, jumps };
}

/**
 * The clock's entries of `meta`, read in the transaction of a reset before it clears `meta`, and
 * the function that puts them back in it: a reset deletes the events, not the store's running
 * time, epochs and jumps.
 */
export function keepClockSync(dbs: StoreDatabases): () => void {
  const clock = dbs.meta.get(CLOCK_KEY);
  const saved = dbs.meta.get(SAVED_KEY);
  return () => {
    if (clock !== undefined) dbs.meta.putSync(CLOCK_KEY, clock);
    if (saved !== undefined) dbs.meta.putSync(SAVED_KEY, saved);
  };
}

/** A jump as the store reports it to its owner (EventStoreOptions `onClockJump`), to log. */
export interface ClockJumpReport {
  /** Its size, seconds (< 0: set back). */
  seconds: number;
  found: JumpFound;
  /** What created_at did: `followed` (a jump forward), `kept_pace` (a jump back while running), `restamped` (at start). */
  created_at: 'followed' | 'kept_pace' | 'restamped' | 'unaffected';
  /** Events re-stamped (at start). */
  restamped: number;
}

/** How the store's clock is opened. */
export interface StoreClockOptions {
  /** The presenter records are stored with (re-stamped records are presented again). */
  present: RecordPresenter;
  /** Told each jump found, to log. */
  onJump?: (jump: ClockJumpReport) => void;
  /** Told when recording a jump found while running failed. */
  onError?: (err: unknown) => void;
}

/**
 * The store's clock on the HTTP thread, the one that stamps created_at: opened with the store, it
 * finds the jumps of the wall clock, records the epochs, and re-stamps the events a clock set back
 * left ahead of it.
 */
export class StoreClock {
  /** Writes of jumps found while running, one at a time. */
  private writes: Promise<void> = Promise.resolve();
  private readonly timer: NodeJS.Timeout;
  private readonly stopListening: () => void;

  private constructor(
    private readonly store: StoreView,
    private readonly start: ClockRecord['start'],
    private readonly options: StoreClockOptions,
  ) {
    this.stopListening = createdAtClock.onJump((jump) => this.jumped(jump));
    // Reading the clock finds a jump; creates read it, and this timer when none come.
    this.timer = setInterval(() => createdAtClock.now(), WATCH_MS);
    this.timer.unref();
  }

  /**
   * Opens the clock of a store just recovered (docs/STORAGE.md, "A clock that jumps"): when the
   * newest event is more than CLOCK_JUMP_MICROS ahead of the wall clock, the clock was set back:
   * the head is checkpointed and the events after now are re-stamped (restamp.ts), in the
   * transaction that records the epoch; within one boot, a jump over the downtime is found by
   * the wall clock against the monotonic clock since the last save. Starts this start's epoch and
   * the running time from the last saved, then watches for jumps while running. Resolves once
   * that transaction is flushed. A store that cannot write it (a failed checkpoint, a full disk)
   * opens all the same, told to `onError`: nothing is re-stamped, and its running time stays
   * where it was last saved until a start records it, which keeps events longer, never shorter.
   * @param newest the newest created_at stored (µs; 0: none), LMDB's or the replayed head's
   * @param checkpoint commits the head to LMDB
   */
  static async open(store: StoreView, newest: number, checkpoint: () => Promise<void>, options: StoreClockOptions): Promise<StoreClock> {
    const { dbs } = store[storeHandles];
    const wall = Date.now() * 1000;
    let behind = newest - wall > CLOCK_JUMP_MICROS;
    if (behind) await checkpoint().catch((err: unknown) => { behind = false; options.onError?.(err); });
    let begun: { start: ClockRecord['start']; found: JumpRecord[]; restamped: Restamped | undefined } | undefined;
    try {
      begun = await dbs.root.transaction(() => StoreClock.beginSync(store[storeHandles].stored, newest, wall, behind, options.present));
      await dbs.root.flushed;
    } catch (err) {
      options.onError?.(err);
    }
    if (begun?.restamped) restartUniqueMicros(begun.restamped.newest);
    for (const jump of begun?.found ?? []) {
      const created = jump.found === 'start' ? 'restamped' : 'unaffected';
      options.onJump?.({ seconds: jump.micros / 1e6, found: jump.found, created_at: created, restamped: jump.restamped });
    }
    const start = begun?.start ?? { run: readSaved(dbs)?.run ?? 0, monotonic: monotonicMicros(), pid: process.pid };
    return new StoreClock(store, start, options);
  }

  /**
   * The open's transaction: re-stamps when `behind`, finds a jump over the downtime, and records
   * the jumps found and this start's epoch and running time in `meta['storeClock']`.
   * @param wall the wall clock at the open (µs)
   */
  private static beginSync(stored: StoredEvents, newest: number, wall: number, behind: boolean, present: RecordPresenter) {
    const { dbs } = stored;
    const saved = readSaved(dbs);
    const record = readClock(dbs);
    const epochs = record?.epochs ?? [];
    const jumps = { ...(record?.jumps ?? { forward: 0, backward: 0, restamped: 0, last: null }) };
    const run = Math.max(saved?.run ?? 0, epochs.at(-1)?.run ?? 0);
    const found: JumpRecord[] = [];
    const restamped = behind ? restampAheadSync(stored, wall, present) : undefined;
    if (restamped) {
      found.push({ micros: -restamped.shift, found: 'start', at: wall, restamped: restamped.events });
      // The re-stamped events count as created now: how long they were held before is unknown.
      const after = restamped.after;
      epochs.splice(0, epochs.length, ...epochs.filter((epoch) => epoch.from <= after), { from: after + 1, offset: null, run });
    } else if (saved && saved.boot !== null && saved.boot === bootId()) {
      const micros = wall - saved.wall - (monotonicMicros() - saved.monotonic);
      if (Math.abs(micros) >= CLOCK_JUMP_MICROS) found.push({ micros, found: 'downtime', at: wall, restamped: 0 });
    }
    // Epochs wholly before the oldest event stored reckon nothing any more.
    const [oldest] = stored.createdAts({ limit: 1 });
    while (oldest !== undefined && epochs.length > 1 && epochs[1].from <= oldest) epochs.shift();
    const start = { run, monotonic: monotonicMicros(), pid: process.pid };
    // The next created_at is past the newest stored (re-stamped) and every one this thread gave out.
    const from = (restamped ? restamped.newest : Math.max(newest, lastUniqueMicros())) + 1;
    epochs.push({ from, offset: Math.floor(createdAtClock.now()) - run, run });
    for (const jump of found) {
      if (jump.micros > 0) jumps.forward++;
      else jumps.backward++;
      jumps.restamped += jump.restamped;
      jumps.last = jump;
    }
    dbs.meta.putSync(CLOCK_KEY, { epochs, start, jumps } satisfies ClockRecord);
    return { start, found, restamped };
  }

  /** The running time now (µs), by this start's record. */
  private running(): number {
    return this.start.run + monotonicMicros() - this.start.monotonic;
  }

  /** Records a jump found while running, and a new epoch when created_at followed it. */
  private jumped(jump: ClockJump): void {
    const record: JumpRecord = { micros: jump.micros, found: 'running', at: jump.wall, restamped: 0 };
    const run = this.running();
    // The next created_at: the clock's, or just after the last one stamped.
    const epoch: ClockEpoch | undefined = jump.followed
      ? { from: Math.max(jump.stamp, lastUniqueMicros() + 1), offset: jump.stamp - run, run }
      : undefined;
    this.options.onJump?.({ seconds: jump.micros / 1e6, found: 'running', created_at: jump.followed ? 'followed' : 'kept_pace', restamped: 0 });
    const { dbs } = this.store[storeHandles];
    this.writes = this.writes.then(() => dbs.root.transaction(() => {
      const stored = readClock(dbs);
      if (!stored) return;
      const jumps = { ...stored.jumps, last: record };
      if (jump.micros > 0) jumps.forward++;
      else jumps.backward++;
      dbs.meta.putSync(CLOCK_KEY, { ...stored, epochs: epoch ? [...stored.epochs, epoch] : stored.epochs, jumps } satisfies ClockRecord);
    }))
      // Saved past the jump, so that the next start, after a crash too, does not find it again over the downtime.
      .then(() => saveRunningTime(this.store))
      .then(() => undefined, (err: unknown) => this.options.onError?.(err));
  }

  /**
   * Stops watching, finishes the writes of jumps found, and saves the running time.
   * @throws the lmdb error of a failed save
   */
  async close(): Promise<void> {
    clearInterval(this.timer);
    this.stopListening();
    await this.writes;
    await saveRunningTime(this.store);
  }
}
