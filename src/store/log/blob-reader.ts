/**
 * Positioned reads of blob slices for downloads and Range requests: a Range request is a positioned
 * read of the blob's slice of its segment (docs/ARCHITECTURE.md, "Attach and download"). Segment
 * file handles are cached and shared; a handle evicted or forgotten while a read is under way
 * closes when that read ends.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { segmentFileName } from './segment-files.js';

const MAX_OPEN_SEGMENTS = 64;

interface OpenSegment {
  handle: Promise<fsp.FileHandle>;
  readers: number;
  closing: boolean;
}

/** Reads slices of segment files through a small cache of open handles. */
export class BlobReader {
  private readonly segments = new Map<number, OpenSegment>();

  constructor(private readonly blobsDir: string) {}

  /**
   * Reads up to `length` bytes of segment `segment` at `position` (bytes) into `target`.
   * @returns the bytes read (fewer only at the end of the file)
   * @throws the fs error (ENOENT when the segment vanished)
   */
  async read(segment: number, position: number, target: Buffer, length = target.length): Promise<number> {
    const entry = this.acquire(segment);
    try {
      const handle = await entry.handle;
      let done = 0;
      while (done < length) {
        const { bytesRead } = await handle.read(target, done, length - done, position + done);
        if (bytesRead === 0) break;
        done += bytesRead;
      }
      return done;
    } finally {
      entry.readers--;
      if (entry.closing && entry.readers === 0) await closeQuietly(entry);
    }
  }

  /** Drops the cached handle of a segment (before it is deleted or rewritten). */
  async forget(segment: number): Promise<void> {
    const entry = this.segments.get(segment);
    if (!entry) return;
    this.segments.delete(segment);
    entry.closing = true;
    if (entry.readers === 0) await closeQuietly(entry);
  }

  /** Closes every cached handle. */
  async close(): Promise<void> {
    await Promise.all([...this.segments.keys()].map((s) => this.forget(s)));
  }

  private acquire(segment: number): OpenSegment {
    let entry = this.segments.get(segment);
    if (!entry) {
      if (this.segments.size >= MAX_OPEN_SEGMENTS) void this.forget(this.segments.keys().next().value!);
      entry = { handle: fsp.open(path.join(this.blobsDir, segmentFileName(segment)), 'r'), readers: 0, closing: false };
      const created = entry;
      entry.handle.catch(() => this.segments.get(segment) === created && this.segments.delete(segment));
      this.segments.set(segment, entry);
    }
    entry.readers++;
    return entry;
  }
}

async function closeQuietly(entry: OpenSegment): Promise<void> {
  await (await entry.handle.catch(() => undefined))?.close().catch(() => undefined);
}
