/**
 * One batch of the log stage made into frames (docs/STORAGE.md, "Creates", "Updates to
 * events"): each update decided against the store and the batch's earlier updates
 * (update-decisions.ts), each create given its `created_at` and its frames (its images, then its
 * record), in submission order, for one append; then, once appended, where each create's files
 * landed.
 */
import type { AppError } from '../../errors.js';
import type { LoggedCreate } from '../head/head.js';
import { encodeUpdate, type RecordUpdate } from '../index/record-update.js';
import { frameRecordBytes, type RecordPresenter } from '../index/record-codec.js';
import type { Appended, FrameToAppend } from '../log/blob-log.js';
import { encodeTombstone } from '../log/record-copy-frame.js';
import { encodeRecordFrame } from '../log/record-frame.js';
import type { LogPosition } from '../index/lmdb-env.js';
import type { EventRecord, RecordAttachment } from '../record/event-record.js';
import { nextUniqueMicros } from '../record/timestamps.js';
import type { StoreView } from '../read/store-view.js';
import { decideUpdate, type UpdateRequest, type FinalizeOutcome } from './update-decisions.js';
import { stampedValue, type PreparedCreate } from './prepared-create.js';

/**
 * A deleted event's tombstone (docs/STORAGE.md, "Two copies of every record"): logged before the
 * lifecycle worker commits the deletion, so a rebuild from the log does not bring the event back.
 */
export interface TombstoneRequest {
  type: 'tombstone';
  /** The event's id and created_at (µs). */
  id: string;
  createdAt: number;
}

/** What the log stage takes: a create, an update to an event (update-decisions.ts), or a tombstone. */
export type LogJob = PreparedCreate | UpdateRequest | TombstoneRequest;

/** What it answers: nothing for a create; an update's outcome, or its refusal; where a tombstone's frame ends. */
export type LogResult = undefined | FinalizeOutcome | RecordAttachment | AppError | LogPosition;

/** A batch made into frames. */
export interface FramedBatch {
  /** Every frame to append, in order; empty when nothing is to be logged. */
  frames: FrameToAppend[];
  /** The creates, their files placed by `placeFiles` once appended. */
  creates: LoggedCreate[];
  /** The updates decided, each with its event's id and its record once updated (for the announcement). */
  updates: { update: RecordUpdate; id: string; record: EventRecord }[];
  /** One per job, in order. */
  results: LogResult[];
  /** Per create, its blobs and the index of the first of their frames in `frames` (its record frame follows them). */
  placing: { blobs: PreparedCreate['imageBlobs']; first: number }[];
  /** Per tombstone, its index in `results` and of its frame in `frames`. */
  tombstones: { result: number; frame: number }[];
}

/**
 * Decides and frames `batch`. A create's `created_at` (and `finalized_at` when it is no draft)
 * is set here, in submission order (timestamps.ts `nextUniqueMicros`).
 * @param store the store the updates are decided against (the writer's view, head included)
 */
export function frameBatch(store: StoreView, batch: LogJob[], present: RecordPresenter): FramedBatch {
  const framed: FramedBatch = { frames: [], creates: [], updates: [], results: [], placing: [], tombstones: [] };
  const { frames, results } = framed;
  const decided = new Map<number, EventRecord>();
  for (const job of batch) {
    if (job.type === 'tombstone') {
      framed.tombstones.push({ result: results.length, frame: frames.length });
      frames.push({ id: job.id, kind: 'tombstone', bytes: encodeTombstone(job.createdAt) });
      results.push(undefined);
      continue;
    }
    if (job.type !== 'create') {
      const decision = decideUpdate(store, job, decided);
      results.push('refusal' in decision ? decision.refusal : decision.outcome);
      if ('refusal' in decision || !decision.update) continue;
      frames.push({ id: job.id, kind: 'update', bytes: encodeUpdate(decision.update) });
      framed.updates.push({ update: decision.update, id: job.id, record: decision.record! });
      continue;
    }
    const { record, imageBlobs: blobs } = job;
    record.created_at = nextUniqueMicros();
    if (!record.draft) record.finalized_at = record.created_at;
    const value = stampedValue(job, record.created_at, present);
    framed.placing.push({ blobs, first: frames.length });
    for (const blob of blobs) frames.push({ id: blob.fileId, kind: blob.kind, bytes: blob.bytes });
    const files = blobs.map((b) => ({ fileId: b.fileId, contentType: b.contentType }));
    frames.push({ id: record.id, kind: 'record', bytes: encodeRecordFrame({ record: frameRecordBytes(value), files }) });
    framed.creates.push({ record, value, files: [] });
    results.push(undefined);
  }
  return framed;
}

/**
 * Records where each create's files and record frame landed in the log, and answers each
 * tombstone with where its frame ends, once `framed` was appended as `appended`.
 */
export function placeFiles({ placing, creates, tombstones, results }: FramedBatch, appended: Appended): void {
  placing.forEach(({ blobs, first }, i) => {
    blobs.forEach((blob, k) => creates[i].files.push({ fileId: blob.fileId, kind: blob.kind, contentType: blob.contentType, at: appended.placed[first + k] }));
    const { segment, offset, length } = appended.placed[first + blobs.length];
    creates[i].frame = { segment, offset, length };
  });
  for (const { result, frame } of tombstones) {
    const at = appended.placed[frame];
    results[result] = { segment: at.segment, offset: at.offset + at.length };
  }
}
