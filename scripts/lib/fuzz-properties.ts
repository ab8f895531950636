/**
 * The fuzz properties over request content: create bodies, query strings, `metadata_filter`,
 * Range headers, multipart bodies and path ids. Each holds the store to the invariants of
 * fuzz-target.ts and to the answers its route may give; a refused request must leave the
 * store's footprint unchanged, an accepted one must be readable back.
 */
import fc from 'fast-check';
import { rawRequest, type RawAnswer } from './raw-http.js';
import { createBody, metadataFilter, multipartBody, pathId, percentEncode, queryString, rangeHeader } from './fuzz-arbitraries.js';
import { assertHealthy, assertNoServerError, assertNothingStored, assertStagingEmpty, footprint, InvariantBroken, tracked, type FuzzContext } from './fuzz-target.js';
import { fixture } from './fixtures.js';

/** A named property over a prepared store. */
export interface FuzzProperty {
  name: string;
  build(ctx: FuzzContext): fc.IAsyncProperty<any>;
}

/** @throws InvariantBroken unless `status` is one of `allowed` and an error carries a FastAPI `detail` */
function expectStatus(what: string, status: number, allowed: number[], body: Buffer): void {
  assertNoServerError(status, what, body.toString('utf8'));
  if (!allowed.includes(status)) throw new InvariantBroken(`${what} answered ${status}, expected one of ${allowed.join(', ')}: ${body.toString('utf8', 0, 300)}`);
  if (status >= 400) {
    let detail: unknown;
    try {
      detail = JSON.parse(body.toString('utf8')).detail;
    } catch {
      detail = undefined;
    }
    if (typeof detail !== 'string' && !Array.isArray(detail)) throw new InvariantBroken(`${what} answered ${status} without a detail: ${body.toString('utf8', 0, 300)}`);
  }
}

/** Sends raw bytes; a closed connection is an answer too (uWS closes on what it cannot parse). */
async function raw(ctx: FuzzContext, head: string, body: Buffer = Buffer.alloc(0)): Promise<RawAnswer | 'closed'> {
  return rawRequest(ctx.target.port, [head, body]);
}

async function newDraft(ctx: FuzzContext): Promise<string> {
  const answer = await ctx.client.request('POST', '/v2/events', { json: { inference_timestamp: '2026-11-22T01:00:00Z', event_schema: 'custom', event_data: {}, draft: true } });
  if (answer.status !== 201) throw new Error(`draft not created: ${answer.status}`);
  return answer.json().id;
}

const createProperty: FuzzProperty = {
  name: 'create body',
  build: (ctx) => fc.asyncProperty(createBody, tracked(ctx, async (text) => {
    const before = await footprint(ctx);
    const answer = await ctx.client.request('POST', '/v2/events', { body: text, headers: { 'content-type': 'application/json' } });
    expectStatus('POST /v2/events', answer.status, [201, 400, 413, 422, 507, 529], answer.bytes);
    if (answer.status !== 201) return assertNothingStored(ctx, before, 'POST /v2/events');
    const stored = await ctx.client.request('GET', `/v2/events/${answer.json().id}`);
    if (stored.status !== 200) throw new InvariantBroken(`create acknowledged, yet GET answered ${stored.status}`);
    if ((await footprint(ctx)).events !== before.events + 1) throw new InvariantBroken('create acknowledged, yet the event count did not grow by one');
  })),
};

const queryProperty: FuzzProperty = {
  name: 'query string',
  build: (ctx) => fc.asyncProperty(fc.constantFrom('/v2/events', '/v2/events/latest/query', '/events/count/stats'), queryString, tracked(ctx, async (route, query) => {
    const answer = await ctx.client.request('GET', `${route}?${query}`);
    expectStatus(`GET ${route}?${query}`, answer.status, [200, 400, 422, 529], answer.bytes);
    if (answer.status === 200 && typeof answer.json() !== 'object') throw new InvariantBroken(`GET ${route}?${query}: 200 without a JSON object`);
  })),
};

const metadataProperty: FuzzProperty = {
  name: 'metadata_filter',
  build: (ctx) => fc.asyncProperty(fc.array(metadataFilter, { minLength: 1, maxLength: 4 }), tracked(ctx, async (filters) => {
    const query = filters.map((f) => `metadata_filter=${percentEncode(f)}`).join('&');
    const answer = await ctx.client.request('GET', `/v2/events?${query}`);
    expectStatus(`GET /v2/events?${query}`, answer.status, [200, 400, 529], answer.bytes);
  })),
};

const rangeProperty: FuzzProperty = {
  name: 'Range header',
  build: (ctx) => fc.asyncProperty(rangeHeader, tracked(ctx, async (range) => {
    const size = ctx.imageBytes.length;
    const answer = await raw(ctx, `GET /images/${ctx.imageId} HTTP/1.1\r\nHost: localhost\r\nRange: ${range}\r\n\r\n`);
    if (answer === 'closed') throw new InvariantBroken(`Range ${JSON.stringify(range)}: connection closed`);
    const what = `GET /images with Range ${JSON.stringify(range)}`;
    expectStatus(what, answer.status, [200, 206, 416], answer.body);
    const contentRange = answer.headers['content-range'] ?? '';
    if (answer.status === 200 && !answer.body.equals(ctx.imageBytes)) throw new InvariantBroken(`${what}: 200 with the wrong bytes`);
    if (answer.status === 416 && contentRange !== `bytes */${size}`) throw new InvariantBroken(`${what}: 416 with Content-Range ${contentRange}`);
    if (answer.status === 206) {
      const match = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(contentRange);
      const [start, end, total] = match ? match.slice(1).map(Number) : [NaN, NaN, NaN];
      if (!match || total !== size || start > end || end >= size || !answer.body.equals(ctx.imageBytes.subarray(start, end + 1))) {
        throw new InvariantBroken(`${what}: 206 with Content-Range ${contentRange} and ${answer.body.length} bytes`);
      }
    }
  })),
};

const multipartProperty: FuzzProperty = {
  name: 'multipart body',
  build: (ctx) => fc.asyncProperty(fc.constantFrom('local-only-files', 'videos'), multipartBody, tracked(ctx, async (route, upload) => {
    const draftId = await newDraft(ctx);
    const before = await footprint(ctx);
    const path = `/v2/events/${draftId}/${route}`;
    const answer = await raw(ctx, `POST ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: ${upload.contentType}\r\nContent-Length: ${upload.body.length}\r\n\r\n`, upload.body);
    if (answer !== 'closed') {
      expectStatus(`POST ${path}`, answer.status, [201, 400, 413, 415, 422, 507, 529], answer.body);
      await assertStagingEmpty(ctx, `POST ${path}`);
    }
    const event = await ctx.client.getJson(`/v2/events/${draftId}`);
    const files = [...event.videos, ...event.local_only_files];
    if (answer === 'closed' || answer.status !== 201) {
      if (files.length > 0) throw new InvariantBroken(`POST ${path} refused, yet the draft lists ${files.length} files`);
      return assertNothingStored(ctx, before, `POST ${path}`);
    }
    if (files.length !== 1) throw new InvariantBroken(`upload acknowledged, the draft lists ${files.length} files`);
    const download = await ctx.client.request('GET', `/${route}/${files[0].file_id}`);
    const expected = upload.expectedFile;
    if (download.status !== 200 || download.bytes.length !== files[0].size_bytes || (expected && !download.bytes.equals(expected))) {
      throw new InvariantBroken(`upload acknowledged, download answered ${download.status} with ${download.bytes.length} bytes (listed ${files[0].size_bytes}${expected ? `, sent ${expected.length}` : ''})`);
    }
  })),
};

const ID_ROUTES: [method: string, prefix: string, suffix: string][] = [
  ['GET', '/v2/events/', ''], ['GET', '/images/', ''], ['GET', '/videos/', ''], ['GET', '/local-only-files/', ''], ['GET', '/docs/', ''],
  ['POST', '/v2/events/', '/finalize'], ['POST', '/v2/events/', '/videos'], ['POST', '/v2/events/', '/local-only-files'],
];
const VIDEO_FORM = Buffer.concat([
  Buffer.from('--b\r\nContent-Disposition: form-data; name="file"; filename="c.mp4"\r\n\r\n'), fixture('cat-zoom.mp4'), Buffer.from('\r\n--b--\r\n'),
]);

const pathIdProperty: FuzzProperty = {
  name: 'path id',
  build: (ctx) => fc.asyncProperty(fc.constantFrom(...ID_ROUTES), pathId, tracked(ctx, async ([method, prefix, suffix], id) => {
    const before = await footprint(ctx);
    const body = method === 'POST' ? VIDEO_FORM : Buffer.alloc(0);
    const target = `${prefix}${id}${suffix}`;
    const answer = await raw(ctx, `${method} ${target} HTTP/1.1\r\nHost: localhost\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: ${body.length}\r\n\r\n`, body);
    if (answer !== 'closed') assertNoServerError(answer.status, `${method} ${target}`, answer.body.toString('utf8'));
    await assertNothingStored(ctx, before, `${method} ${target}`);
    await assertHealthy(ctx, `${method} ${target}`);
  })),
};

/** The properties over request content, in the order they run. */
export const requestProperties: FuzzProperty[] = [createProperty, queryProperty, metadataProperty, rangeProperty, multipartProperty, pathIdProperty];
