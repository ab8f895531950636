/**
 * Writers that fill a store's disk: concurrent creates of events with real JPEGs (mostly the
 * 270 KB one), until the store has refused a run of them in a row, or a time limit. Every answer
 * is tallied; acknowledged events are recorded for the integrity checks.
 */
import { randomUUID } from 'node:crypto';
import type { AckedEvents } from './acked-events.js';
import { fixtureBase64 } from './fixtures.js';
import type { StoreClient } from './http-client.js';
import { failureOutcome, StatusTally } from './status-tally.js';

/** How long to fill: until `refusedInARow` creates in a row are refused, or `maxMs` passed. */
export interface FillOptions {
  writers: number;
  refusedInARow: number;
  maxMs: number;
}

/** A create of one event with `images` fixtures. */
export function eventBody(images: string[], device = 'filler'): Record<string, unknown> {
  return {
    inference_timestamp: new Date().toISOString(),
    event_schema: 'custom',
    event_data: { value: randomUUID() },
    device_id: device,
    custom_metadata: { line: 'F' },
    images: images.map((name) => ({ label: name, base64_image: fixtureBase64(name) })),
  };
}

/**
 * Sends creates until the store refuses `refusedInARow` in a row (or `maxMs` passes).
 * @returns the tally of answers
 */
export async function fillStore(client: StoreClient, acked: AckedEvents, options: FillOptions): Promise<StatusTally> {
  const tally = new StatusTally();
  const deadline = performance.now() + options.maxMs;
  let refusedRun = 0;
  const writer = async (n: number) => {
    for (let i = 0; refusedRun < options.refusedInARow && performance.now() < deadline; i++) {
      const images = (n + i) % 5 === 0 ? ['cat.jpg'] : ['retina.jpg'];
      try {
        const answer = await client.request('POST', '/v2/events', { json: eventBody(images) });
        tally.add(answer.status);
        if (answer.status === 201) {
          refusedRun = 0;
          const body = answer.json();
          acked.add({ id: body.id, createdAt: body.created_at, images: body.image_ids.map((fileId: string, k: number) => ({ fileId, fixture: images[k] })) });
        } else {
          refusedRun++;
        }
      } catch (err) {
        tally.add(failureOutcome(err));
        refusedRun++;
      }
    }
  };
  await Promise.all(Array.from({ length: options.writers }, (_, n) => writer(n)));
  return tally;
}
