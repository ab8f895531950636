/**
 * The auto-finalize sweep (docs/API.md, "Drafts and attachments"): drafts whose producer never
 * finalized them within DRAFT_AUTO_FINALIZE_SECONDS are closed, with both `finalized_at` and
 * `auto_finalized_at` set. It walks the drafts index oldest first, so each run costs in
 * proportion to the drafts it closes, in bounded batches. The lifecycle worker times it; it runs
 * on the HTTP thread, whose store logs every update to an event (docs/STORAGE.md, "Updates to
 * events"), and its finalizes share the log's appends.
 */
import { AppError } from '../errors.js';
import { draftsOlderThan, type EventStore, finalizeEvent } from '../store/index.js';

/** Most drafts closed per run; the next run continues. */
const BATCH = 500;

/**
 * Closes the drafts created before `cutoff` (µs since the epoch), at most BATCH of them.
 * @returns how many were closed
 */
export async function sweepDrafts(store: EventStore, cutoff: number): Promise<number> {
  // The drafts index is LMDB's. A draft still in the head would be missed, so when the head
  // holds creates old enough to close they are checkpointed first; a draft finalized in the head
  // is still in the index until its checkpoint, and is skipped below.
  await store.checkpointedBefore(cutoff);
  const ids = draftsOlderThan(store, cutoff, BATCH).map((createdAt) => store.getRecord(createdAt)).filter((record) => record?.draft).map((record) => record!.id);
  const outcomes = await Promise.all(ids.map((id) => finalizeEvent(store, id, true).catch((err: unknown) => {
    // Deleted by a cleanup since the drafts index was read: nothing left to close.
    if (err instanceof AppError && err.code === 'event_not_found') return undefined;
    throw err;
  })));
  return outcomes.filter((outcome) => outcome && !outcome.alreadyFinalized).length;
}
