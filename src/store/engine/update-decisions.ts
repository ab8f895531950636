/**
 * Whether an update to an event is made, and what it answers (docs/API.md, "Drafts and
 * attachments"): decided by the log stage of EventStore for each update of a batch, in order,
 * against the store as its reads see it (LMDB and the head) plus the updates decided
 * earlier in the same batch, so no two updates of one event interleave.
 */
import { AppError } from '../../errors.js';
import type { EventRecord, RecordAttachment } from '../record/event-record.js';
import { applyUpdate, type AttachUpdate, type RecordUpdate } from '../index/record-update.js';
import type { StoreView } from '../read/store-view.js';

/** Finalize draft `id`; `auto` for the auto-finalize sweep (sets `auto_finalized_at` too). */
export interface FinalizeRequest {
  type: 'finalize';
  id: string;
  auto: boolean;
}

/** List a file already in blobs/ as segment `segment` on draft `id`. */
export interface AttachRequest {
  type: 'attach';
  id: string;
  kind: AttachUpdate['kind'];
  file: RecordAttachment;
  segment: number;
  /** CRC32C of the file's bytes. */
  crc: number;
}

export type UpdateRequest = FinalizeRequest | AttachRequest;

/** The outcome of a finalize; timestamps in µs. */
export interface FinalizeOutcome {
  id: string;
  finalizedAt: number;
  autoFinalizedAt: number | null;
  alreadyFinalized: boolean;
}

/**
 * What a request comes to: a refusal, or an answer with the update to log (none for a repeated
 * finalize) and the event's record once updated (a copy of its own: what the update is announced
 * with, unchanged by a later update in the same batch).
 */
export type Decision =
  | { refusal: AppError }
  | { outcome: FinalizeOutcome | RecordAttachment; update?: RecordUpdate; record?: EventRecord };

function currentMicros(): number {
  return Math.floor((performance.timeOrigin + performance.now()) * 1000);
}

/**
 * Decides `request` against `view` and the records `decided` earlier in the same batch (by
 * created_at, µs), which it updates.
 */
export function decideUpdate(view: StoreView, request: UpdateRequest, decided: Map<number, EventRecord>): Decision {
  const found = view.getEvent(request.id);
  const record = found && (decided.get(found.created_at) ?? found);
  if (!record) return { refusal: new AppError('event_not_found', `Event ${request.id} not found`) };
  const finalized = record.finalized_at !== null;
  if (request.type === 'finalize' && finalized) {
    return { outcome: { id: request.id, finalizedAt: record.finalized_at!, autoFinalizedAt: record.auto_finalized_at, alreadyFinalized: true } };
  }
  if (finalized) return { refusal: new AppError('event_finalized', `Event ${request.id} was finalized; attachment refused`) };
  const { created_at: createdAt } = record;
  const update: RecordUpdate = request.type === 'finalize'
    ? { type: 'finalize', createdAt, at: Math.max(currentMicros(), createdAt), auto: request.auto }
    : { type: 'attach', createdAt, kind: request.kind, file: request.file, segment: request.segment, crc: request.crc };
  applyUpdate(record, update);
  decided.set(createdAt, record);
  const outcome = update.type === 'finalize'
    ? { id: request.id, finalizedAt: update.at, autoFinalizedAt: record.auto_finalized_at, alreadyFinalized: false }
    : update.file;
  return { outcome, update, record: structuredClone(record) };
}
