/**
 * What a rebuild salvages from the index it replaced (docs/STORAGE.md, "A damaged index"): every
 * record the damaged index still reads whose event the log holds no frame of (its log copy was
 * damaged too, or it is a record an engine before record copies left in the index alone) is
 * written into a new segment as a record copy, its files placed where the log holds their frames,
 * so the rebuild's replay indexes it with the rest. Events whose record neither the log nor the
 * damaged index gives back are named as lost.
 */
import path from 'node:path';
import { BlockReader } from '../block/block-reader.js';
import { fileIdsOf } from '../index/index-keys.js';
import { decodeRecord, recordCopyBytes, type RecordPresenter } from '../index/record-codec.js';
import { salvageRecords, type Salvage, type SalvagedRecord } from '../index/index-salvage.js';
import { SegmentAppender, type FrameToAppend } from '../log/blob-log.js';
import { encodeRecordCopy } from '../log/record-copy-frame.js';
import { RebuildPlan } from './rebuild-plan.js';
import { marksRecordCopies, RECORD_COPIES_VERSION } from './record-copies-upgrade.js';
import { segmentsOnDisk } from './store-check.js';

/** Record copies per append of a salvage. */
const SALVAGE_APPEND_FRAMES = 512;

/** What a salvage gave back, and what it could not. */
export interface SalvageReport {
  /** Records written back into the log from the damaged index. */
  salvaged: number;
  /** Ids of events the damaged index names that neither it nor the log gives back. */
  lost: string[];
  /**
   * The damaged index could not be read to its end (its reader crashed) and did not count by
   * record copies (an engine before them): events it alone held may be lost unnamed. An index
   * that counted by them held no event the log lacks, but for those damage in the log names.
   */
  incomplete: boolean;
}

/**
 * Salvages the records of the damaged index in `damagedDir` that the log in `blobsDir` lacks into a
 * new segment after the last one (module comment).
 * @param present the store's presenter: records of older layouts are encoded again with it
 * @throws the error of spawning the reader, the fs error of a read or an append
 */
export async function salvageIntoLog(damagedDir: string, blobsDir: string, present: RecordPresenter): Promise<SalvageReport> {
  const salvage = await salvageRecords(damagedDir);
  salvage.records.push(...blockRecords(damagedDir, salvage));
  const onDisk = segmentsOnDisk(blobsDir);
  const plan = await RebuildPlan.scan(blobsDir, onDisk, { withBlobs: true });
  const lost = (salvage.unreadable ?? []).filter((id) => !plan.knows(id));
  const frames: FrameToAppend[] = [];
  for (const record of salvage.records) {
    if (plan.knows(record.id)) continue;
    const frame = copyOf(record, salvage, plan, present);
    if (frame) frames.push(frame);
    else lost.push(record.id);
  }
  if (frames.length > 0) {
    const segment = (onDisk.at(-1) ?? 0) + 1;
    const appender = new SegmentAppender(blobsDir, () => segment);
    try {
      for (let i = 0; i < frames.length; i += SALVAGE_APPEND_FRAMES) await appender.append(frames.slice(i, i + SALVAGE_APPEND_FRAMES));
    } finally {
      await appender.close();
    }
  }
  const countedCopies = salvage.recordCopies === RECORD_COPIES_VERSION || marksRecordCopies(blobsDir);
  return { salvaged: frames.length, lost, incomplete: salvage.unreadable === null && !countedCopies };
}

/**
 * The records of the blocks the damaged index's catalogue names (moved beside it: index-rebuild.ts)
 * that are not hidden and that its LMDB did not give: each block's rows whose record reads back
 * against its CRC32C. None when the catalogue or its hidden rows did not read: a row hidden for a
 * deletion must not bring its event back.
 */
function blockRecords(damagedDir: string, salvage: Salvage): SalvagedRecord[] {
  if (!salvage.blocks) return [];
  const hidden = new Set(salvage.blocks.hidden);
  const known = new Set(salvage.records.map((record) => record.id));
  const records: SalvagedRecord[] = [];
  for (const name of salvage.blocks.names) {
    let block: BlockReader;
    try {
      block = BlockReader.open(path.join(damagedDir, 'blocks', name));
    } catch {
      continue; // a block that does not open gives nothing; the log's copies stand
    }
    try {
      for (const { id, createdAt } of block.idEntries()) {
        if (hidden.has(createdAt) || known.has(id)) continue;
        try {
          records.push({ id, createdAt, value: Buffer.from(block.record(createdAt)!) }); // a view until the next read
        } catch {
          // its CRC32C fails: the log's copy stands
        }
      }
    } finally {
      block.close();
    }
  }
  return records;
}

/** The record copy of a salvaged record, its files where the log holds their frames; undefined when its bytes do not decode. */
function copyOf({ id, value }: SalvagedRecord, salvage: Salvage, plan: RebuildPlan, present: RecordPresenter): FrameToAppend | undefined {
  try {
    const files = fileIdsOf(decodeRecord(value)).flatMap((fileId) => {
      const blob = plan.blobs.get(fileId);
      if (!blob) return [];
      return [{ fileId, contentType: salvage.files.get(fileId)?.contentType ?? 'application/octet-stream', ...blob }];
    });
    return { id, kind: 'copy', bytes: encodeRecordCopy({ record: recordCopyBytes(value, present), files }) };
  } catch {
    return undefined;
  }
}
