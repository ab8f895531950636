/**
 * Which segments hold the frames a live event depends on (docs/STORAGE.md, "Two copies of every
 * record"). Every acknowledged event keeps its whole record in the log for as long as it lives:
 * its **home** frame (the create's record frame, or the latest record copy) and the update frames
 * logged after it. A segment holding any of them, or a tombstone still needed, is live, and is
 * deleted only once compaction has copied them forward.
 *
 * - A create's home is found by its created_at: creates are logged in created_at order, so each
 *   segment's creates span a range of their own (`SegmentEntry.firstCreate`..`lastCreate`).
 * - An event with updates, or whose home is a record copy, has an entry in `record_frames`.
 * - A tombstone is live while its event's home segment is on disk (`tombstones`), since a rebuild
 *   would bring the event back from it.
 */
import type { StoreDatabases } from '../index/lmdb-env.js';
import type { SegmentEntry } from '../log/log-entries.js';

/** An event's frames besides a create's record frame in its range's segment (`record_frames`). */
export interface EventFrames {
  /** The segment of its latest record copy; absent: its create's record frame is its home. */
  home?: number;
  /** Segments of the update frames logged after its home, in log order. */
  updates: number[];
}

/** The created_at ranges of the segments' creates, for looking up a create's home. */
export class CreateRanges {
  private constructor(private readonly ranges: { first: number; last: number; segment: number }[]) {}

  /** The ranges as the `segments` database holds them in the current transaction or snapshot. */
  static read(dbs: StoreDatabases): CreateRanges {
    const ranges: { first: number; last: number; segment: number }[] = [];
    for (const { key, value } of dbs.segments.getRange()) {
      if (value.firstCreate !== undefined && value.lastCreate !== undefined) ranges.push({ first: value.firstCreate, last: value.lastCreate, segment: key });
    }
    ranges.sort((a, b) => a.first - b.first);
    return new CreateRanges(ranges);
  }

  /** The segment whose creates' range holds `createdAt` (µs), or undefined. */
  segmentOf(createdAt: number): number | undefined {
    let lo = 0;
    let hi = this.ranges.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const range = this.ranges[mid];
      if (createdAt < range.first) hi = mid - 1;
      else if (createdAt > range.last) lo = mid + 1;
      else return range.segment;
    }
    return undefined;
  }
}

/** Where the live frames of the event created at `createdAt` (µs) are: its home segment (undefined: none known) and its updates'. */
export function framesOf(dbs: StoreDatabases, ranges: CreateRanges, createdAt: number): { home: number | undefined; updates: number[] } {
  const entry = dbs.recordFrames.get(createdAt);
  return { home: entry?.home ?? ranges.segmentOf(createdAt), updates: entry?.updates ?? [] };
}

/** Changes to the segments' frame counts gathered in a transaction, written by `apply`. */
export class FrameTally {
  private readonly bySegment = new Map<number, { frames: number; live: number; bytes: number; first?: number; last?: number; end: number }>();

  private of(segment: number) {
    let entry = this.bySegment.get(segment);
    if (!entry) {
      entry = { frames: 0, live: 0, bytes: 0, end: 0 };
      this.bySegment.set(segment, entry);
    }
    return entry;
  }

  /**
   * Counts a frame indexed in `segment`.
   * @param bytes the frame's bytes, header included
   * @param live whether a live event depends on it
   * @param createdAt a create's record frame: its created_at (µs), which extends the segment's range
   * @param end where the frame ends (bytes): the segment's committed length is at least that
   */
  added(segment: number, bytes: number, live: boolean, createdAt?: number, end = 0): void {
    const entry = this.of(segment);
    entry.frames++;
    entry.bytes += bytes;
    if (live) entry.live++;
    if (createdAt !== undefined) {
      entry.first = Math.min(entry.first ?? createdAt, createdAt);
      entry.last = Math.max(entry.last ?? createdAt, createdAt);
    }
    entry.end = Math.max(entry.end, end);
  }

  /** A frame in `segment` no live event depends on any more (its event deleted, or copied forward). */
  died(segment: number | undefined): void {
    if (segment !== undefined) this.of(segment).live--;
  }

  /** Writes the gathered changes into `segments`; call inside the write transaction. */
  apply(dbs: StoreDatabases): void {
    for (const [segment, change] of this.bySegment) {
      const entry: SegmentEntry = dbs.segments.get(segment) ?? { committed: 0, liveBytes: 0, liveBlobs: 0 };
      if (change.frames === 0 && change.live === 0 && change.end <= entry.committed) continue;
      const next: SegmentEntry = {
        ...entry,
        committed: Math.max(entry.committed, change.end),
        frames: (entry.frames ?? 0) + change.frames,
        liveFrames: (entry.liveFrames ?? 0) + change.live,
        frameBytes: (entry.frameBytes ?? 0) + change.bytes,
      };
      if (change.first !== undefined) next.firstCreate = Math.min(entry.firstCreate ?? change.first, change.first);
      if (change.last !== undefined) next.lastCreate = Math.max(entry.lastCreate ?? change.last, change.last);
      dbs.segments.putSync(segment, next);
    }
    this.bySegment.clear();
  }
}

/**
 * Forgets the frames of the event created at `createdAt` (µs), deleted: they die in `tally`, and
 * its `record_frames` entry goes; call inside the write transaction.
 * @returns its home segment (undefined: none known), which a tombstone must outlive
 */
export function forgetFrames(dbs: StoreDatabases, ranges: CreateRanges, tally: FrameTally, createdAt: number): number | undefined {
  const { home, updates } = framesOf(dbs, ranges, createdAt);
  tally.died(home);
  for (const segment of updates) tally.died(segment);
  dbs.recordFrames.removeSync(createdAt);
  return home;
}
