/**
 * Block files (src/store/block/; docs/STORAGE.md, "Blocks"): blocks written from records, one or
 * several read as one set, answer as the head's own index of the same records answers (the same
 * plan seeks in either: index-source.ts), give each record back byte for byte and find it by id; every section,
 * postings list and record is checked against its CRC32C, so a changed byte is named, never
 * served.
 */
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import t from 'tap';
import { presentEventJson } from '../src/events/present.js';
import { BlockDamaged, SECTIONS, TOC_BYTES, type SectionName } from '../src/store/block/block-format.js';
import { BlockReader } from '../src/store/block/block-reader.js';
import { BlockSet } from '../src/store/block/block-set.js';
import { blockRowOf, encodeBlock, writeBlockFile } from '../src/store/block/block-writer.js';
import { HeadIndex } from '../src/store/head/head-index.js';
import type { CreatedAtCursor, Direction } from '../src/store/index/created-at-cursors.js';
import { plannedPrefixKeys } from '../src/store/index/index-keys.js';
import { decodeRecord, encodeRecord, frameRecordBytes } from '../src/store/index/record-codec.js';
import type { EventRecord } from '../src/store/record/event-record.js';
import { timeOrderedId } from '../src/store/record/ids.js';
import { tempDataDir } from './support/store-server.js';

const DEVICES = ['cam-1', 'cam-2', 'gate-3'];
const CLASSES = ['person', 'cat', 'forklift'];

/** A record as a create stores it, from a few generated choices. */
function recordOf(createdAt: number, pick: { device: number; draft: boolean; classes: number[]; shift: number | null }): EventRecord {
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

const pickArbitrary = fc.record({
  device: fc.nat(DEVICES.length - 1),
  draft: fc.boolean(),
  classes: fc.uniqueArray(fc.nat(CLASSES.length - 1), { maxLength: 3 }),
  shift: fc.option(fc.nat(2)),
});

/** Every value a cursor gives from `from` on, seeking one past the last each time. */
function drain(cursor: CreatedAtCursor, from: number, direction: Direction): number[] {
  const values: number[] = [];
  for (let v = cursor.seek(from); v !== undefined; v = cursor.seek(direction === 'asc' ? v + 1 : v - 1)) values.push(v);
  cursor.close();
  return values;
}

/** A record's layout-2 bytes, as a record frame keeps them. */
const recordBytesOf = (record: EventRecord): Buffer => frameRecordBytes(encodeRecord(record, presentEventJson));

/** Writes a block of `records` to a new temporary folder and opens it. */
async function blockOf(records: EventRecord[]): Promise<BlockReader> {
  const rows = records.map((record) => blockRowOf(record, recordBytesOf(record)));
  const { file } = await writeBlockFile(tempDataDir(), 'blk-test.eeb', encodeBlock(rows, { segment: 7, offset: 4096 }));
  return BlockReader.open(file);
}

t.test('blocks answer every plan question as the head index of the same records does, one block or several', async (t) => {
  let checked = 0;
  await fc.assert(fc.asyncProperty(
    fc.array(fc.record({ gap: fc.integer({ min: 1, max: 50 }), pick: pickArbitrary, cut: fc.boolean() }), { minLength: 1, maxLength: 60 }),
    fc.array(fc.record({ prefix: fc.nat(), lo: fc.nat(3000), span: fc.nat(3000), direction: fc.constantFrom<Direction>('asc', 'desc') }), { minLength: 1, maxLength: 8 }),
    async (creates, questions) => {
      let createdAt = 1000;
      const records = creates.map(({ gap, pick }) => recordOf((createdAt += gap), pick));
      const order = records.map((r) => r.created_at);
      const head = new HeadIndex(() => order);
      for (const record of records) head.set(record.created_at, record);
      // A new block after each create marked `cut`, as checkpoints would cut them.
      const stretches: EventRecord[][] = [[]];
      creates.forEach(({ cut }, i) => {
        stretches[stretches.length - 1].push(records[i]);
        if (cut && i < creates.length - 1) stretches.push([]);
      });
      const blocks = new BlockSet(await Promise.all(stretches.map(blockOf)));
      try {
        const prefixes = [...new Set(records.flatMap(plannedPrefixKeys)), '["d","nobody"]'].map((key) => JSON.parse(key) as (string | number)[]);
        t.same(blocks.bounds(), head.bounds());
        for (const { prefix: p, lo, span, direction } of questions) {
          const prefix = prefixes[p % prefixes.length];
          const hi = lo + span + 1000;
          const from = direction === 'asc' ? -Infinity : Infinity;
          t.same(drain(blocks.keyRange(prefix, lo + 1000, hi, direction), from, direction), drain(head.keyRange(prefix, lo + 1000, hi, direction), from, direction), 'keyRange');
          t.same(drain(blocks.eventRange(lo + 1000, hi, direction), from, direction), drain(head.eventRange(lo + 1000, hi, direction), from, direction), 'eventRange');
          t.equal(blocks.estimate([prefix], lo + 1000, hi), head.estimate([prefix], lo + 1000, hi), 'estimate');
          const probe = order[p % order.length];
          t.equal(blocks.has(prefix, probe), head.has(prefix, probe), 'has');
          checked++;
        }
        for (const record of records) {
          if (blocks.createdAtOf(record.id) !== record.created_at) t.fail(`id ${record.id} not found at its created_at`);
          if (!blocks.record(record.created_at)?.equals(recordBytesOf(record))) t.fail(`record at ${record.created_at} does not read back byte for byte`);
        }
        t.equal(blocks.record(order[0] - 1), undefined, 'no record where no event was created');
        for (const block of blocks.blocks) t.same(block.damagedSections(64), [], 'every section reads back whole');
      } finally {
        for (const block of blocks.blocks) block.close();
      }
    },
  ), { numRuns: 40 });
  t.ok(checked > 40);
});

t.test('blocks whose stretches overlap are refused as one set', async (t) => {
  const first = await blockOf([recordOf(10, { device: 0, draft: false, classes: [], shift: null }), recordOf(20, { device: 0, draft: false, classes: [], shift: null })]);
  const second = await blockOf([recordOf(20, { device: 1, draft: false, classes: [], shift: null })]);
  t.teardown(() => { first.close(); second.close(); });
  t.throws(() => new BlockSet([first, second]), /overlap/);
  t.throws(() => new BlockSet([second, first]), /overlap or are out of order/);
});

t.test('a block of more than 65,536 rows keeps its postings as u32s and reads them back', async (t) => {
  const records = Array.from({ length: 70_000 }, (_, i) => recordOf(10 + i, { device: i % 3, draft: i % 1000 === 0, classes: [], shift: null }));
  const block = await blockOf(records);
  t.teardown(() => block.close());
  t.equal(block.rows, 70_000);
  const gate = drain(block.keyRange(['d', 'gate-3'], 69_000, Infinity, 'asc'), -Infinity, 'asc');
  t.same(gate, records.filter((r) => r.device_id === 'gate-3' && r.created_at >= 69_000).map((r) => r.created_at));
  t.same(drain(block.keyRange(['D'], -Infinity, Infinity, 'desc'), Infinity, 'desc').slice(0, 2), [69_010, 68_010], 'the newest drafts, past row 65,536');
  t.equal(block.createdAtOf(records[69_999].id), records[69_999].created_at);
  t.same(decodeRecord(block.record(records[69_999].created_at)!), records[69_999], 'the last record decodes as it was');
});

/** Writes a block of 20 records, flips a bit of the byte at `where(the block)`, and reports what opening and reading it do. */
async function damaged(where: (reader: BlockReader) => number): Promise<{ open?: unknown; read?: unknown; sections: SectionName[] }> {
  const records = Array.from({ length: 20 }, (_, i) => recordOf(100 + i, { device: i % 3, draft: false, classes: [i % 3], shift: i % 2 }));
  const whole = await blockOf(records);
  const offset = where(whole);
  whole.close();
  const bytes = fs.readFileSync(whole.file);
  bytes[offset] ^= 0x10;
  fs.writeFileSync(whole.file, bytes);
  let reader: BlockReader;
  try {
    reader = BlockReader.open(whole.file);
  } catch (err) {
    return { open: err, sections: [] };
  }
  try {
    for (const key of new Set(records.flatMap(plannedPrefixKeys))) drain(reader.keyRange(JSON.parse(key) as string[], -Infinity, Infinity, 'asc'), -Infinity, 'asc');
    for (const record of records) reader.record(record.created_at);
  } catch (err) {
    return { read: err, sections: reader.damagedSections() };
  } finally {
    reader.close();
  }
  return { sections: [] };
}

t.test('a changed byte anywhere in a block is named, never served', async (t) => {
  const middle = (name: SectionName) => (reader: BlockReader) => reader.toc.sections[name].offset + Math.floor(reader.toc.sections[name].length / 2);
  for (const name of ['locations', 'ids', 'postingsOffsets'] as const) {
    const { open } = await damaged(middle(name));
    t.ok(open instanceof BlockDamaged && open.message.includes(name), `${name}: the open refuses, naming it (${String(open)})`);
  }
  for (const name of ['records', 'postings'] as const) {
    const { open, read, sections } = await damaged(middle(name));
    t.equal(open, undefined, `${name}: the block opens`);
    t.ok(read instanceof BlockDamaged, `${name}: the read that meets it fails (${String(read)})`);
    t.same(sections, [name], `${name}: the scrub's check names the section`);
  }
  const { open: header } = await damaged(() => 3);
  t.ok(header instanceof BlockDamaged && header.message.includes('header'), `the header: the open refuses (${String(header)})`);
  const { open: end } = await damaged((reader) => fs.statSync(reader.file).size - TOC_BYTES + 3);
  t.ok(end instanceof BlockDamaged && end.message.includes('table of contents'), `the table of contents: the open refuses (${String(end)})`);
  t.equal(SECTIONS.length, 5);
});

t.test('a block is written durably under its name, or not at all', async (t) => {
  const dir = tempDataDir();
  const record = recordOf(5, { device: 0, draft: false, classes: [], shift: null });
  const rows = [blockRowOf(record, recordBytesOf(record))];
  const { file, bytes } = await writeBlockFile(dir, 'blk-5-5.eeb', encodeBlock(rows, { segment: 1, offset: 0 }));
  t.equal(fs.statSync(file).size, bytes);
  t.same(fs.readdirSync(dir), ['blk-5-5.eeb'], 'no temporary file is left');
  await t.rejects(writeBlockFile(path.join(dir, 'missing'), 'blk.eeb', encodeBlock(rows, { segment: 1, offset: 0 })), { code: 'ENOENT' });
  t.throws(() => encodeBlock([...rows, ...rows], { segment: 1, offset: 0 }), /ascending created_at/);
  t.throws(() => encodeBlock([], { segment: 1, offset: 0 }), /at least one event/);
});
