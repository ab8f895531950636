/**
 * What `edge-events check` reads of the index beyond its pages and its locations (store-check.ts):
 * every record read back as its event, and the segment files of the log it has no entry for.
 */
import { wholeRecord, type RecordPresenter } from '../index/record-codec.js';
import { indexedLogPosition, type StoreDatabases } from '../index/lmdb-env.js';
import type { IndexAgainstLog } from './check-report.js';
import type { StoredEvents } from '../read/stored-events.js';
import { isGarbageSegment } from './unknown-segments.js';

/** Records named in the report, at most. */
const LISTED_RECORDS = 50;

/**
 * Reads every record of the index back (record-codec.ts `wholeRecord`), as the scrub does one
 * home at a time: LMDB's records, and every block against its sections' CRC32C
 * (block-reader.ts `damagedSections`) with each of its rows not hidden. A record that does not
 * read back is counted, the first LISTED_RECORDS named by created_at; a block with a damaged
 * table (locations, ids, postings) counts every row it holds, since none is found as it should be.
 */
export function checkRecords(stored: StoredEvents, out: IndexAgainstLog, present: RecordPresenter): void {
  const { dbs } = stored;
  const notReadingBack = (createdAt: number): void => {
    out.recordsNotReadingBack++;
    if (out.recordsNotReadingBackAt.length < LISTED_RECORDS) out.recordsNotReadingBackAt.push(createdAt);
  };
  for (const { key, value } of dbs.events.getRange()) {
    const record = wholeRecord(value, present);
    if (!record || dbs.eventIds.get(record.id) !== key) notReadingBack(key);
  }
  for (const block of stored.blocks().blocks) {
    const whole = block.damagedSections().every((section) => section === 'records'); // a record is checked by its own CRC
    for (const createdAt of block.createdAtColumn()) {
      if (dbs.events.doesExist(createdAt) || !stored.inBlock(createdAt)) continue;
      if (!whole || !readsBack(stored, createdAt, present)) notReadingBack(createdAt);
    }
  }
}

/** The block record of the event created at `createdAt` (µs) reads back as the event its id names. */
function readsBack(stored: StoredEvents, createdAt: number, present: RecordPresenter): boolean {
  try {
    const record = wholeRecord(stored.value(createdAt)!, present);
    return record !== undefined && stored.createdAtOf(record.id) === createdAt;
  } catch {
    return false; // its CRC32C fails
  }
}

/**
 * The segment files of `onDisk` that the index has no entry for, that are not garbage
 * (unknown-segments.ts) and that hold frames before the index's log position: the open replays
 * what follows the position, and so knows a segment it replays frames of.
 */
export async function unknownSegmentsOf(dbs: StoreDatabases, known: ReadonlyMap<number, unknown>, blobsDir: string, onDisk: number[]): Promise<number[]> {
  const unknown: number[] = [];
  const position = indexedLogPosition(dbs);
  for (const segment of onDisk) {
    const covered = position !== undefined && (segment < position.segment || (segment === position.segment && position.offset > 0));
    if (known.has(segment) || !covered) continue;
    if (!(await isGarbageSegment(dbs, blobsDir, segment))) unknown.push(segment);
  }
  return unknown;
}
