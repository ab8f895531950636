/**
 * The cloud sink (docs/OPERATIONS.md, "Cloud upload"): with CLOUD_UPLOAD_URL set, finalized
 * events are shipped to the public cloud Vision Events API, at least once and idempotently
 * (`eventId` is the store's id). It is one sink of the shipping ledger (src/store/ledger/sink-ledger.ts,
 * run by sink-runner.ts): while it has not shipped an event, cleanup keeps it.
 *
 * A batch of up to BATCH_EVENTS events: their images and input images are uploaded one at a
 * time (`POST /vision-events/upload`), then the events are posted in one
 * `POST /vision-events/batch`. Videos and local-only files are never uploaded. An image whose
 * file vanished (cleanup or the consistency pass removed it) or that the cloud refused is left
 * out: its entry keeps its results. Each request is retried inside the batch until it succeeds
 * or is refused (cloud-client.ts).
 *
 * Dead letters: when the cloud refuses a batch with a 4xx other than 401/403/404/408/429, the
 * batch is split in halves until the refused events are alone; each is logged at error level
 * and dead-lettered: the cloud's cursor moves past it, so it no longer blocks the ledger nor is
 * kept for the cloud (it would never ship; keeping it would let one bad event fill the store
 * and block ingest for good).
 */
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import type { EventRecord, StoreView } from '../store/index.js';
import { CloudClient, type BackoffOptions } from './cloud-client.js';
import { imageName, imageUploadForm, toCloudEvent, type CloudEvent } from './cloud-payload.js';
import type { Outgoing, Sink } from '../sinks/ledger-sink.js';

/** Most events per `POST /vision-events/batch` (the API's limit). */
export const BATCH_EVENTS = 100;

/** What the cloud sink needs besides the store and the settings. */
export interface CloudSinkDeps {
  log: Logger;
  /** Backoff of retried requests (defaults: base 500 ms, cap 30 s). */
  backoff?: BackoffOptions;
  /** Longest an answer to one request may take (ms; default 120 s), then it is retried. */
  requestTimeoutMs?: number;
}

interface Prepared {
  createdAt: number;
  event: CloudEvent;
}

/** Uploads one image file; its `sourceId`, or undefined when the file vanished or was refused. */
async function uploadImage(store: StoreView, client: CloudClient, fileId: string, log: Logger): Promise<string | undefined> {
  const outcome = await client.post('/vision-events/upload', () => {
    const file = store.openFile(fileId);
    return file && imageUploadForm(file, imageName(fileId, file.contentType));
  });
  if (outcome.kind === 'gone') {
    log.warn({ fileId }, 'image removed before upload; its event ships without it');
    return undefined;
  }
  if (outcome.kind === 'refused') {
    log.error({ fileId, status: outcome.status, detail: outcome.detail }, 'cloud refused an image; its event ships without it');
    return undefined;
  }
  const sourceId = (outcome.body as { sourceId?: unknown } | undefined)?.sourceId;
  if (typeof sourceId !== 'string') throw new Error(`cloud answered an image upload without a sourceId: ${JSON.stringify(outcome.body)}`);
  return sourceId;
}

/** Uploads a record's images and input images in order, one at a time; maps it to its cloud event. */
async function prepare(store: StoreView, config: Config, client: CloudClient, record: EventRecord, log: Logger): Promise<CloudEvent> {
  const sourceIds = new Map<string, string>();
  for (const image of record.images) {
    for (const fileId of [image.file_id, image.input_file_id]) {
      if (fileId === null) continue;
      const sourceId = await uploadImage(store, client, fileId, log);
      if (sourceId !== undefined) sourceIds.set(fileId, sourceId);
    }
  }
  return toCloudEvent(record, (fileId) => (fileId === null ? undefined : sourceIds.get(fileId)), config.defaultSolutionId);
}

/** Posts `batch`; on a refusal, halves it until the refused events are alone. @returns their created_at */
async function post(client: CloudClient, batch: Prepared[], log: Logger): Promise<number[]> {
  const outcome = await client.post('/vision-events/batch', () => ({
    body: JSON.stringify({ events: batch.map((p) => p.event) }),
    headers: { 'content-type': 'application/json' },
  }));
  if (outcome.kind !== 'refused') return [];
  if (batch.length === 1) {
    log.error({ eventId: batch[0]!.event.eventId, status: outcome.status, detail: outcome.detail }, 'cloud refused an event; dead-lettered');
    return [batch[0]!.createdAt];
  }
  const half = Math.ceil(batch.length / 2);
  return [...await post(client, batch.slice(0, half), log), ...await post(client, batch.slice(half), log)];
}

/** The cloud Vision Events API as a sink of the shipping ledger. */
export class CloudSink implements Sink {
  readonly name = 'cloud';
  readonly batchSize = BATCH_EVENTS;

  /** @param config CLOUD_UPLOAD_URL (must be set), CLOUD_API_KEY, DEFAULT_SOLUTION_ID */
  constructor(private readonly store: StoreView, private readonly config: Config, private readonly deps: CloudSinkDeps) {
    if (config.cloudUploadUrl === undefined) throw new Error('the cloud sink needs CLOUD_UPLOAD_URL');
  }

  /**
   * Uploads the events' images, then posts the events (halving a refused batch).
   * @returns created_at of the events the cloud refused for good
   * @throws the abort reason once `signal` aborts; an Error on an answer that breaks the protocol
   */
  async ship(events: Outgoing[], signal: AbortSignal): Promise<number[]> {
    const client = new CloudClient({ ...this.deps, signal, baseUrl: this.config.cloudUploadUrl!, apiKey: this.config.cloudApiKey });
    const batch: Prepared[] = [];
    for (const { createdAt, record } of events) {
      batch.push({ createdAt, event: await prepare(this.store, this.config, client, record, this.deps.log) });
    }
    return post(client, batch, this.deps.log);
  }
}
