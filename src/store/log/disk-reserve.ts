/**
 * The disk reserve: a file of DISK_RESERVE_BYTES (default 8 MiB) kept in DATA_DIR so that a
 * cleanup can still commit on a disk that ingest has filled. LMDB is copy-on-write: deleting
 * records writes new pages before it frees old ones, so on a disk with no free byte the
 * deletions themselves fail (found by the disk-full harness, docs/RELIABILITY.md). The lifecycle
 * worker gives the reserve back to the disk before a cleanup when free space is below its size,
 * and takes it again once twice its size is free.
 */
import fs from 'node:fs/promises';
import path from 'node:path';

const RESERVE_FILE = 'disk-reserve';
const WRITE_CHUNK = Buffer.alloc(1024 * 1024);

/** Bytes of the filesystem holding `dir` that an unprivileged write may still use. */
export async function freeBytes(dir: string): Promise<number> {
  const stats = await fs.statfs(dir);
  return stats.bavail * stats.bsize;
}

/** The reserve file of one data directory. */
export class DiskReserve {
  readonly file: string;

  /**
   * @param dataDir DATA_DIR
   * @param bytes reserve size (bytes; DISK_RESERVE_BYTES): room for a few deletion batches' worth
   *   of LMDB pages; 0 holds nothing
   * @param free reads the free bytes of DATA_DIR's filesystem (a parameter for tests)
   */
  constructor(
    dataDir: string,
    readonly bytes: number,
    private readonly free: (dir: string) => Promise<number> = freeBytes,
  ) {
    this.file = path.join(dataDir, RESERVE_FILE);
  }

  /** Whether the reserve file is in place at its full size. */
  async held(): Promise<boolean> {
    const stats = await fs.stat(this.file).catch(() => undefined);
    return stats !== undefined && stats.size >= this.bytes;
  }

  /**
   * Takes the reserve when it is not held and at least twice its size is free: writes it to a
   * temporary name, fdatasyncs it (so its blocks are really allocated) and renames it into place.
   * With a size of 0, removes any reserve an earlier setting left.
   * @returns whether the reserve is held afterwards; false on a disk without room (ENOSPC and
   *   EDQUOT leave no file behind)
   * @throws other file-system errors
   */
  async take(): Promise<boolean> {
    if (this.bytes === 0) {
      await fs.rm(this.file, { force: true }); // a reserve left by an earlier setting
      return false;
    }
    if (await this.held()) return true;
    if ((await this.free(path.dirname(this.file))) < 2 * this.bytes) return false;
    const staging = `${this.file}.tmp`;
    const handle = await fs.open(staging, 'w');
    try {
      for (let written = 0; written < this.bytes; written += WRITE_CHUNK.length) {
        await handle.write(WRITE_CHUNK, 0, Math.min(WRITE_CHUNK.length, this.bytes - written));
      }
      await handle.datasync();
    } catch (err) {
      await handle.close();
      await fs.rm(staging, { force: true });
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOSPC' || code === 'EDQUOT') return false;
      throw err;
    }
    await handle.close();
    await fs.rename(staging, this.file);
    return true;
  }

  /**
   * Gives the reserve back to the disk when less than its size is free, so the cleanup that
   * follows can commit its deletions.
   * @returns whether it was given back
   */
  async releaseIfLow(): Promise<boolean> {
    if (this.bytes === 0 || (await this.free(path.dirname(this.file))) >= this.bytes) return false;
    const present = await fs.stat(this.file).then(() => true, () => false);
    if (present) await fs.rm(this.file, { force: true });
    return present;
  }
}
