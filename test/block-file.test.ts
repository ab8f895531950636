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
import { BlockDamaged, SECTIONS, TOC_BYTES, type SectionName } from '../src/store/block/block-format.js';
import { BlockReader } from '../src/store/block/block-reader.js';
import { BlockSet } from '../src/store/block/block-set.js';
import { blockRowOf, encodeBlock, writeBlockFile } from '../src/store/block/block-writer.js';
import { plannedPrefixKeys } from '../src/store/index/index-keys.js';
import { decodeRecord } from '../src/store/index/record-codec.js';
import { blockOf, drain, pickArbitrary, questionsArbitrary, recordBytesOf, recordOf, recordsInStretches, sameAsHead } from './support/block-records.js';
import { tempDataDir } from './support/store-server.js';

t.test('blocks answer every plan question as the head index of the same records does, one block or several', async (t) => {
  let checked = 0;
  await fc.assert(fc.asyncProperty(
    fc.array(fc.record({ gap: fc.integer({ min: 1, max: 50 }), pick: pickArbitrary, cut: fc.boolean() }), { minLength: 1, maxLength: 60 }),
    questionsArbitrary,
    async (creates, questions) => {
      const { records, stretches } = recordsInStretches(creates);
      const blocks = new BlockSet(await Promise.all(stretches.map(blockOf)));
      try {
        checked += sameAsHead(t, blocks, records, questions);
        t.equal(blocks.record(records[0].created_at - 1), undefined, 'no record where no event was created');
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
