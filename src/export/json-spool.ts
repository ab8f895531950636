/**
 * A JSON array written to a temporary file one batch of elements at a time, and read back as a
 * stream (docs/API.md, "Dataset export", "Memory"): how COCO's `images` and `annotations` and
 * Label Studio's tasks are built while events stream past without being held in memory. The
 * file holds one element per line (JSON.stringify never writes a raw newline); it is read back
 * either as the array's body (newlines become commas, no parsing) or line by line.
 *
 * Memory: one batch being written plus the write stream's buffer (64 KiB); on reading, one
 * 64 KiB chunk (or one line).
 */
import { createReadStream, createWriteStream } from 'node:fs';
import type { WriteStream } from 'node:fs';
import { once } from 'node:events';
import path from 'node:path';
import readline from 'node:readline';
import { drained } from './stream-drain.js';

const CHUNK_BYTES = 64 * 1024;
const NEWLINE = 0x0a;
const COMMA = 0x2c;

export class JsonSpool {
  private readonly out: WriteStream;
  private written = 0;
  private elements = 0;
  private failure: Error | undefined;

  /** Creates `name` in `directory` (which the caller owns and removes). */
  constructor(directory: string, name: string) {
    this.out = createWriteStream(path.join(directory, name), { highWaterMark: CHUNK_BYTES });
    this.out.on('error', (err) => {
      this.failure = err;
    });
  }

  /** Path of the temporary file. */
  get path(): string {
    return this.out.path as string;
  }

  /** Elements appended so far. */
  get count(): number {
    return this.elements;
  }

  /**
   * Appends `values` as elements; resolves once the file took them or its buffer has room.
   * @throws the file system's error (e.g. ENOSPC) of this or an earlier write
   */
  async push(values: readonly unknown[]): Promise<void> {
    if (this.failure) throw this.failure;
    if (values.length === 0) return;
    const text = `${values.map((value) => JSON.stringify(value)).join('\n')}\n`;
    this.elements += values.length;
    this.written += Buffer.byteLength(text);
    if (!this.out.write(text)) await drained(this.out);
    if (this.failure) throw this.failure;
  }

  /** Closes the file; call once, before reading. @throws the file system's error, if any */
  async close(): Promise<void> {
    if (!this.out.closed) {
      this.out.end();
      await once(this.out, 'close').catch(() => undefined);
    }
    if (this.failure) throw this.failure;
  }

  /** The elements joined by commas, without brackets: the body of the JSON array, in chunks. */
  async *arrayBody(): AsyncGenerator<Buffer> {
    let position = 0;
    for await (const chunk of createReadStream(this.path, { highWaterMark: CHUNK_BYTES }) as AsyncIterable<Buffer>) {
      for (let at = chunk.indexOf(NEWLINE); at !== -1; at = chunk.indexOf(NEWLINE, at + 1)) chunk[at] = COMMA;
      position += chunk.length;
      // The last element's newline is not a separator.
      const body = position === this.written ? chunk.subarray(0, chunk.length - 1) : chunk;
      if (body.length > 0) yield body;
    }
  }

  /** The elements' JSON texts, one by one. */
  async *lines(): AsyncGenerator<string> {
    const reader = readline.createInterface({ input: createReadStream(this.path, { highWaterMark: CHUNK_BYTES }), crlfDelay: Infinity });
    for await (const line of reader) if (line !== '') yield line;
  }
}
