/**
 * Merges blocks into one (docs/STORAGE.md, "Blocks"), as Prometheus's compaction merges its
 * two-hour blocks into larger ones: the blocks' rows in created_at order, less the events deleted
 * since (tombstones), with the records updated since (the overlay) in place of theirs. Rows
 * neither deleted nor updated keep their record bytes and postings as read, so a merge decodes
 * no record.
 */
import type { BlockReader } from './block-reader.js';
import type { BlockRow } from './block-format.js';
import { encodeBlock, writeBlockFile } from './block-writer.js';

/** What a merge folds in, by created_at (µs). */
export interface MergeChanges {
  /** True for an event deleted since its block was written (a tombstone). */
  deleted(createdAt: number): boolean;
  /** The event's row as updated since its block was written (a finalize, an attach), or undefined. */
  updated(createdAt: number): BlockRow | undefined;
}

/**
 * The rows of a merge of `blocks`, in created_at order.
 * @param blocks disjoint, oldest first (a BlockSet's)
 * @throws BlockDamaged when a block's records or postings fail their CRC: a damaged block is
 *   never merged into a whole one
 */
export function mergedRows(blocks: readonly BlockReader[], changes: MergeChanges): BlockRow[] {
  const rows: BlockRow[] = [];
  for (const block of blocks) {
    for (const row of block.allRows()) {
      if (!changes.deleted(row.createdAt)) rows.push(changes.updated(row.createdAt) ?? row);
    }
  }
  return rows;
}

/**
 * Writes the merge of `blocks` as the block file `name` in `dir` (block-writer.ts
 * `writeBlockFile`), covering the log as far as the newest of them does. Removing the blocks it
 * replaces, once the catalogue names the new one, is the caller's.
 * @returns the new block's path, size (bytes) and rows; undefined when every event was deleted
 * @throws BlockDamaged as `mergedRows`; the fs error of the write
 */
export async function mergeBlocks(blocks: readonly BlockReader[], changes: MergeChanges, dir: string, name: string): Promise<{ file: string; bytes: number; rows: number } | undefined> {
  const rows = mergedRows(blocks, changes);
  if (rows.length === 0) return undefined;
  const written = await writeBlockFile(dir, name, encodeBlock(rows, blocks[blocks.length - 1].toc.covers));
  return { ...written, rows: rows.length };
}
