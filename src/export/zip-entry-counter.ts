/**
 * Counts the entries of a zip as its bytes stream past, from their local file headers
 * (PKWARE APPNOTE, 4.3.7), for the export's progress line: the images received so far. An entry
 * whose sizes follow its data (a data descriptor, general purpose bit 3: the export's deflated
 * documents, which come after every image) ends the count, as its length is not known ahead.
 */

const LOCAL_HEADER = 0x04034b50;
const HEADER_BYTES = 30;
const ZIP64_EXTRA = 0x0001;

/** Feeds chunks of a zip in order; `entries` and `images` say what their local headers named. */
export class ZipEntryCounter {
  entries = 0;
  /** Entries under `images/`. */
  images = 0;
  private pending: Buffer = Buffer.alloc(0);
  /** Bytes of entry data still to skip before the next header. */
  private skip = 0;
  private done = false;

  /** Takes the next chunk of the zip (not kept). */
  push(chunk: Buffer): void {
    if (this.done) return;
    let at = 0;
    if (this.skip > 0) {
      at = Math.min(this.skip, chunk.length);
      this.skip -= at;
      if (at === chunk.length) return;
    }
    this.pending = this.pending.length === 0 ? chunk.subarray(at) : Buffer.concat([this.pending, chunk.subarray(at)]);
    while (!this.done && this.readHeader());
    if (this.done) {
      this.pending = Buffer.alloc(0);
      return;
    }
    if (this.skip > 0 && this.pending.length > 0) {
      const skipped = Math.min(this.skip, this.pending.length);
      this.skip -= skipped;
      this.pending = this.pending.subarray(skipped);
    }
    this.pending = Buffer.from(this.pending); // never keep a view of the caller's chunk
  }

  /** Reads one local header from `pending` when it is whole; false when more bytes are needed. */
  private readHeader(): boolean {
    const p = this.pending;
    if (p.length < HEADER_BYTES) return false;
    if (p.readUInt32LE(0) !== LOCAL_HEADER || (p.readUInt16LE(6) & 0x08) !== 0) {
      this.done = true;
      return false;
    }
    const nameLength = p.readUInt16LE(26);
    const extraLength = p.readUInt16LE(28);
    const headerEnd = HEADER_BYTES + nameLength + extraLength;
    if (p.length < headerEnd) return false;
    const name = p.toString('utf8', HEADER_BYTES, HEADER_BYTES + nameLength);
    let size = p.readUInt32LE(18);
    if (size === 0xffffffff) size = zip64CompressedSize(p.subarray(HEADER_BYTES + nameLength, headerEnd)) ?? size;
    this.entries++;
    if (name.startsWith('images/') && !name.endsWith('/')) this.images++;
    const available = p.length - headerEnd;
    const skipped = Math.min(size, available);
    this.pending = p.subarray(headerEnd + skipped);
    this.skip = size - skipped;
    return this.skip === 0;
  }
}

/** The compressed size in a ZIP64 extended information field (APPNOTE 4.5.3), when present. */
function zip64CompressedSize(extra: Buffer): number | undefined {
  for (let at = 0; at + 4 <= extra.length;) {
    const id = extra.readUInt16LE(at);
    const length = extra.readUInt16LE(at + 2);
    if (id === ZIP64_EXTRA && length >= 16) return Number(extra.readBigUInt64LE(at + 12));
    at += 4 + length;
  }
  return undefined;
}
