/**
 * The store under fuzzing and the invariants every hostile request is held to: no 5xx but 507
 * and 529, nothing stored by a refused request (the store's footprint the same before and
 * after: counters, blob segments, staging), and a healthy store afterwards.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fixture } from './fixtures.js';
import { StoreClient } from './http-client.js';

/** A running store to fuzz: in-process (tests) or the built binary (the long run). */
export interface FuzzTarget {
  url: string;
  port: number;
  dataDir: string;
}

/** What the fuzz properties work on: the target, and an image and a draft made for them. */
export interface FuzzContext {
  target: FuzzTarget;
  client: StoreClient;
  imageId: string;
  imageBytes: Buffer;
  draftId: string;
  /** Property runs under way (see `tracked`). */
  running: Set<Promise<void>>;
}

/** An invariant broken; fast-check shrinks the input that caused it. */
export class InvariantBroken extends Error {
  override name = 'InvariantBroken';
}

/** Everything a stored request would change. */
export interface Footprint {
  events: number;
  images: number;
  drafts: number;
  /** `name:size` of every file under blobs/. */
  blobs: string;
  staging: number;
}

/**
 * Stores the image and the draft the properties use. The image's event carries the photo three
 * times (1.1 MB of base64), so that it starts the store's create preparer, which takes bodies of
 * 1 MiB or more (docs/OPERATIONS.md, "Memory"): no property's time budget then pays that start.
 */
export async function prepareFuzz(target: FuzzTarget): Promise<FuzzContext> {
  const client = new StoreClient(target.url, 20_000);
  const imageBytes = fixture('retina.jpg');
  const base = { inference_timestamp: '2026-11-22T01:00:00Z', event_schema: 'custom', event_data: {}, device_id: 'fuzz' };
  const photo = imageBytes.toString('base64');
  const image = await client.request('POST', '/v2/events', { json: { ...base, images: [{ base64_image: photo, input_base64_image: photo }, { base64_image: photo }] } });
  const draft = await client.request('POST', '/v2/events', { json: { ...base, draft: true } });
  if (image.status !== 201 || draft.status !== 201) throw new Error(`fuzz setup failed: ${image.status}, ${draft.status}`);
  return { target, client, imageId: image.json().image_ids[0], imageBytes, draftId: draft.json().id, running: new Set() };
}

/**
 * Wraps a property's predicate so its runs are known to `ctx`: fast-check's time limit stops
 * waiting for a run without stopping it, and a run left going (a slow client still trickling its
 * body) would change the store under the next property. See `settleRuns`.
 */
export function tracked<A extends unknown[]>(ctx: FuzzContext, predicate: (...args: A) => Promise<void>): (...args: A) => Promise<void> {
  return (...args) => {
    const run = predicate(...args);
    ctx.running.add(run);
    run.then(() => ctx.running.delete(run), () => ctx.running.delete(run));
    return run;
  };
}

/** Waits for every property run still under way to end. */
export async function settleRuns(ctx: FuzzContext): Promise<void> {
  await Promise.allSettled([...ctx.running]);
}

/** The store's footprint now. */
export async function footprint(ctx: FuzzContext): Promise<Footprint> {
  const { current } = await ctx.client.getJson('/stats');
  const blobsDir = path.join(ctx.target.dataDir, 'blobs');
  const blobs = fs.readdirSync(blobsDir).sort().map((name) => `${name}:${fs.statSync(path.join(blobsDir, name)).size}`).join(',');
  const staging = fs.readdirSync(path.join(ctx.target.dataDir, 'staging')).length;
  return { events: current.total_events, images: current.total_images, drafts: current.draft_events, blobs, staging };
}

/** @throws InvariantBroken for a 5xx other than 507 (disk full) and 529 (capacity blocked) */
export function assertNoServerError(status: number, what: string, body = ''): void {
  if (status >= 500 && status !== 507 && status !== 529) throw new InvariantBroken(`${what} answered ${status}: ${body.slice(0, 300)}`);
}

/**
 * The differences between two footprints, one phrase each. Staging is left out: an abandoned
 * upload's staging file comes and goes after its client has gone (see assertStagingDrains).
 */
function changes(before: Footprint, after: Footprint): string[] {
  const found: string[] = [];
  for (const key of ['events', 'images', 'drafts'] as const) {
    if (before[key] !== after[key]) found.push(`${key} ${before[key]} -> ${after[key]}`);
  }
  const was = new Set(before.blobs.split(','));
  const now = new Set(after.blobs.split(','));
  const gone = [...was].filter((b) => !now.has(b));
  const added = [...now].filter((b) => !was.has(b));
  if (gone.length + added.length > 0) found.push(`blobs/ ${gone.join(' ')} -> ${added.join(' ')}`);
  return found;
}

/** @throws InvariantBroken when the footprint changed since `before` */
export async function assertNothingStored(ctx: FuzzContext, before: Footprint, what: string): Promise<void> {
  const found = changes(before, await footprint(ctx));
  if (found.length > 0) throw new InvariantBroken(`${what} was refused, yet the store changed: ${found.join('; ')}`);
}

/** @throws InvariantBroken when staging holds a file (as it must not once an upload is answered) */
export async function assertStagingEmpty(ctx: FuzzContext, what: string): Promise<void> {
  const { staging } = await footprint(ctx);
  if (staging > 0) throw new InvariantBroken(`${what}: answered, yet staging holds ${staging} files`);
}

/**
 * Waits (bounded: about 5 s) until staging is empty, as it must be once an abandoned upload is
 * noticed. @throws InvariantBroken when it stays non-empty
 */
export async function assertStagingDrains(ctx: FuzzContext, what: string): Promise<void> {
  const stagingDir = path.join(ctx.target.dataDir, 'staging');
  for (let i = 0; i < 250; i++) {
    if (fs.readdirSync(stagingDir).length === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new InvariantBroken(`${what}: staging still holds ${fs.readdirSync(stagingDir).join(', ')}`);
}

/** @throws InvariantBroken when /health does not answer 200 */
export async function assertHealthy(ctx: FuzzContext, what: string): Promise<void> {
  const answer = await ctx.client.request('GET', '/health').catch((err: Error) => err);
  if (answer instanceof Error || answer.status !== 200) {
    throw new InvariantBroken(`after ${what}, /health ${answer instanceof Error ? `failed: ${answer.message}` : `answered ${answer.status}`}`);
  }
}
