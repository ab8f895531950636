/**
 * The shipping ledger (docs/OPERATIONS.md, "Sinks"): every finalized event, in the order it was
 * finalized, for the sinks that ship events off the device (the cloud uploader, the NATS
 * JetStream sink). One ledger, a durable cursor per sink: each sink ships the entries after its
 * cursor in order, at least once, and moves its cursor once they are acknowledged; an entry
 * every configured sink has passed leaves the ledger. While a configured sink has not passed an
 * event, cleanup keeps it, and so every draft (`isProtected`).
 *
 * Kept in LMDB with the index (index-keys.ts): `['Q', seq, created_at]` the ledger in finalize
 * order, `['U', created_at]` "some sink has not shipped it" (counted by `uploadsPending`, read by
 * cleanup and the capacity gate), `['X', created_at, sink]` events a sink refused for good (dead
 * letters). `seq` counts up (`Counters.ledgerSeq`), given out in the commit that finalizes the
 * event; a cursor is `meta['ledger:<sink>']`, a seq.
 */
import type { Key } from 'lmdb';
import { deadLetterKey, DRAFTS_PREFIX, EMPTY, ledgerKey, ledgerRange, pendingKey } from '../index/index-keys.js';
import { addToCounters, readCounters, type StoreDatabases } from '../index/lmdb-env.js';
import { storeHandles, type StoreHandles } from '../read/store-view.js';

/**
 * What the ledger reads of a store: its databases, whether sinks are configured, and what the
 * head holds for them (store-view.ts `StoreView` is one).
 */
export interface LedgerStore {
  readonly [storeHandles]: Pick<StoreHandles, 'dbs' | 'stored'>;
  /** Some sink is configured. */
  readonly shipping: boolean;
  /** Finalized creates still in the head: they enter the ledger with their checkpoint. */
  headShippable(): { events: number; oldest: number | null };
}

/** One ledger entry: its place and its event's created_at (µs). */
export interface LedgerEntry {
  seq: number;
  createdAt: number;
}

const cursorKey = (sink: string) => `ledger:${sink}`;

/** The cursor of `sink`: the seq of the last entry it shipped (0 before any). */
export function sinkCursor(dbs: StoreDatabases, sink: string): number {
  const value = dbs.meta.get(cursorKey(sink));
  return typeof value === 'number' ? value : 0;
}

/**
 * Puts a finalized event in the ledger; call inside the write transaction that finalizes it
 * (creating it finalized, or finalizing a draft), with sinks configured.
 */
export function enterLedger(dbs: StoreDatabases, createdAt: number): void {
  const seq = readCounters(dbs).ledgerSeq + 1;
  dbs.index.putSync(ledgerKey(seq, createdAt), EMPTY);
  dbs.index.putSync(pendingKey(createdAt), EMPTY);
  addToCounters(dbs, { ledgerSeq: 1, uploadsPending: 1 });
}

/**
 * Gives every configured sink that has no cursor yet one at the end of the ledger: a sink ships
 * what is finalized from the time it is first configured. Call when the store opens, before it
 * serves.
 */
export async function startCursors(dbs: StoreDatabases, sinks: readonly string[]): Promise<void> {
  const missing = sinks.filter((sink) => dbs.meta.get(cursorKey(sink)) === undefined);
  if (missing.length === 0) return;
  await dbs.root.transaction(() => {
    const end = readCounters(dbs).ledgerSeq;
    for (const sink of missing) dbs.meta.putSync(cursorKey(sink), end);
  });
}

/**
 * The entries `sink` has not shipped, oldest first.
 * @param limit most entries returned
 */
export function unshipped(store: LedgerStore, sink: string, limit: number): LedgerEntry[] {
  const after = sinkCursor(store[storeHandles].dbs, sink);
  return [...store[storeHandles].dbs.index.getKeys({ ...ledgerRange(after + 1), limit })].map(entryOfKey);
}

/**
 * What `sink` has not shipped: entries, and the created_at (µs) of the oldest (null: none). On
 * the writer's view, finalized creates still in the head count too (store-view.ts
 * `headShippable`): they enter the ledger with their checkpoint.
 */
export function sinkBacklog(store: LedgerStore, sink: string): { events: number; oldestCreatedAt: number | null } {
  const cursor = sinkCursor(store[storeHandles].dbs, sink);
  const [oldest] = unshipped(store, sink, 1);
  const head = store.headShippable();
  return { events: Math.max(0, readCounters(store[storeHandles].dbs).ledgerSeq - cursor) + head.events, oldestCreatedAt: oldest?.createdAt ?? head.oldest };
}

/**
 * Moves `sink`'s cursor to `through` (a seq) once what it shipped is acknowledged, records the
 * events it refused for good (`deadLettered`, created_at µs), and takes out of the ledger every
 * entry each of `sinks` (the configured ones) has passed, in one transaction. Resolves at the
 * commit, not its flush: shipping is at least once, so a cut before the flush only re-ships.
 * @throws the lmdb error of a failed commit (the cursor stays where it was)
 */
export async function markShipped(store: LedgerStore, sink: string, through: number, deadLettered: number[], sinks: readonly string[]): Promise<void> {
  const { dbs } = store[storeHandles];
  await dbs.root.transaction(() => {
    if (through > sinkCursor(dbs, sink)) dbs.meta.putSync(cursorKey(sink), through);
    for (const createdAt of deadLettered) dbs.index.putSync(deadLetterKey(createdAt, sink), EMPTY);
    const passed = Math.min(...sinks.map((name) => sinkCursor(dbs, name)));
    let released = 0;
    for (const key of dbs.index.getKeys({ ...ledgerRange(1, passed + 1) })) {
      const { createdAt } = entryOfKey(key);
      dbs.index.removeSync(key);
      if (dbs.index.removeSync(pendingKey(createdAt))) released++;
    }
    addToCounters(dbs, { uploadsPending: -released });
  });
}

/**
 * True when cleanup must keep the event created at `createdAt` (µs): sinks are configured and
 * the event is a draft or some sink has not shipped it. Always false without sinks.
 */
export function isProtected(store: LedgerStore, createdAt: number): boolean {
  if (!store.shipping) return false;
  const { dbs, stored } = store[storeHandles];
  return dbs.index.doesExist(pendingKey(createdAt)) || stored.has(DRAFTS_PREFIX, createdAt);
}

/** How many events some sink has not shipped, counted from the index (not from `uploadsPending`). */
export function countPending(dbs: StoreDatabases): number {
  return dbs.index.getKeysCount({ start: pendingKey(-Infinity), end: pendingKey(Infinity) });
}

function entryOfKey(key: Key): LedgerEntry {
  const [, seq, createdAt] = key as [string, number, number];
  return { seq, createdAt };
}

/** meta key: the ledger's layout (absent: a store written before the ledger). */
const LEDGER_LAYOUT_KEY = 'ledgerLayout';

/**
 * Brings a store written before the ledger to it, once: its cloud upload queue (`['U',
 * created_at]`, in created_at order) becomes the first ledger entries, the cloud's cursor before
 * them, and its dead letters (`['X', created_at]`) the cloud's. Call when the store opens, before
 * recovery replays the log. A no-op on a store already migrated.
 */
export async function migrateToLedger(dbs: StoreDatabases): Promise<void> {
  if (dbs.meta.get(LEDGER_LAYOUT_KEY) !== undefined) return;
  await dbs.root.transaction(() => {
    let seq = readCounters(dbs).ledgerSeq;
    for (const key of dbs.index.getKeys({ start: pendingKey(-Infinity), end: pendingKey(Infinity) })) {
      dbs.index.putSync(ledgerKey(++seq, (key as Key[])[1] as number), EMPTY);
    }
    for (const key of dbs.index.getKeys({ start: ['X', -Infinity], end: ['X', Infinity] })) {
      const [, createdAt, sink] = key as Key[];
      if (sink !== undefined) continue;
      dbs.index.removeSync(key);
      dbs.index.putSync(deadLetterKey(createdAt as number, 'cloud'), EMPTY);
    }
    if (seq > 0) dbs.meta.putSync(cursorKey('cloud'), 0);
    addToCounters(dbs, { ledgerSeq: seq - readCounters(dbs).ledgerSeq });
    dbs.meta.putSync(LEDGER_LAYOUT_KEY, 1);
  });
}

/**
 * Moves the ledger's entries of re-stamped events to their new created_at (restamp.ts; docs/STORAGE.md,
 * "A clock that jumps"): their `Q` entries keep their seq, so the order they ship in and every
 * cursor stay; their `U` and `X` entries follow. Call inside the write transaction that re-keys them.
 * @param moved old created_at to new (µs), for every re-stamped event
 */
export function restampLedgerSync(dbs: StoreDatabases, moved: ReadonlyMap<number, number>): void {
  if (moved.size === 0) return;
  const first = Math.min(...moved.keys());
  const ledger = [...dbs.index.getKeys(ledgerRange(1))].map(entryOfKey).filter((entry) => moved.has(entry.createdAt));
  const pending = [...dbs.index.getKeys({ start: pendingKey(first), end: pendingKey(Infinity) })].map((key) => (key as Key[])[1] as number);
  const dead = [...dbs.index.getKeys({ start: ['X', first], end: ['X', Infinity] })].map((key) => key as [string, number, string]);
  for (const { seq, createdAt } of ledger) {
    dbs.index.removeSync(ledgerKey(seq, createdAt));
    dbs.index.putSync(ledgerKey(seq, moved.get(createdAt)!), EMPTY);
  }
  for (const createdAt of pending) {
    const to = moved.get(createdAt);
    if (to === undefined) continue;
    dbs.index.removeSync(pendingKey(createdAt));
    dbs.index.putSync(pendingKey(to), EMPTY);
  }
  for (const [, createdAt, sink] of dead) {
    const to = moved.get(createdAt);
    if (to === undefined) continue;
    dbs.index.removeSync(deadLetterKey(createdAt, sink));
    dbs.index.putSync(deadLetterKey(to, sink), EMPTY);
  }
}
