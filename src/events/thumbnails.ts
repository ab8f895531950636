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
 *
 * Hostile images (docs/RELIABILITY.md, "Thumbnails"): only the formats
 * of THUMBNAIL_FORMATS are made into thumbnails, told from their first bytes before libvips sees
 * them, and libvips itself may use no other loader (sharp's `block`/`unblock`), so an SVG, a TIFF
 * or a PDF is refused at once; a resize is stopped after THUMBNAIL_TIMEOUT_SECONDS (sharp's
 * `timeout`); an image decoded whole before it can be shrunk has a lower pixel limit than one
 * shrunk on load or streamed (`pixelLimit`); a refusal is kept (THUMBNAIL_FAILURES_KEPT, for
 * THUMBNAIL_FAILURE_TTL_MS) and answered again at once; and past THUMBNAIL_QUEUE_MAX thumbnails
 * waiting, a request answers 503 with Retry-After.
 */
import { LRUCache } from 'lru-cache';
import pLimit, { type LimitFunction } from 'p-limit';
import type { Metadata, Sharp, SharpOptions } from 'sharp';
import { AppError } from '../errors.js';
import type { StoredFile } from '../store/index.js';
import { sniffFormat, SNIFF_BYTES } from './image-format.js';

/** The longest side of a thumbnail (pixels); a smaller image keeps its size. */
export const THUMBNAIL_LONGEST_SIDE = 256;
/** Bytes of thumbnails kept in memory (16 MiB: over a thousand of a few KiB each). */
export const THUMBNAIL_CACHE_BYTES = 16 * 1024 * 1024;
/** Resizes at a time. */
export const THUMBNAIL_CONCURRENCY = 1;
/**
 * Thumbnails waiting to be made beyond those being made, by default (THUMBNAIL_QUEUE_MAX,
 * docs/OPERATIONS.md, "Settings"): the operator page asks for up to 200 at once (50 events of up
 * to four images), so it fits; past it a request answers 503 `thumbnails_busy`.
 */
export const THUMBNAIL_QUEUE_MAX = 256;
/** Seconds a request refused for a full queue is told to wait (`Retry-After`): a few resizes. */
export const THUMBNAIL_RETRY_AFTER_SECONDS = 1;
/**
 * Seconds one resize may take before libvips stops it (sharp's `timeout`; whole seconds only): a
 * backstop, as the pixel limits below bound the work of a decoder that behaves: the slowest image
 * measured within them took 0.8 s at load 8 on 2 cores (docs/RELIABILITY.md, "Thumbnails"); an
 * SVG of nested `<use>` took 23 s before SVG was refused.
 */
export const THUMBNAIL_TIMEOUT_SECONDS = 5;
/** Refusals kept, so that asking again is answered at once with the same error. */
export const THUMBNAIL_FAILURES_KEPT = 1024;
/** How long a refusal is kept (ms): a resize stopped on a busy box is tried again after it. */
export const THUMBNAIL_FAILURE_TTL_MS = 10 * 60 * 1000;
/**
 * Pixels of an image shrunk as it is decoded or streamed through the resize, at most (40
 * megapixels, 7680x5120): a baseline JPEG (libjpeg scales on load), a lossy WebP (libwebp does),
 * a non-interlaced PNG (read line by line). A 40 MP one added at most 81 MB of RSS (a lossy WebP
 * with alpha; docs/RELIABILITY.md, "Thumbnails").
 */
export const MAX_SOURCE_PIXELS = 40_000_000;
/**
 * Pixels of an image decoded whole before it is shrunk, at most (12.5 megapixels: a 4032x3024
 * phone photo): a progressive JPEG (all its coefficients), an interlaced PNG, a lossless WebP, a
 * GIF, an animated image. Up to 11 bytes a pixel (a 16-bit RGBA interlaced PNG): 137 MB of RSS
 * measured at this limit, where 40 MP would take over 400 MB.
 */
export const MAX_WHOLE_DECODE_PIXELS = 12_500_000;
/**
 * Pixels of an AVIF (HEIF) image, at most (4.2 megapixels, 2560x1600 fits): libheif has no
 * shrink-on-load and decodes the whole image at up to 16 bits a sample, about 29 bytes of RSS a
 * pixel at 12 bits with alpha: 116 MB measured for a 2560x1600 one, where a 2 KB AVIF of 40 MP
 * took 997 MB (docs/RELIABILITY.md, "Thumbnails").
 */
export const MAX_AVIF_PIXELS = 4_200_000;
const WEBP_QUALITY = 70;

/** The formats thumbnails are made of, by the media type file-type tells from the first bytes (an APNG is a PNG). */
const THUMBNAIL_FORMATS: ReadonlySet<string> = new Set(['image/jpeg', 'image/png', 'image/apng', 'image/webp', 'image/gif', 'image/avif']);
const FORMAT_NAMES = 'JPEG, PNG, WebP, GIF and AVIF';
/** The libvips loaders of those formats (from a Buffer): every other loader is blocked. */
const ALLOWED_LOADERS = ['VipsForeignLoadJpegBuffer', 'VipsForeignLoadPngBuffer', 'VipsForeignLoadWebpBuffer', 'VipsForeignLoadNsgifBuffer', 'VipsForeignLoadHeifBuffer'];

type SharpFactory = (input: Buffer, options: SharpOptions) => Sharp;
let sharpLoaded: Promise<SharpFactory> | undefined;

/**
 * sharp, loaded on the first thumbnail rather than at start-up: libvips adds about 0.2 s and
 * 28 MB of RSS to a store whose operator page may never be opened. One libvips thread per
 * resize, and no libvips operation cache: each image is resized once (sharp's reference:
 * `sharp.concurrency`, `sharp.cache`). Every libvips loader but those of THUMBNAIL_FORMATS is
 * blocked, for the whole process (sharp's reference: `sharp.block`, `sharp.unblock`): bytes
 * libvips would read as another format than the one told from them are refused by libvips too.
 */
function loadSharp(): Promise<SharpFactory> {
  sharpLoaded ??= import('sharp').then(({ default: sharp }) => {
    sharp.concurrency(1);
    sharp.cache(false);
    sharp.block({ operation: ['VipsForeignLoad'] });
    sharp.unblock({ operation: ALLOWED_LOADERS });
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

/** True when a WebP's image is lossless (a `VP8L` chunk before any `VP8 `; RIFF chunks, the WebP container spec). */
function isLosslessWebp(bytes: Buffer): boolean {
  for (let at = 12; at + 8 <= bytes.length;) {
    const tag = bytes.toString('latin1', at, at + 4);
    if (tag === 'VP8L') return true;
    if (tag === 'VP8 ') return false;
    const size = bytes.readUInt32LE(at + 4);
    at += 8 + size + (size & 1);
  }
  return false;
}

/**
 * The pixel limit of an image (docs/API.md, "Thumbnails"): MAX_AVIF_PIXELS for AVIF (HEIF),
 * MAX_WHOLE_DECODE_PIXELS for one decoded whole before it is shrunk, else MAX_SOURCE_PIXELS.
 * @param meta its header, as sharp's `metadata` reads it
 * @param bytes the image (a WebP's chunks say whether it is lossless)
 * @returns the limit (pixels) and the images it is the limit of, for the refusal (`AVIF images`)
 */
export function pixelLimit(meta: Pick<Metadata, 'format' | 'isProgressive' | 'pages'>, bytes: Buffer): { pixels: number; of: string } {
  if (meta.format === 'heif') return { pixels: MAX_AVIF_PIXELS, of: 'AVIF images' };
  if ((meta.pages ?? 1) > 1) return { pixels: MAX_WHOLE_DECODE_PIXELS, of: 'animated images' };
  if (meta.format === 'gif') return { pixels: MAX_WHOLE_DECODE_PIXELS, of: 'GIFs' };
  if (meta.format === 'jpeg' && meta.isProgressive) return { pixels: MAX_WHOLE_DECODE_PIXELS, of: 'progressive JPEGs' };
  if (meta.format === 'png' && meta.isProgressive) return { pixels: MAX_WHOLE_DECODE_PIXELS, of: 'interlaced PNGs' };
  if (meta.format === 'webp' && isLosslessWebp(bytes)) return { pixels: MAX_WHOLE_DECODE_PIXELS, of: 'lossless WebPs' };
  return { pixels: MAX_SOURCE_PIXELS, of: 'images' };
}

const megapixels = (pixels: number): string => `${Number((pixels / 1e6).toFixed(1))} megapixels`;

/**
 * Reads `length` bytes of `file` from its start; a file gone under the index is file_not_found
 * (docs/API.md, "Downloads").
 * @throws AppError file_not_found (404)
 */
async function readStart(file: StoredFile, length: number): Promise<Buffer> {
  try {
    const bytes = Buffer.allocUnsafe(length);
    const read = await file.read(0, bytes);
    if (read !== length) throw new Error(`file ${file.id} is shorter in the log than its entry (${read} of ${length} bytes)`);
    return bytes;
  } catch (err) {
    throw new AppError('file_not_found', `File ${file.id} not found`, { cause: err });
  }
}

/**
 * Makes the thumbnail of `bytes`, the image of `fileId`, within the pixel limit of its kind.
 * @param timeoutSeconds whole seconds the resize may take (sharp's `timeout`)
 * @throws AppError thumbnail_unavailable (422) when the bytes are no image sharp decodes, one over
 *   its pixel limit (`pixelLimit`), or one whose resize took over `timeoutSeconds`
 */
async function makeThumbnail(fileId: string, bytes: Buffer, timeoutSeconds: number): Promise<Thumbnail> {
  const sharp = await loadSharp();
  let source: Metadata;
  try {
    source = await sharp(bytes, { limitInputPixels: false }).metadata();
  } catch (err) {
    throw new AppError('thumbnail_unavailable', `Image ${fileId} cannot be made into a thumbnail: ${(err as Error).message}`, { cause: err });
  }
  const limit = pixelLimit(source, bytes);
  if (source.width * source.height > limit.pixels) {
    throw new AppError('thumbnail_unavailable', `Image ${fileId} has ${source.width}x${source.height} pixels (${megapixels(source.width * source.height)}); `
      + `thumbnails are made of ${limit.of} of at most ${megapixels(limit.pixels)}`);
  }
  try {
    const { data, info } = await sharp(bytes, { limitInputPixels: limit.pixels, failOn: 'none' })
      .timeout({ seconds: timeoutSeconds })
      .autoOrient()
      .resize(THUMBNAIL_LONGEST_SIDE, THUMBNAIL_LONGEST_SIDE, { fit: 'inside', withoutEnlargement: true })
      .webp({ quality: WEBP_QUALITY })
      .toBuffer({ resolveWithObject: true });
    const shown = source.autoOrient ?? { width: source.width, height: source.height };
    return { bytes: data, contentType: 'image/webp', width: info.width, height: info.height, sourceWidth: shown.width, sourceHeight: shown.height };
  } catch (err) {
    const message = (err as Error).message.split('\n')[0];
    const why = message.startsWith('timeout') ? `its resize took over ${timeoutSeconds} s (${message})` : message;
    throw new AppError('thumbnail_unavailable', `Image ${fileId} cannot be made into a thumbnail: ${why}`, { cause: err });
  }
}

/** The bounds of a Thumbnails (defaults: the constants above). */
export interface ThumbnailOptions {
  /** Bytes of thumbnails kept (THUMBNAIL_CACHE_BYTES). */
  maxCacheBytes?: number;
  /** Resizes at a time (THUMBNAIL_CONCURRENCY). */
  concurrency?: number;
  /** Thumbnails waiting beyond those being made (THUMBNAIL_QUEUE_MAX); past it, 503. */
  maxQueued?: number;
  /** Whole seconds a resize may take (THUMBNAIL_TIMEOUT_SECONDS, 1..3600). */
  timeoutSeconds?: number;
  /** Refusals kept (THUMBNAIL_FAILURES_KEPT). */
  failuresKept?: number;
}

export class Thumbnails {
  private readonly cache: LRUCache<string, Thumbnail>;
  private readonly failures: LRUCache<string, AppError>;
  private readonly limit: LimitFunction;
  private readonly making = new Map<string, Promise<Thumbnail>>();
  private readonly capacity: number;
  private readonly timeoutSeconds: number;

  constructor(options: ThumbnailOptions = {}) {
    const concurrency = options.concurrency ?? THUMBNAIL_CONCURRENCY;
    this.cache = new LRUCache({ maxSize: options.maxCacheBytes ?? THUMBNAIL_CACHE_BYTES, sizeCalculation: (thumbnail) => thumbnail.bytes.length });
    this.failures = new LRUCache({ max: options.failuresKept ?? THUMBNAIL_FAILURES_KEPT, ttl: THUMBNAIL_FAILURE_TTL_MS });
    this.limit = pLimit(concurrency);
    this.capacity = concurrency + (options.maxQueued ?? THUMBNAIL_QUEUE_MAX);
    this.timeoutSeconds = options.timeoutSeconds ?? THUMBNAIL_TIMEOUT_SECONDS;
  }

  /**
   * The thumbnail of image `file`: kept, being made, or made now (queued behind other resizes).
   * A format thumbnails are not made of is refused before the queue; a refusal is kept and
   * answered again at once (THUMBNAIL_FAILURES_KEPT, for THUMBNAIL_FAILURE_TTL_MS).
   * @throws AppError thumbnail_unavailable (422) for a format not in THUMBNAIL_FORMATS (the detail
   *   names it), and as makeThumbnail; thumbnails_busy (503, `Retry-After`) when the queue is full,
   *   checked before anything is read; file_not_found (404) when the bytes vanished
   */
  async of(file: StoredFile): Promise<Thumbnail> {
    const kept = this.cache.get(file.id);
    if (kept) return kept;
    const refused = this.failures.get(file.id);
    if (refused) throw refused;
    let made = this.making.get(file.id);
    if (!made) {
      if (this.making.size >= this.capacity) {
        throw new AppError('thumbnails_busy', `${this.making.size} thumbnails are being made or waiting; retry after ${THUMBNAIL_RETRY_AFTER_SECONDS} s`, {
          headers: { 'Retry-After': String(THUMBNAIL_RETRY_AFTER_SECONDS) },
        });
      }
      made = this.make(file).finally(() => this.making.delete(file.id));
      this.making.set(file.id, made);
      void made.then(
        (thumbnail) => this.cache.set(file.id, thumbnail),
        (err: unknown) => {
          if (err instanceof AppError && err.code === 'thumbnail_unavailable') this.failures.set(file.id, err);
        },
      );
    }
    return made;
  }

  /** Tells the format from the first bytes, refusing what is not allowed, then queues the resize. */
  private async make(file: StoredFile): Promise<Thumbnail> {
    const format = await sniffFormat(await readStart(file, Math.min(file.size, SNIFF_BYTES)));
    if (!THUMBNAIL_FORMATS.has(format.mime)) {
      throw new AppError('thumbnail_unavailable', `Image ${file.id} is ${format.description}; `
        + `thumbnails are made of ${FORMAT_NAMES} images only`);
    }
    // The whole image is read once its turn comes: waiting thumbnails hold no image bytes.
    return this.limit(async () => makeThumbnail(file.id, await readStart(file, file.size), this.timeoutSeconds));
  }

  /** Thumbnails kept and their bytes; resizes running; thumbnails waiting (being told or queued); refusals kept. */
  get stats(): { kept: number; bytes: number; resizing: number; queued: number; failures: number } {
    return {
      kept: this.cache.size,
      bytes: this.cache.calculatedSize,
      resizing: this.limit.activeCount,
      queued: this.making.size - this.limit.activeCount,
      failures: this.failures.size,
    };
  }
}
