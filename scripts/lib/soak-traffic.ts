/**
 * The soak's mixed traffic: workers that each pick, request after request, an ingest (image
 * events), a query (list, count, latest, with filters), a download (whole or by Range, of an image
 * recently stored: cleanup may have removed it, so 404 is fine), an upload (a draft, a video,
 * then usually a finalize) or a stats read. Every answer is timed and tallied by kind.
 */
import { eventBody } from './disk-fill.js';
import type { StoreClient } from './http-client.js';
import type { LatencyWindow } from './latency.js';
import type { Random } from './random.js';
import { failureOutcome, StatusTally } from './status-tally.js';
import { payload, VIDEO_PAYLOADS } from './upload-payloads.js';

const IMAGES = ['cat.jpg', 'camera.jpg', 'rocket.jpg', 'retina.jpg'];
const QUERIES = [
  '/v2/events?limit=50', '/v2/events?device_id=soak-1&limit=100', '/v2/events?metadata_filter=line:F&sort_direction=asc&limit=20',
  '/v2/events?event_schema=custom&include_drafts=false', '/v2/events/latest/query?limit=10', '/events/count/stats?device_id=soak-2',
  '/v2/events?device_ids=soak-0,soak-3&metadata_filter=line:ne:F',
];
const RECENT_IMAGES = 500;

/** Runs the traffic until `stop()`; answers go to `latency` and the per-kind tallies. */
export class SoakTraffic {
  readonly tallies = new Map<string, StatusTally>();
  private readonly recentImages: string[] = [];
  private stopping = false;
  private workers: Promise<void>[] = [];

  constructor(private readonly client: StoreClient, private readonly latency: LatencyWindow, private readonly rng: Random) {}

  /** Starts `count` workers. */
  start(count: number): void {
    for (let i = 0; i < count; i++) this.workers.push(this.worker());
  }

  /** Stops the workers after their request under way. */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.workers);
  }

  /** The tally of `kind`. */
  tally(kind: string): StatusTally {
    let tally = this.tallies.get(kind);
    if (!tally) {
      tally = new StatusTally();
      this.tallies.set(kind, tally);
    }
    return tally;
  }

  private async worker(): Promise<void> {
    while (!this.stopping) {
      const roll = this.rng.next();
      if (roll < 0.4) await this.ingest();
      else if (roll < 0.65) await this.call('query', 'GET', this.rng.pick(QUERIES));
      else if (roll < 0.85) await this.download();
      else if (roll < 0.95) await this.upload();
      else await this.call('stats', 'GET', '/stats');
      await new Promise((resolve) => setTimeout(resolve, this.rng.int(0, 20)));
    }
  }

  /** Sends one request, timing and tallying it under `kind`; returns the answer, if any. */
  private async call(kind: string, method: string, route: string, options: Parameters<StoreClient['request']>[2] = {}) {
    const started = performance.now();
    try {
      const answer = await this.client.request(method, route, options);
      this.latency.add(kind, answer.ms);
      this.tally(kind).add(answer.status);
      return answer;
    } catch (err) {
      this.latency.add(kind, performance.now() - started);
      this.tally(kind).add(failureOutcome(err));
      return undefined;
    }
  }

  private async ingest(): Promise<void> {
    const images = [this.rng.pick(IMAGES.slice(0, this.rng.chance(0.1) ? 4 : 3))];
    const body = eventBody(images, `soak-${this.rng.int(0, 3)}`);
    const answer = await this.call('ingest', 'POST', '/v2/events', { json: body });
    if (answer?.status !== 201) return;
    this.recentImages.push(...answer.json().image_ids);
    if (this.recentImages.length > RECENT_IMAGES) this.recentImages.splice(0, this.recentImages.length - RECENT_IMAGES);
  }

  private async download(): Promise<void> {
    if (this.recentImages.length === 0) return;
    const id = this.rng.pick(this.recentImages);
    const headers: Record<string, string> = this.rng.chance(0.3) ? { range: `bytes=${this.rng.int(0, 20_000)}-` } : {};
    await this.call('download', 'GET', `/images/${id}`, { headers });
  }

  private async upload(): Promise<void> {
    const draft = await this.call('upload', 'POST', '/v2/events', { json: { ...eventBody([]), draft: true } });
    if (draft?.status !== 201) return;
    const { id } = draft.json();
    const form = new FormData();
    form.append('file', new Blob([Uint8Array.from(payload(this.rng.pick(VIDEO_PAYLOADS)))]), 'clip.mp4');
    await this.call('upload', 'POST', `/v2/events/${id}/videos`, { body: form });
    if (this.rng.chance(0.8)) await this.call('upload', 'POST', `/v2/events/${id}/finalize`);
  }
}
