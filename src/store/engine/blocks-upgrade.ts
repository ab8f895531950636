/**
 * The upgrade of a store of the engine before blocks (docs/STORAGE.md, "The upgrade into
 * blocks"): its events' records, ids and index entries are all in LMDB. The lifecycle worker
 * moves them into blocks while the store serves, the newest first, one block a step: the block is
 * written and made durable, then one commit enters it in the catalogue and takes the events out
 * of LMDB's `events`, `event_ids` and `index` (their files stay where they are, as every file's
 * entry does). Reads union LMDB and the blocks, so an event is readable throughout, from one or
 * the other.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { blockRowOf, encodeBlock, writeBlockFile, type BlockRow } from '../block/block-writer.js';
import { blocksChanged, indexedLogPosition, readEventValue, type BlockEntry, type StoreDatabases } from '../index/lmdb-env.js';
import { decodeRecord, recordCopyBytes, type RecordPresenter } from '../index/record-codec.js';
import { isCanonicalId } from '../record/ids.js';
import type { StoredEvents } from '../read/stored-events.js';
import { BLOCKS_IN_FLIGHT_KEY, blockFileName } from './checkpoint-block.js';
import { leaveLmdbSync, readValueOf, type ReadValue } from './block-rows.js';
import { MAX_MERGED_BYTES } from './block-merges.js';

/** Most events one step moves: a block of at most this many rows keeps u16 postings (block-format.ts). */
export const UPGRADE_STEP_EVENTS = 65_536;

/** Most record bytes one step moves: half a merge's largest block, so that its blocks merge later. */
export const UPGRADE_STEP_BYTES = MAX_MERGED_BYTES / 2;

/** How much one step moves at most: events, and bytes of their records. */
export interface UpgradeLimits {
  events: number;
  bytes: number;
}

/** What one step of the upgrade did. */
export interface UpgradeReport {
  /** Events the step moved into its block. */
  moved: number;
  /** Events it left in LMDB because they changed while it wrote the block (moved by a later step). */
  changed: number;
  /** Events LMDB still holds created before every live block: later steps move them (all whose id is a canonical UUID). */
  remaining: number;
}

/** An event a step reads out of LMDB: its value as read, to tell a change by, and its block row. */
interface Moving {
  was: ReadValue;
  row: BlockRow;
}

/**
 * The events the next step moves, in ascending created_at: the newest of LMDB's events created
 * before every live block (blocks hold disjoint stretches of created_at: block-set.ts, so each
 * step's block comes before the last one's), with a canonical id (a block keeps an id's 16 bytes)
 * and no hidden row, up to `limits`.
 */
function nextMoving(stored: StoredEvents, present: RecordPresenter, limits: UpgradeLimits): Moving[] {
  const { dbs } = stored;
  const before = stored.blocks().bounds()?.oldest;
  const moving: Moving[] = [];
  let bytes = 0;
  for (const key of dbs.events.getKeys({ start: before, reverse: true })) {
    const createdAt = key as number;
    if (before !== undefined && createdAt >= before) continue; // an event of the oldest block LMDB took over
    const view = readEventValue(dbs, createdAt);
    if (!view || dbs.blockHidden.doesExist(createdAt)) continue;
    const record = decodeRecord(view);
    if (!isCanonicalId(record.id)) continue;
    const row = blockRowOf(record, Buffer.from(recordCopyBytes(view, present)));
    if (moving.length > 0 && bytes + row.record.length > limits.bytes) break;
    moving.push({ was: readValueOf(view), row });
    bytes += row.record.length;
    if (moving.length === limits.events) break;
  }
  return moving.reverse();
}

/**
 * Events LMDB holds created before every live block: what later steps move, and any whose id is
 * not a canonical UUID, which stay.
 */
function remainingOf(stored: StoredEvents): number {
  return stored.dbs.events.getKeysCount({ end: stored.blocks().bounds()?.oldest ?? Infinity });
}

/**
 * Runs one step of the upgrade, when LMDB holds events it moves. The step names its block in
 * `meta.blocksInFlight` before writing it (a crash leaves a file the next open removes), and its
 * commit checks each event again: one updated or deleted since it was read keeps LMDB's state and
 * its new row is hidden; a block entered meanwhile that the new one would overlap makes the step
 * change nothing (the file is removed).
 * @param flushed resolves once the step's commit is on disk
 * @param limits how much the step moves at most (default UPGRADE_STEP_EVENTS, UPGRADE_STEP_BYTES)
 * @returns what it did, or undefined when nothing is left to move
 * @throws the fs error of the write, the lmdb error of a commit
 */
export async function upgradeStep(
  stored: StoredEvents, present: RecordPresenter, flushed: () => Promise<void>, limits: UpgradeLimits = { events: UPGRADE_STEP_EVENTS, bytes: UPGRADE_STEP_BYTES },
): Promise<UpgradeReport | undefined> {
  const { dbs } = stored;
  const moving = nextMoving(stored, present, limits);
  if (moving.length === 0) return undefined;
  const rows = moving.map(({ row }) => row);
  const oldest = rows[0].createdAt;
  const newest = rows[rows.length - 1].createdAt;
  const name = blockFileName(oldest, newest, 0);
  const covers = indexedLogPosition(dbs) ?? { segment: 0, offset: 0 };
  await dbs.root.transaction(() => dbs.meta.putSync(BLOCKS_IN_FLIGHT_KEY, [name]));
  await fs.mkdir(stored.blocksDir, { recursive: true });
  const { bytes } = await writeBlockFile(stored.blocksDir, name, encodeBlock(rows, covers));
  const entry: BlockEntry = { name, newest, rows: rows.length, bytes, level: 0 };
  const changed = await dbs.root.transaction(() => enterUpgradeSync(dbs, oldest, entry, moving));
  if (changed === undefined) {
    await fs.rm(path.join(stored.blocksDir, name), { force: true });
    return undefined;
  }
  await flushed();
  return { moved: moving.length - changed, changed, remaining: remainingOf(stored) };
}

/**
 * The step's commit: the block in the catalogue, and each event it holds out of LMDB, unless it
 * changed since the step read it (then its row is hidden); call inside a write transaction.
 * @returns how many events changed, or undefined (nothing done) when a live block overlaps or
 *   LMDB holds none of the events any more
 */
function enterUpgradeSync(dbs: StoreDatabases, oldest: number, entry: BlockEntry, moving: readonly Moving[]): number | undefined {
  const overlapping = [...dbs.blocks.getRange({ end: entry.newest + 1 })].some(({ key, value }) => (key as number) >= oldest || value.newest >= oldest);
  if (overlapping) return undefined;
  // None left (a reset cleared the store meanwhile, and maybe blocks/ with the file): nothing to enter.
  if (!moving.some(({ row }) => dbs.events.doesExist(row.createdAt))) return undefined;
  dbs.blocks.putSync(oldest, entry);
  let changed = 0;
  for (const { was, row } of moving) {
    if (!leaveLmdbSync(dbs, row.createdAt, was)) changed++;
  }
  dbs.meta.putSync(BLOCKS_IN_FLIGHT_KEY, []);
  blocksChanged(dbs);
  return changed;
}
