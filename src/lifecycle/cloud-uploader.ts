/**
 * The cloud uploader (docs/OPERATIONS.md, "Cloud upload"): with CLOUD_UPLOAD_URL set, finalized
 * events are shipped to the public cloud Vision Events API oldest first, at least once and
 * idempotently (`eventId` is the store's id).
 *
 * The queue is kept by the store (src/store/upload-queue.ts): a finalized event enters it when the
 * store runs with cloud upload on, drafts only once finalized, so upload state survives restarts.
 * While an event is queued, cleanup never deletes it (upload-queue.ts, `isProtected`); once the
 * cloud has it, it leaves the queue (`markUploaded`) and cleanup may.
 *
 * A pass takes up to BATCH_EVENTS queued events, uploads their images and input images one at
 * a time (`POST /vision-events/upload`), then posts the events in one `POST /vision-events/batch`.
 * Videos and local-only files are never uploaded. An image whose file vanished (cleanup or the
 * consistency pass removed it) or that the cloud refused is left out: its entry keeps its results.
 *
 * Dead letters: when the cloud refuses a batch with a 4xx other than 401/403/404/408/429, the
 * batch is split in halves until the refused events are alone; each is logged at error level
 * and it moves from the queue to the dead letters (`deadLetter`), so it no longer blocks the queue
 * and is no longer protected from cleanup (it would never ship; keeping it would let one bad event
 * fill the store and block ingest for good).
 */
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import type { EventRecord } from '../store/record-codec.js';
import type { StoreView } from '../store/store-view.js';
import { deadLetter, markUploaded, uploadQueue } from '../store/upload-queue.js';
import { backoffDelay, CloudClient, pause, type BackoffOptions } from './cloud-client.js';
import { imageName, imageUploadForm, toCloudEvent, type CloudEvent } from './cloud-payload.js';

/** Most events per `POST /vision-events/batch` (the API's limit). */
export const BATCH_EVENTS = 100;
/** Pause (ms) between looks at an empty queue. */
const POLL_MS = 1000;

/** What a pass needs besides the store and the settings. */
export interface UploadDeps {
  log: Logger;
  /** Aborted on stop: the request or wait under way ends at once and the pass rejects. */
  signal: AbortSignal;
  /** Backoff of retried requests (defaults: base 500 ms, cap 30 s). */
  backoff?: BackoffOptions;
  /** Longest an answer to one request may take (ms; default 120 s), then it is retried. */
  requestTimeoutMs?: number;
}

/** What a pass did: events the cloud accepted, and events it refused (dead-lettered). */
export interface PassResult {
  shipped: number;
  deadLettered: number;
}

interface Outgoing {
  createdAt: number;
  event: CloudEvent;
}

/** Uploads one image file; its `sourceId`, or undefined when the file vanished or was refused. */
async function uploadImage(store: StoreView, client: CloudClient, fileId: string, log: Logger): Promise<string | undefined> {
  const outcome = await client.post('/vision-events/upload', () => {
    const file = store.getFile(fileId);
    return file && imageUploadForm(store.blobs, file, imageName(fileId, file.contentType));
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

/** Posts `batch`; on a refusal, halves it until the refused events are alone and dead-letters them. */
async function ship(store: StoreView, client: CloudClient, batch: Outgoing[], log: Logger): Promise<PassResult> {
  const outcome = await client.post('/vision-events/batch', () => ({
    body: JSON.stringify({ events: batch.map((o) => o.event) }),
    headers: { 'content-type': 'application/json' },
  }));
  if (outcome.kind !== 'refused') {
    await markUploaded(store, batch.map((o) => o.createdAt));
    return { shipped: batch.length, deadLettered: 0 };
  }
  if (batch.length === 1) {
    log.error({ eventId: batch[0].event.eventId, status: outcome.status, detail: outcome.detail }, 'cloud refused an event; moved to the dead letters');
    await deadLetter(store, batch[0].createdAt);
    return { shipped: 0, deadLettered: 1 };
  }
  const half = Math.ceil(batch.length / 2);
  const first = await ship(store, client, batch.slice(0, half), log);
  const second = await ship(store, client, batch.slice(half), log);
  return { shipped: first.shipped + second.shipped, deadLettered: first.deadLettered + second.deadLettered };
}

/**
 * Ships the oldest queued events (up to BATCH_EVENTS), in created_at order, and takes them off
 * the queue. Retries go on inside the pass until each request succeeds or is refused.
 * @param config CLOUD_UPLOAD_URL (must be set), CLOUD_API_KEY, DEFAULT_SOLUTION_ID
 * @returns how many events were shipped and dead-lettered (both 0: the queue was empty)
 * @throws the abort reason once `deps.signal` aborts (the queue is left as it was for what was
 *   not acknowledged); an Error on an answer that breaks the protocol or a failed LMDB commit
 */
export async function runUploadPass(store: StoreView, config: Config, deps: UploadDeps): Promise<PassResult> {
  if (config.cloudUploadUrl === undefined) throw new Error('runUploadPass needs CLOUD_UPLOAD_URL');
  const client = new CloudClient({ ...deps, baseUrl: config.cloudUploadUrl, apiKey: config.cloudApiKey });
  const batch: Outgoing[] = [];
  for (const createdAt of uploadQueue(store, BATCH_EVENTS)) {
    const record = store.getRecord(createdAt);
    if (record) batch.push({ createdAt, event: await prepare(store, config, client, record, deps.log) });
  }
  return batch.length === 0 ? { shipped: 0, deadLettered: 0 } : ship(store, client, batch, deps.log);
}

/**
 * Runs passes back to back while the queue has events, looks again every POLL_MS when it is
 * empty, and backs off after a failed pass. Resolves once `deps.signal` aborts; never rejects.
 */
export async function runUploadLoop(store: StoreView, config: Config, deps: UploadDeps): Promise<void> {
  let failures = 0;
  while (!deps.signal.aborted) {
    try {
      const { shipped, deadLettered } = await runUploadPass(store, config, deps);
      failures = 0;
      if (shipped > 0) deps.log.debug({ shipped }, 'events shipped to the cloud');
      if (shipped + deadLettered === 0) await pause(POLL_MS, deps.signal);
    } catch (err) {
      if (deps.signal.aborted) break;
      deps.log.error({ err }, 'cloud upload pass failed');
      await pause(backoffDelay(failures++, deps.backoff), deps.signal);
    }
  }
}
