/**
 * The child process of an index salvage (index-salvage.ts; docs/STORAGE.md, "A damaged index"):
 * opens the damaged index at `argv[2]` read-only and writes first `{"recordCopies": v}`, the
 * version of "Two copies of every record" its meta names (null when none or unreadable), then every
 * record it can read to stdout, one JSON line each: `{"id", "createdAt", "value"}` (the stored value, base64); then each file
 * entry it can read, `{"file", "kind", "contentType"}`; then `{"blocks": [names], "hidden":
 * [created_at]}`, the block catalogue and its hidden rows (null when either does not read whole);
 * then `{"unreadable": [ids]}`, the events `event_ids` names whose record does not read. A page LMDB cannot
 * read costs the reads that reach it; a file cut short may end the process with SIGBUS, and the
 * parent keeps the lines written before.
 */
import { open } from 'lmdb';

const path = process.argv[2];
// The folder's name (db.damaged-<time>) has a dot: lmdb-js would take it for a file without noSubdir (its open.js).
const root = open({ path, readOnly: true, maxDbs: 16, noSubdir: false });
const eventIds = root.openDB<number, string>({ name: 'event_ids', encoding: 'ordered-binary' });
const events = root.openDB<Buffer, number>({ name: 'events', encoding: 'binary' });
const files = root.openDB<{ kind: string; contentType: string }, string>({ name: 'files', encoding: 'msgpack' });

/** The ids and created_at of `event_ids`, as far as its pages read (a damaged page ends the walk; a second walk from the end back reads what follows it). */
function readIds(): Map<string, number> {
  const ids = new Map<string, number>();
  for (const reverse of [false, true]) {
    try {
      for (const { key, value } of eventIds.getRange({ reverse })) {
        if (ids.has(key)) break;
        ids.set(key, value);
      }
    } catch {
      root.resetReadTxn();
    }
  }
  return ids;
}

let recordCopies: unknown = null;
try {
  recordCopies = root.openDB<unknown, string>({ name: 'meta', encoding: 'msgpack' }).get('recordCopies') ?? null;
} catch {
  root.resetReadTxn();
}
process.stdout.write(`${JSON.stringify({ recordCopies })}\n`);

const unreadable: string[] = [];
for (const [id, createdAt] of readIds()) {
  try {
    const value = events.getBinary(createdAt);
    if (!value) throw new Error('no record');
    process.stdout.write(`${JSON.stringify({ id, createdAt, value: value.toString('base64') })}\n`);
  } catch {
    unreadable.push(id);
    root.resetReadTxn();
  }
}
try {
  for (const { key, value } of files.getRange()) process.stdout.write(`${JSON.stringify({ file: key, kind: value.kind, contentType: value.contentType })}\n`);
} catch {
  root.resetReadTxn(); // the files' kinds and types after a damaged page are taken as unknown
}
let blocks: string[] | null = null;
let hidden: number[] | null = null;
try {
  blocks = [...root.openDB<{ name: string }, number>({ name: 'blocks', encoding: 'msgpack' }).getRange()].map(({ value }) => value.name);
  hidden = [...root.openDB<Buffer, number>({ name: 'block_hidden', encoding: 'binary' }).getKeys()];
} catch {
  root.resetReadTxn(); // the blocks' rows are then not salvaged: a deleted event's row must not come back
}
process.stdout.write(`${JSON.stringify({ blocks: hidden && blocks, hidden })}\n`);
process.stdout.write(`${JSON.stringify({ unreadable })}\n`);
