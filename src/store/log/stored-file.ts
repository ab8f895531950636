/**
 * A stored file as readers outside the store see it (docs/STORAGE.md, "Reading files"): what it is
 * (kind, size, content type, the event it belongs to) and its bytes, read by position or as a
 * stream. Where the bytes live (segment and offset in the log) stays inside the store: a file that
 * compaction moved while it was being read (docs/STORAGE.md, "Reclaiming space") is looked up again,
 * once, at its new place.
 */
import type { BlobReader } from './blob-reader.js';
import type { FileEntry, FileKind } from './log-entries.js';

/** Bytes per chunk of `StoredFile.stream`. */
const STREAM_CHUNK_BYTES = 256 * 1024;

export class StoredFile {
  /**
   * @param locate where file `id` is now (undefined once it is deleted)
   * @param entry where it was when it was opened
   */
  constructor(readonly id: string, private entry: FileEntry, private readonly blobs: BlobReader, private readonly locate: (id: string) => FileEntry | undefined) {}

  get kind(): FileKind {
    return this.entry.kind;
  }

  /** Its length (bytes). */
  get size(): number {
    return this.entry.length;
  }

  get contentType(): string {
    return this.entry.contentType;
  }

  /** created_at (µs) of the event it belongs to. */
  get eventCreatedAt(): number {
    return this.entry.event;
  }

  /** CRC32C of its bytes, as the log's frame holds it (segment-frames.ts `checksum`). */
  get crc(): number {
    return this.entry.crc;
  }

  /**
   * Reads up to `length` bytes at `position` (bytes into the file) into `target`.
   * @returns the bytes read: `length`, or fewer where the file ends (or its segment is short)
   * @throws the fs error of the read; ENOENT when the file was deleted meanwhile
   */
  async read(position: number, target: Buffer, length = target.length): Promise<number> {
    const wanted = Math.max(0, Math.min(length, this.entry.length - position));
    try {
      return await this.blobs.read(this.entry.segment, this.entry.offset + position, target, wanted);
    } catch (err) {
      const moved = (err as NodeJS.ErrnoException).code === 'ENOENT' ? this.locate(this.id) : undefined;
      if (!moved || moved.segment === this.entry.segment) throw err;
      this.entry = moved;
      return this.blobs.read(moved.segment, moved.offset + position, target, wanted);
    }
  }

  /**
   * Its bytes, whole (for images: at most MAX_RECORD_SIZE_BYTES).
   * @throws as `read`, or an Error when its segment holds fewer bytes than its entry says
   */
  async readAll(): Promise<Buffer> {
    const bytes = Buffer.allocUnsafe(this.entry.length);
    const read = await this.read(0, bytes);
    if (read !== bytes.length) throw new Error(`file ${this.id} is shorter in the log than its entry (${read} of ${bytes.length} bytes)`);
    return bytes;
  }

  /**
   * Its bytes as a stream of chunks of at most `chunkBytes`, read as they are pulled.
   * @throws (through the stream) as `readAll`
   */
  stream(chunkBytes = STREAM_CHUNK_BYTES): ReadableStream<Uint8Array> {
    let sent = 0;
    return new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        if (sent === this.size) {
          controller.close();
          return;
        }
        const chunk = Buffer.allocUnsafe(Math.min(chunkBytes, this.size - sent));
        const read = await this.read(sent, chunk);
        if (read !== chunk.length) throw new Error(`file ${this.id} is shorter in the log than its entry`);
        sent += read;
        controller.enqueue(chunk);
      },
    });
  }
}
