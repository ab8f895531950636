/**
 * What `edge-events check` reads of the index beyond its pages and its locations (store-check.ts):
 * every record read back as its event, and the segment files of the log it has no entry for.
 */
import { wholeRecord, type RecordPresenter } from '../index/record-codec.js';
import { indexedLogPosition, type StoreDatabases } from '../index/lmdb-env.js';
import type { IndexAgainstLog } from './check-report.js';
import { isGarbageSegment } from './unknown-segments.js';

/** Records named in the report, at most. */
const LISTED_RECORDS = 50;

/**
 * Reads every record of the index back (record-codec.ts `wholeRecord`), as the scrub does one
 * home at a time: a record that does not is counted, the first LISTED_RECORDS named by created_at.
 */
export function checkRecords(dbs: StoreDatabases, out: IndexAgainstLog, present: RecordPresenter): void {
  for (const { key, value } of dbs.events.getRange()) {
    const record = wholeRecord(value, present);
    if (record && dbs.eventIds.get(record.id) === key) continue;
    out.recordsNotReadingBack++;
    if (out.recordsNotReadingBackAt.length < LISTED_RECORDS) out.recordsNotReadingBackAt.push(key);
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
