/**
 * What a payload's bytes are, told from its first bytes by file-type's signatures (its reference:
 * `fileTypeFromBuffer`), SVG from its `<svg` element, as file-type does not name it. A create's
 * image is accepted when they are an image (docs/API.md, "Image types"); thumbnails are made of a
 * few of those (thumbnails.ts).
 */
import { fileTypeFromBuffer } from 'file-type';

/** What a payload's first bytes say it is. */
export interface SniffedFormat {
  /** Its media type (`application/octet-stream` when unknown). */
  mime: string;
  /**
   * An image (docs/API.md, "Image types"): a type file-type names `image/*`, camera raw formats
   * among them. SVG is not: a document that can carry script, and no camera's frame.
   */
  image: boolean;
  /** What the bytes are, for an answer: `PDF (application/pdf)`, `SVG (image/svg+xml)`, `text ("hello world")`. */
  description: string;
}

/** Bytes file-type reads to tell a type (its own sample size, `reasonableDetectionSizeInBytes`). */
export const SNIFF_BYTES = 4100;
/** The image types named in answers that refuse a payload; docs/API.md lists them all. */
export const COMMON_IMAGE_TYPES = 'JPEG, PNG, WebP, GIF, AVIF, HEIC, TIFF, BMP';
/** Bytes of an unknown payload quoted in its description. */
const QUOTED_BYTES = 40;

/** True when `bytes` read as text: tabs, line ends, printable ASCII, or UTF-8's multi-byte sequences. */
function looksLikeText(bytes: Uint8Array): boolean {
  for (const byte of bytes) {
    if (byte < 0x20 ? byte !== 0x09 && byte !== 0x0a && byte !== 0x0d : byte === 0x7f) return false;
  }
  return true;
}

/** An unknown payload described by its first bytes: as text when it reads as text, else in hex. */
function describeUnknown(head: Uint8Array): string {
  const start = Buffer.from(head.buffer, head.byteOffset, Math.min(head.byteLength, QUOTED_BYTES));
  const more = head.byteLength > QUOTED_BYTES ? '...' : '';
  if (looksLikeText(start)) return `text (${JSON.stringify(start.toString('utf8') + more)})`;
  return `of no known type (first bytes ${start.subarray(0, 8).toString('hex').replace(/../g, '$& ').trim()}${head.byteLength > 8 ? ' ...' : ''})`;
}

/**
 * The type of a payload from its first bytes.
 * @param head the payload, or at least its first SNIFF_BYTES bytes
 */
export async function sniffFormat(head: Uint8Array): Promise<SniffedFormat> {
  const type = await fileTypeFromBuffer(head);
  if ((!type || type.mime === 'application/xml') && /<svg[\s>/]/i.test(Buffer.from(head.buffer, head.byteOffset, Math.min(head.byteLength, SNIFF_BYTES)).toString('latin1'))) {
    return { mime: 'image/svg+xml', image: false, description: 'SVG (image/svg+xml)' };
  }
  if (!type) return { mime: 'application/octet-stream', image: false, description: describeUnknown(head) };
  return { mime: type.mime, image: type.mime.startsWith('image/'), description: `${type.ext.toUpperCase()} (${type.mime})` };
}
