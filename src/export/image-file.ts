/**
 * An exported image's name in the zip and its size (docs/API.md, "Dataset export"): images go to
 * `images/<file_id>.<extension of the content type>` (mime-types' table: `image/jpeg` -> `jpg`;
 * `bin` when the type has none), and width and height come from the file's header, read with
 * image-size (no decoding; JPEG, PNG, WebP, GIF, BMP, TIFF, HEIF/AVIF and more).
 */
import { imageSize } from 'image-size';
import mime from 'mime-types';

/** `images/<fileId>.<ext>` for a file of `contentType`. */
export function imageFileName(fileId: string, contentType: string): string {
  return `images/${fileId}.${mime.extension(contentType) || 'bin'}`;
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
