/**
 * The operator page (docs/USAGE.md, "The operator page"): `GET /` answers its HTML and
 * `GET /operator/{file}` its stylesheet and scripts. The HTML and the stylesheet are served from
 * `page/` as written; the scripts as `npm run build` compiled them from `page/*.ts`
 * (tsconfig.page.json, to `dist/page/`). No CDN, no framework: the files are read once and kept.
 *
 * Like /docs, the page and its files open without the key: they hold no data. The page asks for
 * the key and sends it on the calls it makes (docs/API.md, "Authentication").
 *
 * Like every route, they are served only under a name of the store (docs/API.md, "Browsers"):
 * under any other, the HTML is a 421 page naming the host and ALLOWED_HOSTS (`errorShape: 'page'`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { AppError } from '../errors.js';
import { packageRoot } from '../paths.js';
import { STRING } from './route-docs.js';
import type { BytesReply, Route } from './route-table.js';

const sourceDir = path.join(packageRoot, 'page');
const builtDir = path.join(packageRoot, 'dist', 'page');

/**
 * What the HTML may load and do (defence in depth: the page shows producers' strings, always
 * as text): its own scripts, styles and calls, images from blob URLs (thumbnails) and data URLs
 * (the empty favicon); no framing.
 */
const PAGE_POLICY = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; connect-src 'self'; "
  + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const JS = 'text/javascript; charset=utf-8';

/** The page's files by name: where each is, and its type. */
function listAssets(): Map<string, { file: string; type: string }> {
  const assets = new Map([['page.css', { file: path.join(sourceDir, 'page.css'), type: 'text/css; charset=utf-8' }]]);
  // Missing until `npm run build` ran: the HTML then says so itself.
  const built = fs.existsSync(builtDir) ? fs.readdirSync(builtDir) : [];
  for (const name of built.filter((file) => file.endsWith('.js'))) assets.set(name, { file: path.join(builtDir, name), type: JS });
  return assets;
}

let assets: ReturnType<typeof listAssets> | undefined;
const cache = new Map<string, Buffer>();

/** The bytes of `file`, read at its first request. */
function read(file: string): Buffer {
  let bytes = cache.get(file);
  if (!bytes) {
    bytes = fs.readFileSync(file);
    cache.set(file, bytes);
  }
  return bytes;
}

/** `no-cache`: the names stay the same across versions, so a browser revalidates (it gets the file again). */
const headers = (type: string, extra: Record<string, string> = {}): Record<string, string> => ({
  'Content-Type': type,
  'Cache-Control': 'no-cache',
  'X-Content-Type-Options': 'nosniff',
  ...extra,
});

export const operatorPageRoutes: Route[] = [
  {
    method: 'get',
    path: '/',
    public: true,
    errorShape: 'page',
    head: true,
    doc: {
      tag: 'operator page',
      summary: 'The operator page',
      operationId: 'operatorPage',
      description: 'Events per second, the newest events live with their images and boxes, filters by device and schema, '
        + 'capacity and backlogs (docs/USAGE.md, "The operator page"). Opens without the key; the page asks for it.',
      responses: { 200: { description: 'The page.', content: { 'text/html': { schema: STRING } } } },
    },
    handler: (): BytesReply => ({
      status: 200,
      bytes: read(path.join(sourceDir, 'index.html')),
      headers: headers('text/html; charset=utf-8', { 'Content-Security-Policy': PAGE_POLICY }),
    }),
  },
  {
    method: 'get',
    path: '/operator/:file',
    public: true,
    doc: {
      tag: 'operator page',
      summary: 'A file of the operator page',
      operationId: 'operatorPageAsset',
      pathParams: { file: 'page.css, or one of its scripts (main.js and the modules it imports).' },
      responses: { 200: { description: 'The file.', content: { 'text/css': { schema: STRING }, 'text/javascript': { schema: STRING } } } },
      errors: { not_found: 'No such file.' },
    },
    handler: (ex): BytesReply => {
      const [name] = ex.params;
      assets ??= listAssets();
      const asset = assets.get(name);
      if (!asset) throw new AppError('not_found');
      return { status: 200, bytes: read(asset.file), headers: headers(asset.type) };
    },
  },
];
