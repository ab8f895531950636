/**
 * A checkpoint's creates written as one block file (docs/STORAGE.md, "Blocks"): the records and
 * their postings in one sequential write, made durable and named before the checkpoint's LMDB
 * commit enters it in the catalogue. A block file the catalogue does not name (a crash between
 * the two) is removed at the next open, and the log replays its creates again.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { blockRowOf, encodeBlock, writeBlockFile } from '../block/block-writer.js';
import { blocksChanged, type BlockEntry, type LogPosition, type StoreDatabases } from '../index/lmdb-env.js';
import { frameRecordBytes } from '../index/record-codec.js';
import type { LoggedCreate } from '../head/head.js';
import { isCanonicalId } from '../record/ids.js';
import type { StoredEvents } from '../read/stored-events.js';

/** A block written for a checkpoint, to enter in the catalogue in its commit. */
export interface WrittenBlock {
  /** created_at (µs) of its oldest row: its key in the catalogue. */
  oldest: number;
  entry: BlockEntry;
}

/** The name of the block file of rows created from `oldest` to `newest` (µs) at merge level `level`. */
export function blockFileName(oldest: number, newest: number, level: number): string {
  return `blk-${oldest}-${newest}-L${level}.eeb`;
}

/**
 * Whether `creates` go to a block: every one a create's own record (no record copy, which a
 * rebuild replays out of created_at order), with a canonical id (the ids table keeps an id's 16
 * bytes), in ascending created_at after the newest live block's last row (blocks hold disjoint
 * stretches: block-set.ts). Creates that do not are indexed in LMDB as before blocks.
 */
export function goesToBlock(stored: StoredEvents, creates: readonly LoggedCreate[]): boolean {
  if (creates.length === 0) return false;
  let last = stored.blocks().bounds()?.newest ?? -Infinity;
  for (const { record, copy, value } of creates) {
    if (copy || !(record.created_at > last) || !isCanonicalId(record.id) || !hasLayout3(value)) return false;
    last = record.created_at;
  }
  return true;
}

/** The value is layout 3 (record-codec.ts), whose layout-2 record a block keeps. */
function hasLayout3(value: Buffer): boolean {
  try {
    frameRecordBytes(value);
    return true;
  } catch {
    return false;
  }
}

/**
 * Writes `creates` (as `goesToBlock` accepts them) as a level-0 block file in DATA_DIR/blocks,
 * durably (block-writer.ts `writeBlockFile`), covering the log up to `covers`.
 * @returns what the checkpoint's commit enters in the catalogue (`enterBlockSync`)
 * @throws the fs error of the write
 */
export async function writeCheckpointBlock(stored: StoredEvents, creates: readonly LoggedCreate[], covers: LogPosition): Promise<WrittenBlock> {
  const rows = creates.map(({ record, value }) => blockRowOf(record, frameRecordBytes(value)));
  const oldest = rows[0].createdAt;
  const newest = rows[rows.length - 1].createdAt;
  const name = blockFileName(oldest, newest, 0);
  await fs.mkdir(stored.blocksDir, { recursive: true });
  const { bytes } = await writeBlockFile(stored.blocksDir, name, encodeBlock(rows, covers));
  return { oldest, entry: { name, newest, rows: rows.length, bytes, level: 0 } };
}

/** Enters `block` in the catalogue; call inside the checkpoint's write transaction. */
export function enterBlockSync(dbs: StoreDatabases, block: WrittenBlock): void {
  dbs.blocks.putSync(block.oldest, block.entry);
  blocksChanged(dbs);
}

/**
 * Removes from `blocksDir` what the catalogue does not name: temporary files of a write or a
 * merge cut short, and blocks written by a checkpoint or a merge whose commit never came. Run at
 * open, before anything writes a block.
 * @returns how many files it removed
 * @throws the fs error when the folder cannot be read
 */
export async function removeUnnamedBlocks(dbs: StoreDatabases, blocksDir: string): Promise<number> {
  let names: string[];
  try {
    names = await fs.readdir(blocksDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw err;
  }
  const named = new Set<string>();
  for (const { value } of dbs.blocks.getRange()) named.add(value.name);
  const unnamed = names.filter((name) => !named.has(name));
  await Promise.all(unnamed.map((name) => fs.rm(path.join(blocksDir, name), { force: true, recursive: true })));
  return unnamed.length;
}
