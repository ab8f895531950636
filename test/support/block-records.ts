/**
 * Records and blocks for the block tests (test/block-file.test.ts, test/block-merge.test.ts):
 * records as a create stores them, from a few generated choices, written into real block files in
 * temporary folders, and the helpers that read their answers.
 */
import fc from 'fast-check';
import type { Test } from 'tap';
import { presentEventJson } from '../../src/events/present.js';
import { BlockReader } from '../../src/store/block/block-reader.js';
import type { BlockSet } from '../../src/store/block/block-set.js';
import { blockRowOf, encodeBlock, writeBlockFile } from '../../src/store/block/block-writer.js';
import { HeadIndex } from '../../src/store/head/head-index.js';
import type { CreatedAtCursor, Direction } from '../../src/store/index/created-at-cursors.js';
import { plannedPrefixKeys } from '../../src/store/index/index-keys.js';
import { encodeRecord, frameRecordBytes } from '../../src/store/index/record-codec.js';
import type { EventRecord } from '../../src/store/record/event-record.js';
import { timeOrderedId } from '../../src/store/record/ids.js';
import { tempDataDir } from './store-server.js';

const DEVICES = ['cam-1', 'cam-2', 'gate-3'];
const CLASSES = ['person', 'cat', 'forklift'];

/** A record as a create stores it, from a few generated choices. */
export function recordOf(createdAt: number, pick: RecordChoices): EventRecord {
  return {
    id: timeOrderedId(1_700_000_000_000 + createdAt), created_at: createdAt, solution: pick.shift === null ? null : 'line-a', workflow_id: null, workflow_version: null,
    inference_timestamp: '2026-12-07T10:00:00Z', device_id: DEVICES[pick.device], stream_id: null, image_id: null,
    event_schema: 'quality_check', event_data: { result: 'pass' },
    custom_metadata: pick.shift === null ? {} : { shift: pick.shift, line: 'a' },
    images: [{
      file_id: null, input_file_id: null, label: null, classifications: [], instance_segmentations: [], keypoints: [], metadata: {},
      object_detections: pick.classes.map((c) => ({ class: CLASSES[c], x: 1, y: 2, width: 3, height: 4, confidence: 0.9 })),
    }],
    videos: [], local_only_files: [], display_image_position: null, original_file_count: 0, current_file_count: 0,
    draft: pick.draft, finalized_at: pick.draft ? null : createdAt, auto_finalized_at: null,
  };
}

/** The choices a generated record is made from (`recordOf`). */
export interface RecordChoices {
  device: number;
  draft: boolean;
  classes: number[];
  shift: number | null;
}

export const pickArbitrary: fc.Arbitrary<RecordChoices> = fc.record({
  device: fc.nat(DEVICES.length - 1),
  draft: fc.boolean(),
  classes: fc.uniqueArray(fc.nat(CLASSES.length - 1), { maxLength: 3 }),
  shift: fc.option(fc.nat(2)),
});

/** Every value a cursor gives from `from` on, seeking one past the last each time. */
export function drain(cursor: CreatedAtCursor, from: number, direction: Direction): number[] {
  const values: number[] = [];
  for (let v = cursor.seek(from); v !== undefined; v = cursor.seek(direction === 'asc' ? v + 1 : v - 1)) values.push(v);
  cursor.close();
  return values;
}

/** A record's layout-2 bytes, as a record frame keeps them. */
export const recordBytesOf = (record: EventRecord): Buffer => frameRecordBytes(encodeRecord(record, presentEventJson));

/** Writes a block of `records` to a new temporary folder and opens it. */
export async function blockOf(records: EventRecord[]): Promise<BlockReader> {
  const rows = records.map((record) => blockRowOf(record, recordBytesOf(record)));
  const { file } = await writeBlockFile(tempDataDir(), 'blk-test.eeb', encodeBlock(rows, { segment: 7, offset: 4096 }));
  return BlockReader.open(file);
}

/** The head's index of `records` (head/head-index.ts), what the blocks' answers are checked against. */
export function headIndexOf(records: readonly EventRecord[]): HeadIndex {
  const order = records.map((r) => r.created_at);
  const head = new HeadIndex(() => order);
  for (const record of records) head.set(record.created_at, record);
  return head;
}

/** A question a plan asks an index: a prefix (an index into the records' prefixes), a window of created_at offsets, a direction. */
export interface Question {
  prefix: number;
  lo: number;
  span: number;
  direction: Direction;
}

/** One to eight questions. */
export const questionsArbitrary: fc.Arbitrary<Question[]> = fc.array(
  fc.record({ prefix: fc.nat(), lo: fc.nat(3000), span: fc.nat(3000), direction: fc.constantFrom<Direction>('asc', 'desc') }),
  { minLength: 1, maxLength: 8 },
);

/**
 * Checks that `blocks` answer every question as the head's index of `records` does (keyRange,
 * eventRange, estimate, has; created_at from 1000 on), give each record back byte for byte and
 * find it by id, and that each block reads back whole.
 * @returns the questions checked
 */
export function sameAsHead(t: Test, blocks: BlockSet, records: readonly EventRecord[], questions: Question[]): number {
  const head = headIndexOf(records);
  const order = records.map((r) => r.created_at);
  const prefixes = [...new Set(records.flatMap(plannedPrefixKeys)), '["d","nobody"]'].map((key) => JSON.parse(key) as (string | number)[]);
  t.same(blocks.bounds(), head.bounds());
  for (const { prefix: p, lo, span, direction } of questions) {
    const prefix = prefixes[p % prefixes.length];
    const [from, to] = [lo + 1000, lo + span + 1000];
    const start = direction === 'asc' ? -Infinity : Infinity;
    t.same(drain(blocks.keyRange(prefix, from, to, direction), start, direction), drain(head.keyRange(prefix, from, to, direction), start, direction), 'keyRange');
    t.same(drain(blocks.eventRange(from, to, direction), start, direction), drain(head.eventRange(from, to, direction), start, direction), 'eventRange');
    t.equal(blocks.estimate([prefix], from, to), head.estimate([prefix], from, to), 'estimate');
    const probe = order[p % order.length];
    if (probe !== undefined) t.equal(blocks.has(prefix, probe), head.has(prefix, probe), 'has');
  }
  for (const record of records) {
    if (blocks.createdAtOf(record.id) !== record.created_at) t.fail(`id ${record.id} not found at its created_at`);
    if (!blocks.record(record.created_at)?.equals(recordBytesOf(record))) t.fail(`record at ${record.created_at} does not read back byte for byte`);
  }
  for (const block of blocks.blocks) t.same(block.damagedSections(64), [], 'every section reads back whole');
  return questions.length;
}

/**
 * The records of generated creates, created_at from 1000 on by each create's `gap` (µs), and
 * the stretches they fall into as blocks: a new one after each create marked `cut`, as
 * checkpoints would cut them.
 */
export function recordsInStretches(creates: readonly { gap: number; pick: RecordChoices; cut: boolean }[]): { records: EventRecord[]; stretches: EventRecord[][] } {
  let createdAt = 1000;
  const records = creates.map(({ gap, pick }) => recordOf((createdAt += gap), pick));
  const stretches: EventRecord[][] = [[]];
  creates.forEach(({ cut }, i) => {
    stretches[stretches.length - 1].push(records[i]);
    if (cut && i < creates.length - 1) stretches.push([]);
  });
  return { records, stretches };
}
