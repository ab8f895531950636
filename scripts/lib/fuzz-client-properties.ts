/**
 * The fuzz properties over client behaviour, on raw sockets: slow clients (a valid create or
 * upload trickled in small pieces) must be served, and aborting clients (hanging up part-way
 * through a body) must leave nothing behind: no event, no file, no staging file, a healthy store.
 */
import fc from 'fast-check';
import { rawRequest } from './raw-http.js';
import { fixture } from './fixtures.js';
import { assertHealthy, assertNothingStored, assertStagingDrains, footprint, InvariantBroken, tracked, type FuzzContext } from './fuzz-target.js';
import type { FuzzProperty } from './fuzz-properties.js';

type Kind = 'create' | 'upload';

/** The request head and body of a valid create or upload to `draftId`. */
function validRequest(kind: Kind, draftId: string): { head: string; body: Buffer } {
  const body = kind === 'create'
    ? Buffer.from(JSON.stringify({ inference_timestamp: '2026-11-22T01:00:00Z', event_schema: 'custom', event_data: {}, images: [{ base64_image: fixture('cat.jpg').toString('base64') }] }))
    : Buffer.concat([Buffer.from('--b\r\nContent-Disposition: form-data; name="file"; filename="c.mov"\r\n\r\n'), fixture('testsrc.mov'), Buffer.from('\r\n--b--\r\n')]);
  const [path, type] = kind === 'create' ? ['/v2/events', 'application/json'] : [`/v2/events/${draftId}/videos`, 'multipart/form-data; boundary=b'];
  return { head: `POST ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: ${type}\r\nContent-Length: ${body.length}\r\n\r\n`, body };
}

/** `bytes` cut at the given fractions (sorted, deduplicated) into consecutive pieces. */
function pieces(bytes: Buffer, cuts: number[]): Buffer[] {
  const at = [...new Set(cuts.map((c) => Math.floor(c * bytes.length)))].sort((a, b) => a - b);
  return [0, ...at].map((start, i) => bytes.subarray(start, at[i] ?? bytes.length)).filter((p) => p.length > 0);
}

async function draft(ctx: FuzzContext): Promise<string> {
  const answer = await ctx.client.request('POST', '/v2/events', { json: { inference_timestamp: '2026-11-22T01:00:00Z', event_schema: 'custom', event_data: {}, draft: true } });
  return answer.json().id;
}

const fraction = fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true });

const slowClient: FuzzProperty = {
  name: 'slow client',
  build: (ctx) => fc.asyncProperty(fc.constantFrom<Kind>('create', 'upload'), fc.array(fraction, { minLength: 1, maxLength: 12 }), fc.integer({ min: 1, max: 15 }),
    tracked(ctx, async (kind, cuts, delayMs) => {
      const { head, body } = validRequest(kind, await draft(ctx));
      const before = await footprint(ctx);
      const answer = await rawRequest(ctx.target.port, [head, ...pieces(body, cuts)], { delayMs, timeoutMs: 30_000 });
      if (answer === 'closed' || answer.status !== 201) {
        throw new InvariantBroken(`a slow ${kind} in ${cuts.length + 1} pieces, ${delayMs} ms apart, answered ${answer === 'closed' ? 'by closing' : `${answer.status}: ${answer.body.toString('utf8', 0, 200)}`}`);
      }
      const after = await footprint(ctx);
      if (kind === 'create' && after.events !== before.events + 1) throw new InvariantBroken('a slow create was acknowledged, yet not stored');
    })),
};

const abortingClient: FuzzProperty = {
  name: 'aborting client',
  build: (ctx) => fc.asyncProperty(fc.constantFrom<Kind>('create', 'upload'), fraction, fc.boolean(), tracked(ctx, async (kind, cut, headOnly) => {
    const draftId = await draft(ctx);
    const { head, body } = validRequest(kind, draftId);
    const before = await footprint(ctx);
    const sent = headOnly ? [head.slice(0, Math.floor(cut * head.length))] : [head, body.subarray(0, Math.floor(cut * body.length))];
    await rawRequest(ctx.target.port, sent, { abort: true });
    await assertHealthy(ctx, 'an abandoned request'); // after the hang-up reached the store
    const what = `a ${kind} abandoned after ${headOnly ? `${sent[0].length} bytes of its head` : `${sent[1].length} of ${body.length} body bytes`}`;
    await assertStagingDrains(ctx, what);
    await assertNothingStored(ctx, before, what);
    await assertHealthy(ctx, what);
  })),
};

/** The properties over client behaviour. */
export const clientProperties: FuzzProperty[] = [slowClient, abortingClient];
