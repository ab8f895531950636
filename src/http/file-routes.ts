/**
 * The routes that read stored files (docs/API.md, "Downloads", "Thumbnails"): images, videos and
 * local-only files by id, with Range, and image thumbnails; part of the store's table
 * (store-routes.ts, see route-table.ts).
 */
import { AppError } from '../errors.js';
import type { StoredFile } from '../store/index.js';
import { MAX_AVIF_PIXELS, MAX_SOURCE_PIXELS, MAX_WHOLE_DECODE_PIXELS, THUMBNAIL_LONGEST_SIDE, THUMBNAIL_TIMEOUT_SECONDS } from '../events/thumbnails.js';
import { downloadHeaders } from './download-headers.js';
import { sendFile } from './file-download.js';
import { STRING, type RouteDoc } from './route-docs.js';
import type { BytesReply, Route, ServerContext } from './route-table.js';
import type { Exchange } from './exchange.js';

/** Sends file `ex.params[0]` when it exists and is of `kind` (docs/API.md, "Errors": `file_not_found`). */
async function download(ex: Exchange, ctx: ServerContext, kind: StoredFile['kind']): Promise<void> {
  const [fileId] = ex.params;
  const file = ctx.store.openFile(fileId);
  if (!file || file.kind !== kind) throw new AppError('file_not_found', `File ${fileId} not found`);
  await sendFile(ex, file);
}

/**
 * The thumbnail of image `ex.params[0]` (docs/API.md, "Thumbnails"): the same 404 as its download
 * when it is absent or not an image (`file_not_found`), then made or taken from the cache (events/thumbnails.ts).
 * `private`: it is behind the key; a day, `immutable`: a stored image never changes (its id may
 * be removed by cleanup, which the page learns from the stream).
 */
async function thumbnail(ex: Exchange, ctx: ServerContext): Promise<BytesReply> {
  const [fileId] = ex.params;
  const file = ctx.store.openFile(fileId);
  if (!file || file.kind !== 'image') throw new AppError('file_not_found', `File ${fileId} not found`);
  const made = await ctx.thumbnails.of(file);
  return {
    status: 200,
    bytes: made.bytes,
    headers: {
      ...Object.fromEntries(downloadHeaders(made.contentType)),
      'Cache-Control': 'private, max-age=86400, immutable',
      'X-Source-Width': String(made.sourceWidth),
      'X-Source-Height': String(made.sourceHeight),
    },
  };
}

// ---------------------------------------------------------------------------------------------
// What /openapi.json says of each route (route-docs.ts); rules and parameters are docs/API.md's.

/** A download route's doc (docs/API.md, "Downloads"; `file_not_found`). */
function downloadDoc(idName: string, what: string, operationId: string, notFound: string): RouteDoc {
  const bytes = { '*/*': { schema: { type: 'string', format: 'binary' } } };
  return {
    tag: 'files',
    summary: `Download ${what}`,
    operationId,
    description: 'Range accepts bytes=start-end, bytes=start- and bytes=-suffix. File ids are ephemeral: cleanup may remove a file at any time, so handle 404.',
    pathParams: { [idName]: `Id of the ${what}.` },
    parameters: [{ name: 'Range', in: 'header', required: false, schema: STRING, description: 'e.g. bytes=0-1023' }],
    responses: {
      200: { description: 'The whole content.', headers: { 'Accept-Ranges': { schema: STRING } }, content: bytes },
      206: { description: 'The requested range.', headers: { 'Content-Range': { schema: STRING, description: 'bytes start-end/total' } }, content: bytes },
    },
    errors: {
      file_not_found: notFound,
      range_not_satisfiable: { description: 'Range not satisfiable.', headers: { 'Content-Range': { schema: STRING, description: 'bytes */total' } } },
    },
  };
}

/** What the image routes say of their 403 to another site's page (docs/API.md, "Browsers"; route-table.ts `refusesCrossSite`). */
const crossSiteRefused = 'A browser\'s request from another site\'s page (Sec-Fetch-Site: cross-site) whose Origin is not in CORS_ALLOWED_ORIGINS, such as an <img> of that page.';

// ---------------------------------------------------------------------------------------------
// The routes

/** The stored files' routes, in the order the store's table lists them (store-routes.ts `storeRoutes`). */
export const fileRoutes: Route[] = [
  {
    method: 'get',
    path: '/images/:image_id',
    gated: 'other',
    refusesCrossSite: true,
    doc: (({ errors, ...doc }) => ({ ...doc, errors: { ...errors, cross_origin_refused: crossSiteRefused } }))(downloadDoc('image_id', 'image', 'downloadImage', 'No such image.')),
    handler: (ex, ctx) => download(ex, ctx, 'image'),
  },
  {
    method: 'get',
    path: '/images/:image_id/thumbnail',
    gated: 'other',
    refusesCrossSite: true,
    doc: {
      tag: 'files',
      summary: 'A thumbnail of an image',
      operationId: 'imageThumbnail',
      description: `The image as a WebP whose longest side is at most ${THUMBNAIL_LONGEST_SIDE} px (a smaller image keeps its size), turned as its EXIF `
        + 'orientation says; X-Source-Width and X-Source-Height give the image\'s own size, in which its boxes are. Made once and kept in memory; '
        + 'one resize at a time. Made of JPEG, PNG, WebP, GIF and AVIF images only (an SVG, a TIFF or anything else answers 422 naming its format). File ids are ephemeral: handle 404.',
      pathParams: { image_id: 'Id of the image.' },
      responses: {
        200: {
          description: 'The thumbnail.',
          headers: {
            'Cache-Control': { schema: STRING, description: 'private, max-age=86400, immutable' },
            'X-Source-Width': { schema: { type: 'integer' }, description: 'Width of the stored image as shown (pixels).' },
            'X-Source-Height': { schema: { type: 'integer' }, description: 'Height of the stored image as shown (pixels).' },
          },
          content: { 'image/webp': { schema: { type: 'string', format: 'binary' } } },
        },
      },
      errors: {
        file_not_found: 'No such image.',
        thumbnail_unavailable: `The stored image is of a format thumbnails are not made of (named in the detail), no image the store decodes, over its pixel limit (${MAX_SOURCE_PIXELS / 1e6} megapixels; `
          + `${MAX_WHOLE_DECODE_PIXELS / 1e6} for one decoded whole: progressive JPEG, interlaced PNG, lossless WebP, GIF, animated; ${MAX_AVIF_PIXELS / 1e6} for AVIF), `
          + `or one whose resize took over ${THUMBNAIL_TIMEOUT_SECONDS} s. Asked again, the same answer at once.`,
        thumbnails_busy: 'THUMBNAIL_QUEUE_MAX thumbnails already wait to be made; retry after Retry-After (seconds).',
        cross_origin_refused: crossSiteRefused,
      },
    },
    handler: (ex, ctx) => thumbnail(ex, ctx),
  },
  {
    method: 'get',
    path: '/videos/:video_id',
    gated: 'other',
    doc: downloadDoc('video_id', 'video', 'downloadVideo', 'No such file, or the file is not a video.'),
    handler: (ex, ctx) => download(ex, ctx, 'video'),
  },
  {
    method: 'get',
    path: '/local-only-files/:file_id',
    gated: 'other',
    doc: downloadDoc('file_id', 'local-only file', 'downloadLocalOnlyFile', 'No such file, or the file is not a local-only file.'),
    handler: (ex, ctx) => download(ex, ctx, 'local_only'),
  },
];
