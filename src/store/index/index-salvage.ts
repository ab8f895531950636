/**
 * Salvage of a damaged index (docs/STORAGE.md, "A damaged index"): what `edge-events check
 * --repair` reads of the index it replaced (`db.damaged-<time>/`) besides the log. LMDB meets a
 * damaged page as an error, or, in a file cut short, as SIGBUS, which ends the process: so the
 * damaged index is read by a child process (index-salvage-child.ts), and what it wrote before any
 * end is kept.
 */
import { spawn } from 'node:child_process';
import readline from 'node:readline';
import type { FileKind } from '../log/log-entries.js';

/** A record read from a damaged index: the event's id, created_at (µs) and stored value (record-codec.ts). */
export interface SalvagedRecord {
  id: string;
  createdAt: number;
  value: Buffer;
}

/** What a salvage read. */
export interface Salvage {
  records: SalvagedRecord[];
  /** The kind and content type of each file entry read, by file id. */
  files: Map<string, { kind: FileKind; contentType: string }>;
  /** Ids of the events the index names whose record did not read; null when the child ended before it could list them (a crash). */
  unreadable: string[] | null;
  /**
   * The names of the live blocks its catalogue lists and the created_at (µs) of their hidden rows
   * (docs/STORAGE.md, "Blocks"); null when either did not read whole.
   */
  blocks: { names: string[]; hidden: number[] } | null;
  /** The version of "Two copies of every record" the index counted by (its `meta.recordCopies`), null when none or unread. */
  recordCopies: number | null;
}

/**
 * Reads every record it can from the LMDB environment in `indexDir`, in a child process.
 * @throws the error of spawning the child (a crash of the child is not an error: its records so far are kept)
 */
export async function salvageRecords(indexDir: string): Promise<Salvage> {
  const child = spawn(process.execPath, [new URL('./index-salvage-child.js', import.meta.url).pathname, indexDir], { stdio: ['ignore', 'pipe', 'ignore'] });
  const salvage: Salvage = { records: [], files: new Map(), unreadable: null, recordCopies: null, blocks: null };
  const exited = new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', () => resolve());
  });
  for await (const line of readline.createInterface({ input: child.stdout })) {
    const parsed = JSON.parse(line) as {
      id?: string; createdAt?: number; value?: string; unreadable?: string[]; file?: string; kind?: FileKind; contentType?: string; recordCopies?: unknown;
      blocks?: string[] | null; hidden?: number[] | null;
    };
    if (parsed.hidden !== undefined) salvage.blocks = parsed.blocks && parsed.hidden ? { names: parsed.blocks, hidden: parsed.hidden } : null;
    else if (parsed.recordCopies !== undefined) salvage.recordCopies = typeof parsed.recordCopies === 'number' ? parsed.recordCopies : null;
    else if (parsed.unreadable !== undefined) salvage.unreadable = parsed.unreadable;
    else if (parsed.file !== undefined) salvage.files.set(parsed.file, { kind: parsed.kind!, contentType: parsed.contentType! });
    else salvage.records.push({ id: parsed.id!, createdAt: parsed.createdAt!, value: Buffer.from(parsed.value!, 'base64') });
  }
  await exited;
  return salvage;
}
