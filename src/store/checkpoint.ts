/**
 * Checkpoints of the LMDB index (docs/STORAGE.md, "Checkpoints"). LMDB runs with `noSync`: its
 * commits reach the page cache only, so a power cut could leave its file anywhere. A checkpoint
 * makes one snapshot K of the index durable and restorable:
 *
 * 1. a read transaction is pinned first: LMDB never reuses a page freed after the oldest live
 *    reader's snapshot, so no page of K (nor of any later snapshot) is overwritten until the
 *    next checkpoint releases the pin;
 * 2. data.mdb is fdatasync'd, then again under LMDB's write lock (nothing commits meanwhile),
 *    and LMDB's two meta pages are read: they describe K, whose pages are now on disk;
 * 3. the meta pages and the log position K covers are written to DATA_DIR/checkpoint
 *    (temporary file, fdatasync, rename, directory fsync); the previous pin is released.
 *
 * After an unclean stop the saved meta pages are written back before LMDB opens: the index is
 * then exactly K, and recovery replays the log from K's position. A clean stop marks the file
 * clean, and the next start opens LMDB as it is.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { RootDatabase, Transaction } from 'lmdb';
import { syncDirectory } from './blob-log.js';
import { checksum } from './segment-frames.js';

/** A place in the segment log: a segment number and a byte offset in it. */
export interface LogPosition {
  segment: number;
  offset: number;
}

/** What DATA_DIR/checkpoint says about the index, read before LMDB opens. */
export type CheckpointState =
  | { kind: 'none' }
  | { kind: 'clean'; position: LogPosition }
  | { kind: 'restored'; position: LogPosition };

const FILE_NAME = 'checkpoint';
const MAGIC = 0x4545434b; // "EECK"
const VERSION = 1;
/** magic u32 | version u8 | clean u8 | reserved u16 | segment u32 | offset f64 | meta bytes u32 | CRC32C u32 */
const HEADER_BYTES = 28;

function encode(clean: boolean, position: LogPosition, metas: Buffer): Buffer {
  const header = Buffer.alloc(HEADER_BYTES);
  header.writeUInt32BE(MAGIC, 0);
  header.writeUInt8(VERSION, 4);
  header.writeUInt8(clean ? 1 : 0, 5);
  header.writeUInt32BE(position.segment, 8);
  header.writeDoubleBE(position.offset, 12);
  header.writeUInt32BE(metas.length, 20);
  header.writeUInt32BE(checksum(metas, checksum(header.subarray(0, 24))), 24);
  return Buffer.concat([header, metas]);
}

function decode(bytes: Buffer): { clean: boolean; position: LogPosition; metas: Buffer } {
  const metaBytes = bytes.length >= HEADER_BYTES ? bytes.readUInt32BE(20) : -1;
  const metas = bytes.subarray(HEADER_BYTES);
  if (bytes.length < HEADER_BYTES || bytes.readUInt32BE(0) !== MAGIC || bytes.readUInt8(4) !== VERSION
    || metas.length !== metaBytes || bytes.readUInt32BE(24) !== checksum(metas, checksum(bytes.subarray(0, 24)))) {
    throw new Error('DATA_DIR/checkpoint is damaged; the index cannot be restored from it');
  }
  return { clean: bytes.readUInt8(5) === 1, position: { segment: bytes.readUInt32BE(8), offset: bytes.readDoubleBE(12) }, metas };
}

/**
 * Reads DATA_DIR/checkpoint before LMDB opens and, after an unclean stop, writes the saved
 * meta pages back into `dbDir`/data.mdb (fdatasync'd), so LMDB opens at the checkpoint.
 * @returns `none` for a store without a checkpoint (new, or written by an engine that synced
 *   every commit), `clean` after a clean stop, `restored` after an unclean one
 * @throws Error when the checkpoint file is damaged; the fs error of a failed write
 */
export function restoreCheckpoint(dataDir: string, dbDir: string): CheckpointState {
  const file = path.join(dataDir, FILE_NAME);
  if (!fs.existsSync(file)) return { kind: 'none' };
  const saved = decode(fs.readFileSync(file));
  if (saved.clean) return { kind: 'clean', position: saved.position };
  const fd = fs.openSync(path.join(dbDir, 'data.mdb'), 'r+');
  try {
    fs.writeSync(fd, saved.metas, 0, saved.metas.length, 0);
    fs.fdatasyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  return { kind: 'restored', position: saved.position };
}

/** Takes checkpoints of one open LMDB environment; one per store, on the thread that owns it. */
export class Checkpointer {
  private readonly fd: number;
  private readonly pageSize: number;
  private pinned: Transaction | undefined;
  private running: Promise<void> | undefined;
  private queued: Promise<void> | undefined;
  private lastPosition: LogPosition | undefined;
  private closed = false;

  /**
   * Pins the environment's current snapshot: construct right after LMDB opens, before any write.
   * @param readPosition the log position the index covers, read inside a transaction
   * @throws the fs error when data.mdb cannot be opened
   */
  constructor(
    private readonly root: RootDatabase,
    private readonly dataDir: string,
    private readonly readPosition: () => LogPosition,
  ) {
    this.pinned = root.useReadTransaction();
    this.fd = fs.openSync(path.join(dataDir, 'db', 'data.mdb'), 'r');
    this.pageSize = (root.getStats() as { pageSize: number }).pageSize;
  }

  /** The log position the last checkpoint covers (undefined before the first). */
  get position(): LogPosition | undefined {
    return this.lastPosition;
  }

  /**
   * Takes a checkpoint covering every LMDB commit made before the call. Calls made while one
   * runs share the next one.
   * @throws the fs error of a failed sync or write (the previous checkpoint stays in force)
   */
  take(): Promise<void> {
    if (!this.running) {
      this.running = this.run(false).finally(() => {
        this.running = undefined;
      });
      return this.running;
    }
    this.queued ??= this.running.catch(() => undefined).then(() => {
      this.queued = undefined;
      return this.take();
    });
    return this.queued;
  }

  /** Takes a last checkpoint and marks it clean: the next start opens LMDB as it is. */
  async closeClean(): Promise<void> {
    await this.running?.catch(() => undefined);
    await this.queued?.catch(() => undefined);
    await this.run(true);
    this.release();
  }

  /** Releases the pin and the file handle without marking the store clean. */
  release(): void {
    if (this.closed) return;
    this.closed = true;
    this.pinned?.done();
    this.pinned = undefined;
    fs.closeSync(this.fd);
  }

  private async run(clean: boolean): Promise<void> {
    const pin = this.root.useReadTransaction();
    try {
      // Most dirty pages go now, without the write lock; the locked sync below has little left.
      await new Promise<void>((resolve, reject) => fs.fdatasync(this.fd, (err) => (err ? reject(err) : resolve())));
      const metas = Buffer.alloc(this.pageSize * 2);
      let position: LogPosition | undefined;
      this.root.transactionSync(() => {
        fs.fdatasyncSync(this.fd);
        if (fs.readSync(this.fd, metas, 0, metas.length, 0) !== metas.length) throw new Error('data.mdb is shorter than its meta pages');
        position = this.readPosition();
      });
      const file = path.join(this.dataDir, FILE_NAME);
      const temporary = `${file}.tmp`;
      const out = await fsp.open(temporary, 'w');
      try {
        await out.writeFile(encode(clean, position!, metas));
        await out.datasync();
      } finally {
        await out.close();
      }
      await fsp.rename(temporary, file);
      await syncDirectory(this.dataDir);
      this.lastPosition = position;
    } catch (err) {
      pin.done();
      throw err;
    }
    this.pinned?.done();
    this.pinned = pin;
  }
}
