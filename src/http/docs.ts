/**
 * `/docs` (Swagger UI from the swagger-ui-dist package: no CDN, works offline on the device)
 * and `/openapi.json` (generated from the route table and the same schemas ajv uses). Both open
 * without the key, so a browser can load them; Swagger UI's "Authorize" then sends X-API-Key on
 * the calls it makes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { AppError } from '../errors.js';
import { openApiJson } from './openapi.js';
import { STRING } from './route-docs.js';
import type { BytesReply, Route } from './route-table.js';

const require = createRequire(import.meta.url);
// absolute-path.js only: the package's index loads the whole 1.5 MB UI bundle into the server.
const swaggerDir: string = (require('swagger-ui-dist/absolute-path.js') as () => string)();

const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css',
  'swagger-ui-bundle.js': 'application/javascript',
  'swagger-ui-standalone-preset.js': 'application/javascript',
  'favicon-32x32.png': 'image/png',
};

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>edge-event-store API</title>
  <link rel="stylesheet" href="/docs/swagger-ui.css">
  <link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/swagger-ui-bundle.js"></script>
  <script src="/docs/swagger-ui-standalone-preset.js"></script>
  <script src="/docs/swagger-init.js"></script>
</body>
</html>`;

const INIT = `window.ui = SwaggerUIBundle({
  url: '/openapi.json', dom_id: '#swagger-ui', deepLinking: true, persistAuthorization: true,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset], layout: 'StandaloneLayout',
});`;

const cache = new Map<string, Buffer>();
function asset(name: string): Buffer {
  let bytes = cache.get(name);
  if (!bytes) {
    bytes = fs.readFileSync(path.join(swaggerDir, name));
    cache.set(name, bytes);
  }
  return bytes;
}

/**
 * The documentation routes.
 * @param documented the routes /openapi.json describes (the server's whole table, these included),
 *   read at the first request
 */
/**
 * The Swagger UI page's policy: its scripts, styles and images from this store only (style-src
 * takes 'unsafe-inline' for the styles Swagger UI's React sets; img-src data: for its icons),
 * requests to this store only (the OpenAPI document, "Try it out"), and no framing.
 */
const PAGE_POLICY = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; "
  + "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** What every file of Swagger UI is served with: no type sniffing. */
const NOSNIFF = { 'X-Content-Type-Options': 'nosniff' };

export const docsRoutes = (documented: () => readonly Route[]): Route[] => [
  {
    method: 'get',
    path: '/openapi.json',
    public: true,
    doc: {
      tag: 'docs',
      summary: 'This OpenAPI document',
      operationId: 'openApiDocument',
      responses: { 200: { description: 'The OpenAPI 3.1 document.', content: { 'application/json': { schema: { type: 'object' } } } } },
    },
    handler: () => ({ status: 200, bytes: openApiJson(documented()), headers: { 'Content-Type': 'application/json' } }),
  },
  {
    method: 'get',
    path: '/docs',
    public: true,
    doc: {
      tag: 'docs',
      summary: 'Swagger UI',
      operationId: 'swaggerUi',
      description: 'This document, rendered (from the swagger-ui-dist package; no CDN).',
      responses: { 200: { description: 'The page.', content: { 'text/html': { schema: STRING } } } },
    },
    handler: () => ({ status: 200, bytes: PAGE, headers: { 'Content-Type': 'text/html; charset=utf-8', 'Content-Security-Policy': PAGE_POLICY, ...NOSNIFF } }),
  },
  {
    method: 'get',
    path: '/docs/:asset',
    public: true,
    doc: {
      tag: 'docs',
      summary: 'A file of Swagger UI',
      operationId: 'swaggerUiAsset',
      pathParams: { asset: 'swagger-ui.css, swagger-ui-bundle.js, swagger-ui-standalone-preset.js, swagger-init.js or favicon-32x32.png.' },
      responses: { 200: { description: 'The file.', content: { '*/*': { schema: { type: 'string', format: 'binary' } } } } },
      errors: { not_found: 'No such file.' },
    },
    handler: (ex): BytesReply => {
      const [name] = ex.params;
      if (name === 'swagger-init.js') return { status: 200, bytes: INIT, headers: { 'Content-Type': 'application/javascript', ...NOSNIFF } };
      // Own keys only: `constructor`, `__proto__`, `toString` are no assets.
      const type = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
      if (!type) throw new AppError('not_found');
      return { status: 200, bytes: asset(name), headers: { 'Content-Type': type, 'Cache-Control': 'public, max-age=86400', ...NOSNIFF } };
    },
  },
];
