/**
 * Re-stamping the events a clock set back left ahead of it (docs/STORAGE.md, "A clock that
 * jumps"). created_at is the key of a record in `events`, the last part of its index entries, the
 * owner of its files and its place in the shipping ledger, and it increases in commit order: the
 * head is the newest end of `events`, a checkpoint appends, and the live stream and the MQTT
 * sink resume after the newest created_at they sent. A clock that was a year ahead and is
 * corrected would leave every new event stamped 1 µs after the newest stored one for a year
 * (timestamps.ts `nextUniqueMicros`). The store's open therefore moves the events stamped after
 * the wall clock's now to just before it, in order, in one LMDB transaction with every entry
 * naming their created_at, and new events take the wall clock's time again.
 */
import { EMPTY, fileIdsOf, fileOfAgeKey, indexKeysOf } from '../index/index-keys.js';
import type { StoreDatabases } from '../index/lmdb-env.js';
import { decodeRecord, encodeRecord, type RecordPresenter } from '../index/record-codec.js';
import { restampSearchIndexSync } from '../index/search-index.js';
import { restampSinkCursorsSync } from '../ledger/sink-cursors.js';
import { restampLedgerSync } from '../ledger/sink-ledger.js';
import { CreateRanges, framesOf } from './frame-accounting.js';
import type { StoredEvents } from '../read/stored-events.js';
import { hideRowSync } from './block-rows.js';

/** What a re-stamp moved. Times in µs since the epoch. */
export interface Restamped {
  /** Events re-stamped. */
  events: number;
  /** The newest created_at left as it was (0: none): the re-stamped events follow it. */
  after: number;
  /** The newest created_at once re-stamped: the floor of the next (timestamps.ts `restartUniqueMicros`). */
  newest: number;
  /** How far back the newest event moved (µs, > 0): how far ahead of the wall clock it was. */
  shift: number;
  /**
   * Maps a time to its re-stamped value: a time up to the re-stamp's `now` stays; a later one
   * becomes the new created_at of the newest re-stamped event stamped at or before it (the first
   * one's, before the first). Increasing, so cursors keep their place.
   */
  restamp: (micros: number) => number;
}

/**
 * Re-stamps every event whose created_at is after `nowMicros`: each keeps its order and, as far
 * as the events before it allow, its distance to the newest, which lands on `nowMicros`
 * (`new = max(previous new + 1, old − shift)`, shift = newest − now). Moves, with the record
 * (its `created_at`, and its `finalized_at` and `auto_finalized_at` through `Restamped.restamp`,
 * its JSON presented again by `present`): its `event_ids` entry, its index entries (files-by-age
 * only for files still stored), its files' owner, its shipping-ledger entries (same seq), the
 * sinks' created_at cursors, a search index backfill's bounds, and where its frames are (its
 * `record_frames` entry, and the segments' create ranges). Counters do not change.
 *
 * Call inside a write transaction, with the head checkpointed (the head must be empty: the
 * records it holds are not in `events`), and wait for that transaction's flush before a create is
 * stamped: the log's record frames keep the old created_at, and a replay never reaches them again
 * only once LMDB's log position past them is flushed with the re-stamp.
 * An event a block holds moves into LMDB, its row hidden (block-rows.ts).
 * @param stored the store's checkpointed events (stored-events.ts)
 * @param nowMicros the wall clock's now (µs since the epoch)
 * @returns what moved, or undefined when no event is after `nowMicros`
 */
export function restampAheadSync(stored: StoredEvents, nowMicros: number, present: RecordPresenter): Restamped | undefined {
  const { dbs } = stored;
  const olds = [...stored.createdAts({ from: nowMicros + 1 })];
  if (olds.length === 0) return undefined;
  const [after = 0] = stored.createdAts({ before: nowMicros + 1, reverse: true, limit: 1 });
  const shift = olds[olds.length - 1] - nowMicros;
  const news: number[] = [];
  let previous = after;
  for (const old of olds) {
    previous = Math.max(previous + 1, old - shift);
    news.push(previous);
  }
  const restamp = (micros: number): number => {
    if (micros <= nowMicros) return micros;
    let lo = 0;
    let hi = olds.length - 1;
    let found = 0;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (olds[mid] <= micros) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return news[found];
  };

  restampFramesSync(dbs, olds, news, nowMicros, restamp);
  // Oldest first: news[i] <= olds[i] < olds[i + 1], so a new key never lands on an old one not yet moved.
  olds.forEach((old, i) => {
    const to = news[i];
    const record = decodeRecord(stored.value(old)!);
    for (const key of indexKeysOf(record)) dbs.index.removeSync(key);
    if (!dbs.events.removeSync(old)) hideRowSync(dbs, old);
    record.created_at = to;
    if (record.finalized_at !== null) record.finalized_at = restamp(record.finalized_at);
    if (record.auto_finalized_at !== null) record.auto_finalized_at = restamp(record.auto_finalized_at);
    dbs.events.putSync(to, encodeRecord(record, present));
    dbs.eventIds.putSync(record.id, to);
    const kept = new Set<string>();
    for (const fileId of fileIdsOf(record)) {
      const entry = dbs.files.get(fileId);
      if (!entry || entry.event !== old) continue;
      dbs.files.putSync(fileId, { ...entry, event: to });
      kept.add(fileId);
    }
    for (const key of indexKeysOf(record)) {
      // A file cleanup deleted stays listed on its record, without its files-by-age entry.
      if (key[0] === 'F' && !kept.has(fileOfAgeKey(key).fileId)) continue;
      dbs.index.putSync(key, EMPTY);
    }
  });
  restampLedgerSync(dbs, new Map(olds.map((old, i) => [old, news[i]])));
  restampSinkCursorsSync(dbs, restamp);
  restampSearchIndexSync(dbs, restamp);
  return { events: olds.length, after, newest: news[news.length - 1], shift, restamp };
}

/**
 * Names each re-stamped event's frames by its new created_at (docs/STORAGE.md, "Two copies of every
 * record"): its home explicitly in `record_frames`, and the segments' create ranges past
 * `nowMicros` mapped through `restamp` (increasing, so they stay apart); call inside the re-stamp's
 * transaction, before the events move.
 * @param olds the re-stamped events' created_at (µs), ascending; `news` their new ones
 */
function restampFramesSync(dbs: StoreDatabases, olds: number[], news: number[], nowMicros: number, restamp: (micros: number) => number): void {
  const ranges = CreateRanges.read(dbs);
  const frames = olds.map((old) => framesOf(dbs, ranges, old));
  for (const old of olds) dbs.recordFrames.removeSync(old);
  olds.forEach((_, i) => {
    const { home, updates } = frames[i];
    if (home !== undefined) dbs.recordFrames.putSync(news[i], { home, updates });
  });
  for (const { key, value } of dbs.segments.getRange()) {
    if (value.lastCreate === undefined || value.lastCreate <= nowMicros) continue;
    dbs.segments.putSync(key, { ...value, firstCreate: restamp(value.firstCreate!), lastCreate: restamp(value.lastCreate) });
  }
}
