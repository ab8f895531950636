/**
 * An exported image's name in the zip and its size (docs/API.md, "Dataset export"): images go to
 * `images/<file_id>.<extension of the content type>` (mime-types' table: `image/jpeg` -> `jpg`;
 * `bin` when the type has none), and width and height come from the file's header, read with
 * image-size (no decoding; JPEG, PNG, WebP, GIF, BMP, TIFF, HEIF/AVIF and more).
 */
import { createHash } from 'node:crypto';
import { imageSize } from 'image-size';
import mime from 'mime-types';

/** A file id that is safe as a name as it is: letters, digits, `-` and `_` (a UUID is). */
const SAFE_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * `images/<fileId>.<ext>` for a file of `contentType`. The name is built from checked parts
 * only: a file id with any other character (one a hub stored before imports were checked, say
 * `../../tmp/x`) becomes `id-<SHA-256 of it, 32 hex digits>`, so no entry name holds a
 * separator, a dot or `..`; an extension comes from mime-types' table, never from the stored type.
 */
export function imageFileName(fileId: string, contentType: string): string {
  const base = SAFE_NAME.test(fileId) ? fileId : `id-${createHash('sha256').update(fileId).digest('hex').slice(0, 32)}`;
  return `images/${base}.${mime.extension(contentType) || 'bin'}`;
}

/**
 * The pixel size `bytes` declares in its header (pixels; the stored grid: an EXIF orientation
 * is not applied).
 * @returns undefined when the header is not one image-size reads, or declares no size
 */
export function imageDimensions(bytes: Buffer): { width: number; height: number } | undefined {
  try {
    const { width, height } = imageSize(bytes);
    return width > 0 && height > 0 ? { width, height } : undefined;
  } catch {
    return undefined;
  }
}
