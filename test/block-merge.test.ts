/**
 * Merges of blocks (src/store/block/block-merge.ts; docs/STORAGE.md, "Blocks"): several blocks
 * merged into one, with the events deleted since left out and the records updated since in place
 * of theirs, answer every plan question as the head's index of the records as they now are, and
 * give each record back byte for byte. A merge of blocks whose events were all deleted writes
 * nothing; a damaged block is never merged into a whole one.
 */
import fs from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import t from 'tap';
import { BlockDamaged } from '../src/store/block/block-format.js';
import { mergeBlocks } from '../src/store/block/block-merge.js';
import { BlockReader } from '../src/store/block/block-reader.js';
import { BlockSet } from '../src/store/block/block-set.js';
import { blockRowOf, type BlockRow } from '../src/store/block/block-writer.js';
import type { EventRecord } from '../src/store/record/event-record.js';
import { blockOf, pickArbitrary, questionsArbitrary, recordBytesOf, recordOf, recordsInStretches, sameAsHead } from './support/block-records.js';
import { tempDataDir } from './support/store-server.js';

/** A record finalized at `at` (µs): a draft no longer, so its drafts posting goes. */
const finalized = (record: EventRecord, at: number): EventRecord => ({ ...record, draft: false, finalized_at: at });

t.test('a merge answers as the head index of the records as deleted and updated since', async (t) => {
  let checked = 0;
  await fc.assert(fc.asyncProperty(
    fc.array(fc.record({ gap: fc.integer({ min: 1, max: 50 }), pick: pickArbitrary, cut: fc.boolean(), change: fc.constantFrom('none', 'none', 'deleted', 'finalized') }), { minLength: 2, maxLength: 60 }),
    questionsArbitrary,
    async (creates, questions) => {
      const { records, stretches } = recordsInStretches(creates);
      const createdAt = records[records.length - 1].created_at;
      const blocks = await Promise.all(stretches.map(blockOf));
      const changeOf = new Map(records.map((record, i) => [record.created_at, creates[i].change]));
      const updates = new Map<number, BlockRow>();
      const now = records.flatMap((record) => {
        const change = changeOf.get(record.created_at);
        if (change === 'deleted') return [];
        if (change !== 'finalized') return [record];
        const updated = finalized(record, createdAt + 1);
        updates.set(record.created_at, blockRowOf(updated, recordBytesOf(updated)));
        return [updated];
      });
      const dir = tempDataDir();
      const merged = await mergeBlocks(blocks, { deleted: (at) => changeOf.get(at) === 'deleted', updated: (at) => updates.get(at) }, dir, 'blk-merged.eeb');
      for (const block of blocks) block.close();
      if (now.length === 0) {
        t.equal(merged, undefined, 'every event deleted: no block');
        t.same(fs.readdirSync(dir), [], 'and no file');
        return;
      }
      t.equal(merged?.rows, now.length);
      const reader = BlockReader.open(merged!.file);
      try {
        t.same(reader.toc.covers, blocks[blocks.length - 1].toc.covers, 'the merge covers the log as far as its newest block');
        checked += sameAsHead(t, new BlockSet([reader]), now, questions);
      } finally {
        reader.close();
      }
    },
  ), { numRuns: 40 });
  t.ok(checked > 40);
});

t.test('a damaged block is never merged into a whole one', async (t) => {
  const records = Array.from({ length: 10 }, (_, i) => recordOf(100 + i, { device: i % 3, draft: false, classes: [], shift: null }));
  const [older, newer] = [await blockOf(records.slice(0, 5)), await blockOf(records.slice(5))];
  t.teardown(() => { older.close(); newer.close(); });
  const bytes = fs.readFileSync(newer.file);
  bytes[newer.toc.sections.records.offset + 7] ^= 0x01;
  fs.writeFileSync(newer.file, bytes);
  const dir = tempDataDir();
  await t.rejects(mergeBlocks([older, newer], { deleted: () => false, updated: () => undefined }, dir, 'blk-merged.eeb'), BlockDamaged);
  t.same(fs.readdirSync(dir).filter((name) => !name.startsWith('.')), [], 'nothing written');
  t.equal(path.basename(newer.file), 'blk-test.eeb');
});
