/**
 * The auto-finalize sweep (docs/API.md, "Drafts and attachments"): drafts whose producer never
 * finalized them within DRAFT_AUTO_FINALIZE_SECONDS are closed, with both `finalized_at` and
 * `auto_finalized_at` set. It walks the drafts index oldest first, so each run costs in
 * proportion to the drafts it closes, in bounded batches.
 */
import { finalizeEvent } from '../store/event-updates.js';
import { draftsOlderThan } from '../store/lifecycle-queries.js';
import type { StoreView } from '../store/store-view.js';

/** Most drafts closed per run; the next run continues. */
const BATCH = 500;

/**
 * Closes the drafts created before `cutoff` (µs since the epoch), at most BATCH of them.
 * @returns how many were closed
 */
export async function sweepDrafts(store: StoreView, cutoff: number): Promise<number> {
  let closed = 0;
  for (const createdAt of draftsOlderThan(store, cutoff, BATCH)) {
    const record = store.getRecord(createdAt);
    if (!record) continue;
    const outcome = await finalizeEvent(store, record.id, true);
    if (!outcome.alreadyFinalized) closed++;
  }
  return closed;
}
