/**
 * The cloud upload queue and its dead letters (docs/OPERATIONS.md, "Cloud upload"), kept in the
 * `index` database so upload state survives restarts (index-keys.ts, `uploadKey` and
 * `deadLetterKey`): a finalized event enters the queue when the store runs with cloud upload on,
 * a draft only once finalized; the uploader takes it off once the cloud has it, or moves it to
 * the dead letters when the cloud refused it for good. `uploadsPending` counts the queue.
 *
 * While cloud upload is on, cleanup keeps what the queue holds and every draft
 * (docs/OPERATIONS.md, "Keeping the disk bounded"): `isProtected`.
 */
import { createdAtOfKey, deadLetterKey, draftKey, EMPTY, uploadKey, uploadQueueRange } from './index-keys.js';
import { addToCounters, type StoreDatabases } from './lmdb-env.js';
import type { StoreView } from './store-view.js';

/**
 * created_at (µs) of the oldest queued events, oldest first.
 * @param limit most entries returned
 */
export function uploadQueue(store: StoreView, limit: number): number[] {
  return [...store.dbs.index.getKeys({ ...uploadQueueRange(), limit })].map(createdAtOfKey);
}

/** How many events the upload queue holds, counted from the index (not from `uploadsPending`). */
export function countQueuedUploads(dbs: StoreDatabases): number {
  return dbs.index.getKeysCount(uploadQueueRange());
}

/**
 * Takes the events created at `createdAts` (µs) off the upload queue, once the cloud accepted
 * them, and lowers `uploadsPending`, in one transaction; an event no longer queued is skipped.
 * Resolves at the commit, not at its flush: cloud upload is at least once, so a cut before the
 * flush only sends them again (docs/STORAGE.md, "What is durable when").
 * @throws the lmdb error of a failed commit (the queue is left as it was)
 */
export async function markUploaded(store: StoreView, createdAts: number[]): Promise<void> {
  const { dbs } = store;
  await dbs.root.transaction(() => {
    let removed = 0;
    for (const createdAt of createdAts) if (dbs.index.removeSync(uploadKey(createdAt))) removed++;
    addToCounters(dbs, { uploadsPending: -removed });
  });
}

/**
 * Moves the event created at `createdAt` (µs), which the cloud refused for good, from the upload
 * queue to the dead letters and lowers `uploadsPending`, in one transaction: it no longer blocks
 * the queue and is no longer protected from cleanup. A no-op when it is not queued.
 * @throws the lmdb error of a failed commit (the event stays queued)
 */
export async function deadLetter(store: StoreView, createdAt: number): Promise<void> {
  const { dbs } = store;
  await dbs.root.transaction(() => {
    if (!dbs.index.removeSync(uploadKey(createdAt))) return;
    dbs.index.putSync(deadLetterKey(createdAt), EMPTY);
    addToCounters(dbs, { uploadsPending: -1 });
  });
}

/**
 * True when cleanup must keep the event created at `createdAt` (µs): cloud upload is on and the
 * event is a draft or waits in the upload queue (docs/OPERATIONS.md, "Keeping the disk bounded").
 * Always false with cloud upload off.
 */
export function isProtected(store: StoreView, createdAt: number): boolean {
  if (!store.trackUploads) return false;
  return store.dbs.index.doesExist(uploadKey(createdAt)) || store.dbs.index.doesExist(draftKey(createdAt));
}
