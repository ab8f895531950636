/**
 * A checkpoint's creates written as one block file (docs/STORAGE.md, "Blocks"): the records and
 * their postings in one sequential write, made durable and named before the checkpoint's LMDB
 * commit enters it in the catalogue. A block file the catalogue does not name (a crash between
 * the two) is removed at the next open, and the log replays its creates again.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { blockRowOf, encodeBlock, writeBlockFile } from '../block/block-writer.js';
import { blocksChanged, indexedLogPosition, type BlockEntry, type LogPosition, type StoreDatabases } from '../index/lmdb-env.js';
import { IndexDamaged } from '../index/index-file-check.js';
import { BlockReader } from '../block/block-reader.js';
import type { BlockToc } from '../block/block-format.js';
import { decodeRecord, encodeRecord, frameRecordBytes, type RecordPresenter } from '../index/record-codec.js';
import { applyUpdate, type RecordUpdate } from '../index/record-update.js';
import type { EventRecord } from '../record/event-record.js';
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
export async function writeCheckpointBlock(stored: StoredEvents, creates: readonly LoggedCreate[], covers: LogPosition, { prefixesOf, present, folds }: BlockOptions): Promise<WrittenBlock> {
  const rows = creates.map(({ record, value }) => {
    const updated = folds.records.get(record.created_at);
    if (updated) return blockRowOf(updated, frameRecordBytes(encodeRecord(updated, present)));
    return blockRowOf(record, frameRecordBytes(value), prefixesOf?.(record.created_at));
  });
  const oldest = rows[0].createdAt;
  const newest = rows[rows.length - 1].createdAt;
  const name = blockFileName(oldest, newest, 0);
  await fs.mkdir(stored.blocksDir, { recursive: true });
  const { bytes } = await writeBlockFile(stored.blocksDir, name, encodeBlock(rows, covers));
  return { oldest, entry: { name, newest, rows: rows.length, bytes, level: 0 } };
}

/** How a checkpoint's block is written. */
export interface BlockOptions {
  /** A create's index key prefixes as created, when known already (checkpoint-writer.ts `IndexOptions.prefixesOf`). */
  prefixesOf?: (createdAt: number) => readonly string[] | undefined;
  /** The store's record presenter, for the records `folds` updated. */
  present: RecordPresenter;
  /** The checkpoint's updates to its own creates (`foldUpdates`). */
  folds: Folds;
}

/** The checkpoint's updates to its own creates, applied (`foldUpdates`). */
export interface Folds {
  /** The records updated, by created_at (µs): copies, the creates' own records are left as they are. */
  records: Map<number, EventRecord>;
  /** The indexes, in the checkpoint's updates, of those applied. */
  applied: Set<number>;
}

/**
 * Applies the checkpoint's `updates` to its own `creates` (record-update.ts `applyUpdate`, in
 * log order, on their records decoded from their stored values), so that an event created and finalized, or given its
 * files, between two checkpoints goes into its block as it now is, and LMDB takes nothing of it.
 * An update that does not apply is left to the commit, as any other.
 */
export function foldUpdates(creates: readonly LoggedCreate[], updates: readonly RecordUpdate[]): Folds {
  const folds: Folds = { records: new Map(), applied: new Set() };
  if (updates.length === 0) return folds;
  const created = new Map(creates.map((create) => [create.record.created_at, create]));
  updates.forEach((update, i) => {
    const create = created.get(update.createdAt);
    if (!create) return;
    // From its stored value: the head's record of a create may leave out what only reads need
    // (prepared-create.ts), the value holds all of it.
    const record = folds.records.get(update.createdAt) ?? decodeRecord(create.value);
    if (!applyUpdate(record, update)) return;
    folds.records.set(update.createdAt, record);
    folds.applied.add(i);
  });
  return folds;
}

/** Enters `block` in the catalogue; call inside the checkpoint's write transaction. */
export function enterBlockSync(dbs: StoreDatabases, block: WrittenBlock): void {
  dbs.blocks.putSync(block.oldest, block.entry);
  blocksChanged(dbs);
}

/**
 * Removes from `blocksDir` what the catalogue does not name and a crash left (docs/STORAGE.md,
 * "Blocks in the running store"): temporary files of a write cut short; a checkpoint's block
 * whose commit never came (it covers the log past the index's log position, which the replay
 * reads again); a merge's block whose commit never came, or a block a committed merge replaced
 * (`BLOCKS_IN_FLIGHT_KEY` names them). Any other block the catalogue does not name
 * holds events the index has lost track of (a damaged page of it): it is kept, and the open is
 * refused, as for a segment file the index does not know. Run at open, before anything writes a
 * block.
 * @returns how many files it removed
 * @throws IndexDamaged naming such a block and `edge-events check --repair`; the fs error when
 *   the folder cannot be read
 */
export async function removeUnnamedBlocks(dbs: StoreDatabases, blocksDir: string): Promise<number> {
  let names: string[];
  try {
    names = await fs.readdir(blocksDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw err;
  }
  const named = new Set([...dbs.blocks.getRange()].map(({ value }) => value.name));
  const unnamed = names.filter((name) => !named.has(name));
  const inFlight = new Set((dbs.meta.get(BLOCKS_IN_FLIGHT_KEY) as string[] | undefined) ?? []);
  const position = indexedLogPosition(dbs);
  for (const name of unnamed) {
    if (!name.endsWith('.tmp') && !inFlight.has(name) && !coversPast(path.join(blocksDir, name), position)) {
      throw new IndexDamaged(path.dirname(blocksDir), `names no block ${name}, which holds events before the log position it covers`);
    }
  }
  await Promise.all(unnamed.map((name) => fs.rm(path.join(blocksDir, name), { force: true, recursive: true })));
  return unnamed.length;
}

/** The block in `file` covers the log past `position`: a checkpoint wrote it and its commit never came. */
function coversPast(file: string, position: LogPosition | undefined): boolean {
  let covers: BlockToc['covers'];
  try {
    const block = BlockReader.open(file);
    covers = block.toc.covers;
    block.close();
  } catch {
    return false; // no table of contents to tell what it holds
  }
  return !position || covers.segment > position.segment || (covers.segment === position.segment && covers.offset > position.offset);
}

/**
 * Where `meta` names the block files a merge may leave that the catalogue does not name: the one
 * it writes, from before the write until its commit, and then the ones it replaced, until the
 * next merge (block-merges.ts).
 */
export const BLOCKS_IN_FLIGHT_KEY = 'blocksInFlight';
