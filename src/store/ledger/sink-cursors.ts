/**
 * Durable cursors of the sinks that publish the store's events elsewhere (docs/OPERATIONS.md,
 * "MQTT"): per sink, the created_at (µs) of the newest event it has shipped with every older one
 * shipped too, kept in the `meta` database so that a restarted store resumes where its sink
 * stopped. A cursor is written after what it names was acknowledged, so a crash between the two
 * re-ships (at least once), never skips.
 */
import type { StoreDatabases } from '../index/lmdb-env.js';
import type { LedgerStore } from './sink-ledger.js';
import { storeHandles } from '../read/store-view.js';

const key = (sink: string) => `sink:${sink}`;

/** The cursor of `sink`, µs; undefined when it never shipped (or a reset cleared it). */
export function readSinkCursor(store: Pick<LedgerStore, typeof storeHandles>, sink: string): number | undefined {
  const value = store[storeHandles].dbs.meta.get(key(sink));
  return typeof value === 'number' ? value : undefined;
}

/**
 * Records `createdAt` (µs) as the cursor of `sink`; resolves once the write is committed (not
 * necessarily flushed: a cursor lost to a power cut only means re-shipping).
 */
export async function writeSinkCursor(store: Pick<LedgerStore, typeof storeHandles>, sink: string, createdAt: number): Promise<void> {
  await store[storeHandles].dbs.meta.put(key(sink), createdAt);
}

/**
 * Moves every sink's cursor through `restamp` (created_at µs to created_at µs, increasing), for
 * events re-stamped after a clock was set back (restamp.ts; docs/STORAGE.md, "A clock that
 * jumps"), so a sink resumes after the same event. Call inside the write transaction that
 * re-keys them.
 */
export function restampSinkCursorsSync(dbs: StoreDatabases, restamp: (createdAt: number) => number): void {
  // Every `sink:<name>` key: from `key('')` ('sink:') up to 'sink;', ';' being the character after ':'.
  const cursors = [...dbs.meta.getRange({ start: key(''), end: `${key('').slice(0, -1)};` })];
  for (const { key: name, value } of cursors) if (typeof value === 'number') dbs.meta.putSync(name, restamp(value));
}
