/**
 * Timestamps of the store: created_at, finalized_at and auto_finalized_at are integers of
 * microseconds since the epoch (µs), unique per store for created_at (docs/STORAGE.md,
 * "Creates"), and travel as ISO 8601 strings with six fraction digits and a `Z`.
 */

/** µs in a day. */
export const DAY_MICROS = 86_400_000_000;

const ISO = /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2})?)(?:\.(\d{1,9}))?)?\s*(Z|z|[+-]\d{2}:?\d{2})?$/;

/**
 * True when the `YYYY-MM-DD` that `text` starts with is a day of the calendar (no 2026-02-30:
 * Date.parse would roll it over to March 2).
 */
export function isCalendarDate(text: string): boolean {
  const day = Number(text.slice(8, 10));
  if (day <= 28) return true;
  const year = Number(text.slice(0, 4));
  const month = Number(text.slice(5, 7));
  return day <= new Date(Date.UTC(year, month, 0)).getUTCDate(); // day 0 of the next month
}

/**
 * Parses an ISO 8601 date or date-time to µs since the epoch; a missing offset means UTC.
 * @returns undefined when the text is not an ISO 8601 timestamp of a calendar day
 */
export function parseIsoMicros(text: string): number | undefined {
  const match = ISO.exec(text.trim());
  if (!match) return undefined;
  const [, date, time = '00:00:00', fraction = '', zone = 'Z'] = match;
  if (!isCalendarDate(date!)) return undefined;
  const offset = zone === 'z' ? 'Z' : zone.length === 5 ? `${zone.slice(0, 3)}:${zone.slice(3)}` : zone;
  const ms = Date.parse(`${date}T${time.length === 5 ? `${time}:00` : time}${offset}`);
  if (Number.isNaN(ms)) return undefined;
  return ms * 1000 + Number(fraction.padEnd(6, '0').slice(0, 6));
}

/**
 * The last value `formatMicros` formatted (µs), and its text. A create formats its created_at
 * for the stored JSON, again as its finalized_at, and again for the 201.
 */
let lastFormatted = Number.NaN;
let lastText = '';

/** Formats µs since the epoch as `YYYY-MM-DDTHH:MM:SS.ffffffZ`. */
export function formatMicros(micros: number): string {
  if (micros === lastFormatted) return lastText;
  const ms = Math.floor(micros / 1000);
  const iso = new Date(ms).toISOString(); // YYYY-MM-DDTHH:MM:SS.mmmZ
  const sub = String(micros - ms * 1000).padStart(3, '0');
  lastFormatted = micros;
  lastText = `${iso.slice(0, 23)}${sub}Z`;
  return lastText;
}

/** Like `formatMicros`, passing null through. */
export function formatMicrosOrNull(micros: number | null): string | null {
  return micros === null ? null : formatMicros(micros);
}

/**
 * A step of the wall clock beyond this (µs, either way) is a jump (docs/STORAGE.md, "A clock that
 * jumps"): NTP steps a clock that is off by more than 128 ms (ntpd) or 1 s (chrony's `makestep`),
 * and slews it otherwise. Steps below it are left alone, so created_at stays within a second of
 * the wall clock.
 */
export const CLOCK_JUMP_MICROS = 1_000_000;

/** A jump of the wall clock, as the created_at clock saw it. Times in µs since the epoch. */
export interface ClockJump {
  /** Size: the wall clock's new reading less what it would have read without the jump (µs; < 0: set back). */
  micros: number;
  /** True when created_at follows it: a clock set forward past created_at's own; never one set back. */
  followed: boolean;
  /** The wall clock after the jump. */
  wall: number;
  /** The created_at clock after the jump. */
  stamp: number;
}

/**
 * The clock created_at is read from (docs/STORAGE.md, "A clock that jumps"): the monotonic clock
 * (`performance.now()`, CLOCK_MONOTONIC, which no setting of the time moves) plus an offset to
 * the wall clock. Each reading compares the wall clock with the monotonic one: a step of more than
 * CLOCK_JUMP_MICROS is a jump, told to the listeners. created_at follows a jump forward (a clock
 * that was behind, corrected), and keeps its pace through a jump back (a clock that was ahead,
 * corrected): stamps stay increasing and as far apart as the events, where following it would
 * stamp every event 1 µs after the newest until the wall clock caught up, for as long as the
 * clock had been ahead. The store's next start re-stamps what is then ahead of the wall clock
 * (restamp.ts).
 */
export class StampClock {
  /** wall − monotonic (µs) as last seen: moves only at a jump. */
  private wallOffset: number;
  /** created_at − monotonic (µs): follows the wall clock forward, never back. */
  private stampOffset: number;
  private readonly listeners = new Set<(jump: ClockJump) => void>();

  /**
   * @param wall the wall clock (µs since the epoch; default `Date.now()`)
   * @param monotonic the monotonic clock (µs from any origin; default `performance.now()`)
   * @param origin the wall clock at the monotonic clock's origin (µs; default
   *   `performance.timeOrigin`), taken unless the wall clock is now a jump away from it
   */
  constructor(
    private readonly wall: () => number = () => Date.now() * 1000,
    private readonly monotonic: () => number = () => performance.now() * 1000,
    origin = performance.timeOrigin * 1000,
  ) {
    this.wallOffset = this.wall() - this.monotonic();
    this.stampOffset = Math.abs(this.wallOffset - origin) < CLOCK_JUMP_MICROS ? origin : this.wallOffset;
  }

  /** The created_at clock now (µs since the epoch, fractional); tells the listeners of a jump first. */
  now(): number {
    const monotonic = this.monotonic();
    const offset = this.wall() - monotonic;
    const micros = offset - this.wallOffset;
    if (micros >= CLOCK_JUMP_MICROS || micros <= -CLOCK_JUMP_MICROS) {
      this.wallOffset = offset;
      const followed = offset > this.stampOffset;
      if (followed) this.stampOffset = offset;
      const jump = { micros: Math.round(micros), followed, wall: Math.floor(monotonic + offset), stamp: Math.floor(monotonic + this.stampOffset) };
      for (const listener of this.listeners) listener(jump);
    }
    return monotonic + this.stampOffset;
  }

  /**
   * How far created_at runs ahead of the wall clock (µs, ≥ 0): the size of a jump back it did not
   * follow, 0 otherwise. As of the last reading.
   */
  get ahead(): number {
    return Math.max(0, this.stampOffset - this.wallOffset);
  }

  /** Calls `listener` at each jump, synchronously, inside the reading that found it; returns the function that stops it. */
  onJump(listener: (jump: ClockJump) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

/** The created_at clock of this thread. */
export const createdAtClock = new StampClock();

let last = 0;

/**
 * The current time in µs by `createdAtClock`, strictly greater than every value it returned before
 * in this thread, so created_at is unique and ordered even when the clock stalls or steps back.
 * @param floor a value the result must exceed too (the newest created_at already stored)
 */
export function nextUniqueMicros(floor = 0): number {
  last = Math.max(Math.floor(createdAtClock.now()), last + 1, floor + 1);
  return last;
}

/** The last value `nextUniqueMicros` returned in this thread (µs; 0 before the first). */
export function lastUniqueMicros(): number {
  return last;
}

/**
 * Sets the floor of `nextUniqueMicros` to `floor` (µs), lower than it may be: after the store's
 * open re-stamped events a clock set back had left ahead of it (restamp.ts), the next created_at
 * is the wall clock's again. The floor is the thread's: a test that opens two stores in one
 * thread and re-stamps one may see the other's next created_at below its newest.
 */
export function restartUniqueMicros(floor: number): void {
  last = floor;
}
