/**
 * The rebuild of a data folder's index from its log (`edge-events check --repair`;
 * docs/OPERATIONS.md, "Checking and repairing a data folder"; docs/STORAGE.md, "A damaged
 * index"): `db/` moved aside (never deleted), an empty LMDB whose log position is the first
 * segment on disk, and the store opened, whose recovery replays the whole log into the index.
 */
import fs from 'node:fs';
import path from 'node:path';
import { assertIndexOpenable } from '../index/index-file-check.js';
import { LOG_POSITION_KEY, openDatabases, type LogPosition } from '../index/lmdb-env.js';
import { startCursors } from '../ledger/sink-ledger.js';
import { segmentNumberOf, syncDirectory } from '../log/segment-files.js';
import type { StoreOptions } from '../read/store-view.js';
import type { RebuildReport } from './check-report.js';
import { EventStore } from './event-store.js';
import { salvageIntoLog } from './index-salvage-copies.js';
import { REBUILD_KEY } from './recovery.js';
import { RECORD_COPIES_KEY, RECORD_COPIES_VERSION, type UpgradeReport } from './record-copies-upgrade.js';
import { holdForCheck, segmentsOnDisk } from './store-check.js';
import { blocksDirOf } from '../read/stored-events.js';

/** Gives `dir` and what is in it to `uid`:`gid` (one level deep: db/ holds only files). */
function chownTree(dir: string, uid: number, gid: number): void {
  fs.chownSync(dir, uid, gid);
  for (const name of fs.readdirSync(dir)) fs.chownSync(path.join(dir, name), uid, gid);
}

/** `<time>` for the names of a rebuild's folders in `dataDir`, one no other rebuild took. */
function rebuildStamp(dataDir: string, now: Date): string {
  const stamp = now.toISOString().replaceAll(':', '-');
  for (let n = 0; ; n++) {
    const candidate = `${stamp}${n === 0 ? '' : `-${n}`}`;
    if (!fs.existsSync(path.join(dataDir, `db.damaged-${candidate}`)) && !fs.existsSync(path.join(dataDir, `blobs.before-rebuild-${candidate}`))) return candidate;
  }
}

/**
 * Hard-links every segment file of `blobsDir` into the new folder `kept`: the open that follows a
 * rebuild removes the files no replayed frame names (an upload whose attach frame was in a
 * segment already reclaimed), and a link keeps their bytes without copying them.
 * @throws the fs error of a failed link (another file system: nothing is updated then)
 */
function linkSegments(blobsDir: string, kept: string): void {
  fs.mkdirSync(kept);
  try {
    for (const name of fs.readdirSync(blobsDir)) {
      if (segmentNumberOf(name) !== undefined) fs.linkSync(path.join(blobsDir, name), path.join(kept, name));
    }
  } catch (err) {
    fs.rmSync(kept, { recursive: true, force: true });
    throw err;
  }
}

/**
 * Removes from `kept` the links of the segment files still in `blobsDir` (the same file), and
 * `kept` itself when nothing else is left.
 * @returns the names of the files left in `kept`: those the open removed from blobs/
 */
function pruneKept(blobsDir: string, kept: string): string[] {
  const removed: string[] = [];
  for (const name of fs.readdirSync(kept)) {
    const link = fs.statSync(path.join(kept, name));
    const still = fs.statSync(path.join(blobsDir, name), { throwIfNoEntry: false });
    if (still && still.ino === link.ino && still.dev === link.dev) fs.rmSync(path.join(kept, name));
    else removed.push(name);
  }
  if (removed.length === 0) fs.rmdirSync(kept);
  return removed.sort();
}

/**
 * Rebuilds the index of `dataDir` from its log (docs/STORAGE.md, "A damaged index"): moves `db/`
 * aside to `db.damaged-<time>` (never deleted), creates an empty LMDB whose log position is the
 * first segment on disk at offset 0 and whose shipping sinks start at the beginning of the
 * ledger (everything finalized is shipped again: shipping is at least once), then opens the
 * store, whose recovery replays the whole log into the index, and closes it, which checkpoints
 * what the replay left in the head. Before the open, the records the replaced index still reads
 * and the log lacks are written into the log (index-salvage-copies.ts), so the replay gives them
 * back too; the events neither gives back are named in the report's `lost`. Every segment file is hard-linked into
 * `blobs.before-rebuild-<time>` first; what the open removed stays there, the rest is unlinked.
 * Run as root on a folder another user owns, the new folders are given to that user. The
 * folder's lock is held throughout, from before `db/` is moved to the prune after the open.
 * @param options the store's options: `sinks` as the store is configured (finalized events enter
 *   the shipping ledger for them), `present` its record presenter
 * @throws CheckRefused when `dataDir` is not a folder or a running store holds it
 * @throws the fs or lmdb error of a failed step; `db.damaged-*` keeps the former index and
 *   `blobs.before-rebuild-*` every segment file, and the rebuild can be run again
 */
export function rebuildIndex(dataDir: string, options: StoreOptions, now = new Date()): Promise<RebuildReport> {
  return holdForCheck(dataDir, () => rebuild(dataDir, options, now));
}

/** rebuildIndex's work, under the folder's lock: from the move of `db/` to the open's close and the prune of the kept segments. */
async function rebuild(dataDir: string, options: StoreOptions, now: Date): Promise<RebuildReport> {
  const started = performance.now();
  const dbDir = path.join(dataDir, 'db');
  const blobsDir = path.join(dataDir, 'blobs');
  const stamp = rebuildStamp(dataDir, now);
  const kept = path.join(dataDir, `blobs.before-rebuild-${stamp}`);
  let movedTo: string | null = null;
  const firstSegment = segmentsOnDisk(blobsDir)[0] ?? null;
  if (firstSegment !== null) linkSegments(blobsDir, kept);
  if (fs.existsSync(dbDir)) {
    movedTo = path.join(dataDir, `db.damaged-${stamp}`);
    fs.renameSync(dbDir, movedTo);
  }
  // The blocks go with the index they belong to (or aside, when it is lost); the replay writes new ones.
  const blocksDir = blocksDirOf(dataDir);
  if (fs.existsSync(blocksDir)) fs.renameSync(blocksDir, movedTo ? path.join(movedTo, 'blocks') : path.join(dataDir, `blocks.before-rebuild-${stamp}`));
  const dbs = openDatabases(dataDir);
  try {
    const start: LogPosition | undefined = firstSegment === null ? undefined : { segment: firstSegment, offset: 0 };
    await dbs.root.transaction(() => {
      if (start) dbs.meta.putSync(LOG_POSITION_KEY, start);
      dbs.meta.putSync(REBUILD_KEY, true); // the open replays the log with a RebuildPlan
      dbs.meta.putSync(RECORD_COPIES_KEY, RECORD_COPIES_VERSION); // and counts every frame as it goes
    });
    await startCursors(dbs, options.sinks); // at seq 0: the replay's finalized events are all ahead of them
    await dbs.root.flushed;
  } finally {
    await dbs.root.close();
  }
  const owner = fs.statSync(dataDir);
  if (process.getuid?.() === 0 && (owner.uid !== 0 || owner.gid !== 0)) {
    chownTree(dbDir, owner.uid, owner.gid);
    if (firstSegment !== null) fs.chownSync(kept, owner.uid, owner.gid);
  }
  await syncDirectory(dataDir);
  // What the replaced index alone still holds goes into the log, to be replayed with the rest.
  const salvage = movedTo ? await salvageIntoLog(movedTo, blobsDir, options.present) : { salvaged: 0, lost: [], incomplete: false };
  assertIndexOpenable(dataDir);
  const store = await EventStore.open(dataDir, options);
  const { replayed, changesReplayed, skipped, quarantined } = store.opened;
  const events = store.counters().events;
  const named = new Set([...salvage.lost, ...quarantined.flatMap((q) => q.lostEvents)]);
  const lost = [...named].filter((id) => store.getEvent(id) === undefined);
  await store.close();
  const segmentFilesRemoved = firstSegment === null ? [] : pruneKept(blobsDir, kept);
  return {
    movedTo, firstSegment, replayed, changesReplayed, skipped: skipped.length, events,
    salvaged: salvage.salvaged, lost, salvageIncomplete: salvage.incomplete,
    segmentFilesRemoved, keptIn: segmentFilesRemoved.length > 0 ? kept : null, sinks: [...options.sinks], ms: Math.round(performance.now() - started),
  };
}

/**
 * Writes back into the log the record of every event whose log copy is gone or damaged, from the
 * index (`edge-events check --repair` on a sound index; docs/OPERATIONS.md, "Checking and repairing
 * a data folder"): the index is marked as not counting by record copies, and the store opened, whose
 * upgrade (module comment) counts every frame again and logs a record copy of each event with no
 * whole frame left. No store may run on `dataDir`: its lock is held from before the index is
 * touched to the store's close (store-check.ts `holdForCheck`).
 * @returns what the upgrade did
 * @throws CheckRefused when a store runs on it; the fs or lmdb error of a step (the next open does it again)
 */
export function rewriteRecordCopies(dataDir: string, options: StoreOptions): Promise<UpgradeReport | undefined> {
  return holdForCheck(dataDir, async () => {
    const dbs = openDatabases(dataDir);
    try {
      await dbs.root.transaction(() => dbs.meta.removeSync(RECORD_COPIES_KEY));
      await dbs.root.flushed;
    } finally {
      await dbs.root.close();
    }
    const store = await EventStore.open(dataDir, options);
    const { upgraded } = store.opened;
    await store.close();
    return upgraded;
  });
}
