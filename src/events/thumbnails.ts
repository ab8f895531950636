/**
 * Thumbnails of stored images (docs/API.md, "Thumbnails"): a WebP whose longest side is at most
 * THUMBNAIL_LONGEST_SIDE pixels, made by sharp (libvips) from the stored bytes, turned as their
 * EXIF orientation says (as a browser shows the full image).
 *
 * Bounded, since the box also runs inference: at most THUMBNAIL_CONCURRENCY resizes at a time,
 * each on one libvips thread (sharp's `concurrency`), others queued; a request for a thumbnail
 * already being made waits for that one. Made thumbnails are kept in memory, least recently used
 * dropped first, up to THUMBNAIL_CACHE_BYTES: a stored image never changes once written, so its
 * file id names its thumbnail for good; a file cleanup removed is refused by the route before the
 * cache is asked, and its entry ages out. Memory rather than disk: nothing to write to the flash
 * (docs/OPERATIONS.md, "Disk writes"), nothing for cleanup, reset or MAX_STORAGE_BYTES to account
 * for, and a restart costs only a resize per image shown again.
 */
import { LRUCache } from 'lru-cache';
import pLimit, { type LimitFunction } from 'p-limit';
import type { Sharp, SharpOptions } from 'sharp';
import { AppError } from '../errors.js';
import type { StoredFile } from '../store/stored-file.js';

/** The longest side of a thumbnail (pixels); a smaller image keeps its size. */
export const THUMBNAIL_LONGEST_SIDE = 256;
/** Bytes of thumbnails kept in memory (16 MiB: over a thousand of a few KiB each). */
export const THUMBNAIL_CACHE_BYTES = 16 * 1024 * 1024;
/** Resizes at a time. */
export const THUMBNAIL_CONCURRENCY = 1;
/**
 * Pixels of an image a thumbnail is made of, at most (40 megapixels, 7680x5120): decoding a
 * larger one (a small PNG may declare a huge canvas) would take memory the box does not spare.
 */
export const MAX_SOURCE_PIXELS = 40_000_000;
const WEBP_QUALITY = 70;

let sharpLoaded: Promise<(input: Buffer, options: SharpOptions) => Sharp> | undefined;

/**
 * sharp, loaded on the first thumbnail rather than at start-up: libvips adds about 0.2 s and
 * 28 MB of RSS to a store whose operator page may never be opened. One libvips thread per
 * resize, and no libvips operation cache: each image is resized once (sharp's reference:
 * `sharp.concurrency`, `sharp.cache`).
 */
function loadSharp(): Promise<(input: Buffer, options: SharpOptions) => Sharp> {
  sharpLoaded ??= import('sharp').then(({ default: sharp }) => {
    sharp.concurrency(1);
    sharp.cache(false);
    return sharp;
  });
  return sharpLoaded;
}

/** A made thumbnail. */
export interface Thumbnail {
  bytes: Buffer;
  contentType: 'image/webp';
  /** Its size (pixels). */
  width: number;
  height: number;
  /** The stored image's size as shown (pixels, after its EXIF orientation): boxes are in these. */
  sourceWidth: number;
  sourceHeight: number;
}

/** Reads `file` whole; a file gone under the index is file_not_found (docs/API.md, "Downloads"). */
async function readImage(file: StoredFile): Promise<Buffer> {
  try {
    return await file.readAll();
  } catch (err) {
    throw new AppError('file_not_found', `File ${file.id} not found`, { cause: err });
  }
}

/**
 * Makes the thumbnail of `file`.
 * @throws AppError thumbnail_unavailable (422) when the bytes are no image sharp decodes, or one
 *   over MAX_SOURCE_PIXELS; file_not_found (404) when the bytes vanished
 */
async function makeThumbnail(file: StoredFile): Promise<Thumbnail> {
  const bytes = await readImage(file);
  const sharp = await loadSharp();
  try {
    const source = await sharp(bytes, { limitInputPixels: MAX_SOURCE_PIXELS }).metadata();
    const { data, info } = await sharp(bytes, { limitInputPixels: MAX_SOURCE_PIXELS, failOn: 'none' })
      .autoOrient()
      .resize(THUMBNAIL_LONGEST_SIDE, THUMBNAIL_LONGEST_SIDE, { fit: 'inside', withoutEnlargement: true })
      .webp({ quality: WEBP_QUALITY })
      .toBuffer({ resolveWithObject: true });
    const shown = source.autoOrient ?? { width: source.width, height: source.height };
    return { bytes: data, contentType: 'image/webp', width: info.width, height: info.height, sourceWidth: shown.width, sourceHeight: shown.height };
  } catch (err) {
    throw new AppError('thumbnail_unavailable', `Image ${file.id} cannot be made into a thumbnail: ${(err as Error).message}`, { cause: err });
  }
}

export class Thumbnails {
  private readonly cache: LRUCache<string, Thumbnail>;
  private readonly limit: LimitFunction;
  private readonly making = new Map<string, Promise<Thumbnail>>();

  /**
   * @param maxCacheBytes bytes of thumbnails kept (default THUMBNAIL_CACHE_BYTES)
   * @param concurrency resizes at a time (default THUMBNAIL_CONCURRENCY)
   */
  constructor(maxCacheBytes = THUMBNAIL_CACHE_BYTES, concurrency = THUMBNAIL_CONCURRENCY) {
    this.cache = new LRUCache({ maxSize: maxCacheBytes, sizeCalculation: (thumbnail) => thumbnail.bytes.length });
    this.limit = pLimit(concurrency);
  }

  /**
   * The thumbnail of image `file`: kept, being made, or made now (queued behind other resizes).
   * @throws as makeThumbnail; a failure is not kept (the next request tries again)
   */
  async of(file: StoredFile): Promise<Thumbnail> {
    const kept = this.cache.get(file.id);
    if (kept) return kept;
    let made = this.making.get(file.id);
    if (!made) {
      made = this.limit(() => makeThumbnail(file)).finally(() => this.making.delete(file.id));
      this.making.set(file.id, made);
      void made.then((thumbnail) => this.cache.set(file.id, thumbnail), () => undefined);
    }
    return made;
  }

  /** Thumbnails kept and their bytes; resizes running and queued. */
  get stats(): { kept: number; bytes: number; resizing: number; queued: number } {
    return { kept: this.cache.size, bytes: this.cache.calculatedSize, resizing: this.limit.activeCount, queued: this.limit.pendingCount };
  }
}
