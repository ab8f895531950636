/**
 * Merges of live blocks (docs/STORAGE.md, "Blocks", "Merges"), run by the lifecycle worker, as
 * Prometheus's compaction merges its blocks into larger ones: each step takes one run of blocks,
 * writes their rows less the hidden ones, with the events updated since folded back in, as one
 * block of the next level, swaps the catalogue in one commit and removes the files it replaced.
 * A block whose rows are all deleted (by retention or a limit) goes without a write.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { mergedRows } from '../block/block-merge.js';
import type { BlockReader } from '../block/block-reader.js';
import { blockRowOf, encodeBlock, writeBlockFile, type BlockRow } from '../block/block-writer.js';
import { blocksChanged, readEventValue, type BlockEntry, type StoreDatabases } from '../index/lmdb-env.js';
import { decodeRecord, recordCopyBytes, type RecordPresenter } from '../index/record-codec.js';
import { isCanonicalId } from '../record/ids.js';
import { leaveLmdbSync, readValueOf, type ReadValue } from './block-rows.js';
import type { StoredEvents } from '../read/stored-events.js';
import { BLOCKS_IN_FLIGHT_KEY, blockFileName } from './checkpoint-block.js';

/** Blocks of one level a merge takes at most, and waits for before it merges them. */
export const MERGE_FAN_IN = 8;

/**
 * Largest block a merge writes (bytes): a merge holds its rows in memory, and the blocks of a
 * store of millions of small events stay tens, not thousands.
 */
export const MAX_MERGED_BYTES = 32 * 1024 * 1024;

/** A block as the catalogue lists it: its oldest row's created_at (µs, the key) and its entry. */
export interface CatalogueBlock {
  oldest: number;
  entry: BlockEntry;
}

/**
 * The blocks the next merge takes, oldest first, or undefined when none is due:
 * - the oldest block with half its rows or more hidden, alone (its hidden rows' bytes back);
 * - else the oldest run of MERGE_FAN_IN adjacent blocks of one level, each under half of
 *   MAX_MERGED_BYTES, together at most MAX_MERGED_BYTES.
 * @param hiddenIn how many rows of a block are hidden
 */
export function plannedMerge(blocks: readonly CatalogueBlock[], hiddenIn: (block: CatalogueBlock) => number): CatalogueBlock[] | undefined {
  const sparse = blocks.find((block) => hiddenIn(block) * 2 >= block.entry.rows);
  if (sparse) return [sparse];
  let run: CatalogueBlock[] = [];
  let bytes = 0;
  for (const block of blocks) {
    const { level, bytes: size } = block.entry;
    const fits = size * 2 < MAX_MERGED_BYTES && run.length > 0 && run[0].entry.level === level && bytes + size <= MAX_MERGED_BYTES;
    if (!fits) {
      run = size * 2 < MAX_MERGED_BYTES ? [block] : [];
      bytes = run.length > 0 ? size : 0;
      continue;
    }
    run.push(block);
    bytes += size;
    if (run.length === MERGE_FAN_IN) return run;
  }
  return undefined;
}

/** What one merge did. */
export interface MergeReport {
  /** Blocks it replaced. */
  blocks: number;
  /** Rows of the block it wrote (0: none written, every row was hidden). */
  rows: number;
  /** Bytes of the block it wrote. */
  bytes: number;
  /** Events LMDB held since an update that it wrote back into a block (`foldedBack`). */
  folded: number;
}

/**
 * Runs one merge when one is due (`plannedMerge`). Its commit checks that the catalogue still
 * names the blocks it read (a reset may have cleared it meanwhile: the new file is then removed
 * and nothing changes). Rows hidden after it read them stay hidden in the new block, by their
 * created_at. The events of its hidden rows that LMDB holds as updated go into the new block as
 * they now are, and its commit takes them out of LMDB (`foldedBack`; one changed since it read
 * them stays in LMDB, its new row hidden).
 * @param present the store's record presenter, for the records of an older layout LMDB holds
 * @param flushed resolves once the merge's commit is on disk: the old files go after it
 * @param plan which blocks to merge (default `plannedMerge`)
 * @returns what it did, or undefined when no merge was due
 * @throws BlockDamaged when a block it reads fails its CRC (a damaged block is never merged: the
 *   scrub and `edge-events check` name it); the fs error of the write, the lmdb error of the commit
 */
export async function mergeStep(stored: StoredEvents, present: RecordPresenter, flushed: () => Promise<void>, planned = plannedMerge): Promise<MergeReport | undefined> {
  const { dbs } = stored;
  const catalogue: CatalogueBlock[] = [...dbs.blocks.getRange()].map(({ key, value }) => ({ oldest: key, entry: value }));
  const plan = planned(catalogue, (block) => dbs.blockHidden.getKeysCount({ start: block.oldest, end: block.entry.newest + 1 }));
  if (!plan) return undefined;
  const readers = readersOf(stored, plan);
  const hidden = new Set<number>(dbs.blockHidden.getKeys({ start: plan[0].oldest, end: plan[plan.length - 1].entry.newest + 1 }));
  const folded = foldedBack(dbs, hidden, present);
  const rows = mergedRows(readers, { deleted: (createdAt) => hidden.has(createdAt) && !folded.has(createdAt), updated: (createdAt) => folded.get(createdAt)?.row });
  const level = Math.max(...plan.map((block) => block.entry.level)) + 1;
  let written: CatalogueBlock | undefined;
  if (rows.length > 0) {
    const name = blockFileName(rows[0].createdAt, rows[rows.length - 1].createdAt, level);
    // Named before it exists: a crash before the swap leaves a file the next open knows to remove.
    await dbs.root.transaction(() => dbs.meta.putSync(BLOCKS_IN_FLIGHT_KEY, [name]));
    const { bytes } = await writeBlockFile(stored.blocksDir, name, encodeBlock(rows, readers[readers.length - 1].toc.covers));
    written = { oldest: rows[0].createdAt, entry: { name, newest: rows[rows.length - 1].createdAt, rows: rows.length, bytes, level } };
  }
  const swapped = await dbs.root.transaction(() => swapSync(dbs, plan, written, hidden, folded));
  if (!swapped) {
    if (written) await fs.rm(path.join(stored.blocksDir, written.entry.name), { force: true });
    return undefined;
  }
  await flushed();
  await Promise.all(plan.map((block) => fs.rm(path.join(stored.blocksDir, block.entry.name), { force: true })));
  return { blocks: plan.length, rows: rows.length, bytes: written?.entry.bytes ?? 0, folded: folded.size };
}

/** Events LMDB took over from the blocks a merge reads, by created_at (µs): their values as read and their rows. */
type Folded = Map<number, { was: ReadValue; row: BlockRow }>;

/**
 * The events of `hidden` rows that LMDB holds (moved there by an update since their block was
 * written: block-rows.ts `moveToLmdbSync`), as they now are: the merge writes them into its block
 * and its commit takes them out of LMDB (docs/STORAGE.md, "Blocks in the running store").
 */
function foldedBack(dbs: StoreDatabases, hidden: ReadonlySet<number>, present: RecordPresenter): Folded {
  const folded: Folded = new Map();
  for (const createdAt of hidden) {
    const value = readEventValue(dbs, createdAt);
    if (!value) continue; // deleted, or re-stamped to another created_at
    const record = decodeRecord(value);
    if (!isCanonicalId(record.id)) continue;
    folded.set(createdAt, { was: readValueOf(value), row: blockRowOf(record, Buffer.from(recordCopyBytes(value, present))) });
  }
  return folded;
}

/** The open readers of the blocks of `plan`, from this thread's live blocks. */
function readersOf(stored: StoredEvents, plan: readonly CatalogueBlock[]): BlockReader[] {
  const byName = new Map(stored.blocks().blocks.map((reader) => [path.basename(reader.file), reader]));
  return plan.map((block) => {
    const reader = byName.get(block.entry.name);
    if (!reader) throw new Error(`block ${block.entry.name} is in the catalogue but not open`);
    return reader;
  });
}

/**
 * The merge's commit: `plan` out of the catalogue, `written` in, the hidden rows it left out
 * forgotten; call inside a write transaction.
 * @returns false, changing nothing, when the catalogue no longer names every block of `plan`
 */
function swapSync(dbs: StoreDatabases, plan: readonly CatalogueBlock[], written: CatalogueBlock | undefined, hidden: ReadonlySet<number>, folded: Folded): boolean {
  if (plan.some((block) => dbs.blocks.get(block.oldest)?.name !== block.entry.name)) return false;
  for (const block of plan) dbs.blocks.removeSync(block.oldest);
  if (written) dbs.blocks.putSync(written.oldest, written.entry);
  for (const createdAt of hidden) dbs.blockHidden.removeSync(createdAt);
  for (const [createdAt, { was }] of folded) leaveLmdbSync(dbs, createdAt, was); // hidden again when it changed since
  dbs.meta.putSync(BLOCKS_IN_FLIGHT_KEY, plan.map((block) => block.entry.name)); // removed after the commit, or by the next open
  blocksChanged(dbs);
  return true;
}
