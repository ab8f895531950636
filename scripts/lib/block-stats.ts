/**
 * Write counters of a block device, read from `/sys/block/<name>/stat` (the Linux kernel's
 * Documentation/block/stat.rst: eleven fields, then four for discards and two for flushes), to
 * tell whether anything was written to a device between two readings.
 */
import fs from 'node:fs';
import path from 'node:path';

/** The counters of a device that change when its content may have changed. */
export interface BlockWrites {
  /** Write requests completed (field 5). */
  writes: number;
  /** Sectors written (field 7). */
  sectorsWritten: number;
  /** Requests issued and not yet completed, reads and writes (field 9). */
  inFlight: number;
  /** Discard requests completed (field 12; 0 on kernels before 4.18, which lack it). */
  discards: number;
  /** Sectors discarded (field 14). */
  sectorsDiscarded: number;
}

/**
 * Parses the text of a `stat` file.
 * @throws Error when it has fewer than the eleven fields every kernel gives
 */
export function parseBlockStat(text: string): BlockWrites {
  const fields = text.trim().split(/\s+/).map(Number);
  if (fields.length < 11 || fields.some((n) => !Number.isFinite(n))) throw new Error(`not a block device stat line: ${JSON.stringify(text)}`);
  return { writes: fields[4], sectorsWritten: fields[6], inFlight: fields[8], discards: fields[11] ?? 0, sectorsDiscarded: fields[13] ?? 0 };
}

/** The counters of `device` (e.g. `/dev/loop3`) now. */
export function readBlockWrites(device: string): BlockWrites {
  return parseBlockStat(fs.readFileSync(`/sys/block/${path.basename(device)}/stat`, 'utf8'));
}

/**
 * True when nothing can have changed the device's content between two readings: no request in
 * flight at either, no write or discard completed between them (a change is a request that
 * completes in between, or one still in flight at a reading).
 */
export function quietBetween(before: BlockWrites, after: BlockWrites): boolean {
  return before.inFlight === 0 && after.inFlight === 0 && after.writes === before.writes && after.discards === before.discards;
}

/** Sectors written or discarded between two readings of one device. */
export function sectorsBetween(before: BlockWrites, after: BlockWrites): number {
  return after.sectorsWritten - before.sectorsWritten + after.sectorsDiscarded - before.sectorsDiscarded;
}
