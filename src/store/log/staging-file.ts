/**
 * A streamed upload on its way into the blob log (docs/STORAGE.md, "The segment log"): it is
 * written to DATA_DIR/staging/ as a complete one-blob segment (frame header first, as a
 * placeholder, then the data with a running CRC32C), and once accepted it is renamed into
 * blobs/ as a segment of its own. Memory stays flat: chunks go to disk as they come, with
 * backpressure reported to the caller.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { checksum, FRAME_HEADER_BYTES, frameHeader } from './segment-frames.js';
import { isCanonicalId } from '../record/ids.js';
import type { FileKind } from './log-entries.js';

/** A staged upload, complete and durable, waiting to be committed. Sizes in bytes. */
export interface StagedBlob {
  fileId: string;
  path: string;
  size: number;
  crc: number;
}

/** How much of the start of an upload is kept for sniffing (file-type reads up to 4100 bytes). */
export const HEAD_BYTES = 4100;
/**
 * Bytes written between background fdatasyncs: the disk flushes while the upload still streams,
 * so the sync that makes the finished upload durable has little left to do.
 */
const SYNC_EVERY_BYTES = 64 * 1024 * 1024;

/** Writes one upload into the staging directory. */
export class StagingFile {
  readonly path: string;
  private readonly stream: fs.WriteStream;
  private size = 0;
  private crc = 0;
  private head = Buffer.alloc(0);
  private failure: Error | undefined;
  private unsynced = 0;
  private syncing = false;
  /** Callers of `drained()` woken by a write error too (a failed stream never drains). */
  private readonly waiting: (() => void)[] = [];

  /**
   * Opens `stagingDir/<a name of the store's>.part`, reserving room for the frame header. The
   * name is never the file id: a hub's ids come from devices, and a path is the store's own.
   * @param fileId the id the file keeps (a hub keeps a device's; docs/OPERATIONS.md, "Hub mode"); default: a new one
   * @throws Error when `fileId` is not a canonical UUID (ids.ts `isCanonicalId`): the log's frames hold ids as UUID bytes
   */
  constructor(stagingDir: string, readonly fileId: string = randomUUID()) {
    if (!isCanonicalId(fileId)) throw new Error(`file id ${JSON.stringify(String(fileId).slice(0, 64))} is not a canonical UUID`);
    this.path = path.join(stagingDir, `${randomUUID()}.part`);
    this.stream = fs.createWriteStream(this.path, { flags: 'w', start: FRAME_HEADER_BYTES, highWaterMark: 1024 * 1024 });
    this.stream.on('error', (err) => {
      this.failure ??= err;
      for (const wake of [...this.waiting]) wake();
    });
  }

  /** The write error (e.g. ENOSPC) that ended this upload, if any. */
  get error(): Error | undefined {
    return this.failure;
  }

  /** Bytes of data written so far. */
  get bytes(): number {
    return this.size;
  }

  /**
   * Appends a chunk (the caller must not reuse it).
   * @returns false when the disk is behind: wait for `drained()` before writing more
   */
  write(chunk: Buffer): boolean {
    this.size += chunk.length;
    this.crc = checksum(chunk, this.crc);
    if (this.head.length < HEAD_BYTES) this.head = Buffer.concat([this.head, chunk.subarray(0, HEAD_BYTES - this.head.length)]);
    const flowing = this.stream.write(chunk);
    this.unsynced += chunk.length;
    if (this.unsynced >= SYNC_EVERY_BYTES && !this.syncing) this.syncInBackground();
    return flowing;
  }

  private syncInBackground(): void {
    const { fd } = this.stream as unknown as { fd: number | null }; // set once open; untyped in @types/node
    if (typeof fd !== 'number') return;
    this.syncing = true;
    this.unsynced = 0;
    fs.fdatasync(fd, () => (this.syncing = false)); // a failure shows in finish()'s own sync
  }

  /** Resolves when buffered chunks have reached the file, or the file failed (see `error`). */
  drained(): Promise<void> {
    if (this.failure) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = () => {
        this.stream.off('drain', wake);
        this.waiting.splice(this.waiting.indexOf(wake) >>> 0, 1);
        resolve();
      };
      this.waiting.push(wake);
      this.stream.once('drain', wake);
    });
  }

  /**
   * Ends the upload: writes the frame header for `kind`, fdatasyncs the file.
   * @throws the fs error of any write (e.g. ENOSPC)
   */
  async finish(kind: FileKind): Promise<StagedBlob> {
    // A stream that failed answers end() with ERR_STREAM_DESTROYED: the error is the first one (its errno).
    await new Promise<void>((resolve, reject) => this.stream.end((err?: Error | null) => (err ? reject(this.failure ?? err) : resolve())));
    if (this.failure) throw this.failure;
    const handle = await fsp.open(this.path, 'r+');
    try {
      // Untagged: the segment's number is allocated at the attach (segment-frames.ts, segment tag).
      await handle.write(frameHeader(this.fileId, kind, this.size, this.crc, 0), 0, FRAME_HEADER_BYTES, 0);
      await handle.datasync();
    } finally {
      await handle.close();
    }
    return { fileId: this.fileId, path: this.path, size: this.size, crc: this.crc };
  }

  /** The first bytes of the data (up to HEAD_BYTES), for format sniffing. */
  get firstBytes(): Buffer {
    return this.head;
  }

  /**
   * Stops writing and removes the staging file (refused, aborted or failed upload). Never
   * throws: a file that cannot be removed now (EIO, a broken staging/) is left to the
   * consistency pass, which removes abandoned staging files.
   */
  async discard(): Promise<void> {
    if (!this.stream.closed) {
      const closed = new Promise<void>((resolve) => this.stream.once('close', () => resolve()));
      this.stream.destroy();
      await closed;
    }
    await fsp.rm(this.path, { force: true }).catch(() => undefined);
  }
}
