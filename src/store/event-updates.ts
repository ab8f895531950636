/**
 * Changes to existing events (docs/API.md, "Drafts and attachments"): finalize (by the producer or
 * by the auto-finalize sweep) and attaching a staged upload to a draft. Each change is a
 * read-modify-write inside one LMDB write transaction, so it sees every earlier commit and no
 * two changes of one event interleave; each first waits for the index head to be checkpointed
 * (docs/STORAGE.md, "The index head") and resolves once flushed (docs/STORAGE.md, "What is
 * durable when").
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { AppError, fromDiskError } from '../errors.js';
import { segmentFileName, syncDirectory } from './blob-log.js';
import type { RecordAttachment } from './event-record.js';
import { FRAME_HEADER_BYTES } from './segment-frames.js';
import type { EventStore } from './event-store.js';
import type { StoreView } from './store-view.js';
import { draftKey, EMPTY, fileAgeKey } from './index-keys.js';
import { enterLedger } from './sink-ledger.js';
import { addToCounters, type FileKind } from './lmdb-env.js';
import { encodeRecord, type EventRecord } from './record-codec.js';
import type { StagedBlob } from './staging-file.js';

/** The outcome of a finalize; timestamps in µs. */
export interface FinalizeOutcome {
  id: string;
  finalizedAt: number;
  autoFinalizedAt: number | null;
  alreadyFinalized: boolean;
}

function currentMicros(): number {
  return Math.floor((performance.timeOrigin + performance.now()) * 1000);
}

/**
 * Waits until every acknowledged create is in LMDB (store-view.ts `checkpointed`), so a change
 * made there never misses an event still in the index head (docs/STORAGE.md, "The index head").
 * @throws AppError disk_full or store_failure when the checkpoint fails
 */
async function checkpointed(store: StoreView): Promise<void> {
  try {
    await store.checkpointed();
  } catch (err) {
    throw fromDiskError(err);
  }
}

/** Writes a changed record back; call inside a write transaction. */
function putRecord(store: StoreView, record: EventRecord): void {
  store.dbs.events.putSync(record.created_at, encodeRecord(record, store.present));
}

/**
 * Finalizes a draft; a repeat call is a no-op reporting `alreadyFinalized` (docs/API.md, "Drafts
 * and attachments").
 * @param auto true for the auto-finalize sweep: sets `auto_finalized_at` too
 * @throws AppError event_not_found; disk_full or store_failure on a failed commit
 */
export async function finalizeEvent(store: StoreView, id: string, auto = false): Promise<FinalizeOutcome> {
  // The change is made in LMDB, underneath the index head: the event must be there first.
  await checkpointed(store);
  const createdAt = store.getEvent(id)?.created_at;
  if (createdAt === undefined) throw new AppError('event_not_found', `Event ${id} not found`);
  let outcome: FinalizeOutcome | undefined;
  let finalized: EventRecord | undefined;
  try {
    await store.dbs.root.transaction(() => {
      const record = store.getRecord(createdAt);
      if (!record) return;
      if (record.finalized_at !== null) {
        outcome = { id, finalizedAt: record.finalized_at, autoFinalizedAt: record.auto_finalized_at, alreadyFinalized: true };
        return;
      }
      const now = Math.max(currentMicros(), record.created_at);
      record.draft = false;
      record.finalized_at = now;
      if (auto) record.auto_finalized_at = now;
      putRecord(store, record);
      store.dbs.index.removeSync(draftKey(record.created_at));
      addToCounters(store.dbs, { drafts: -1 });
      if (store.shipping) enterLedger(store.dbs, record.created_at);
      outcome = { id, finalizedAt: now, autoFinalizedAt: record.auto_finalized_at, alreadyFinalized: false };
      finalized = record;
    });
    await store.flushed();
  } catch (err) {
    throw fromDiskError(err);
  }
  if (!outcome) throw new AppError('event_not_found', `Event ${id} not found`);
  if (finalized) store.announceChange({ kind: 'finalized', id, createdAt, record: finalized });
  return outcome;
}

/** What to attach: the staged blob and how the event lists it. */
export interface Attachment {
  kind: Extract<FileKind, 'video' | 'local_only'>;
  label: string;
  contentType: string;
}

/**
 * Moves a finished staged upload into blobs/ as a segment of its own and lists it on the draft
 * `eventId`. When the event vanished or was finalized while the upload streamed, nothing is
 * kept (docs/API.md, "Drafts and attachments"; `event_finalized`).
 * @throws AppError event_not_found, event_finalized; disk_full on ENOSPC, store_failure on another failure
 */
export async function attachStagedBlob(store: EventStore, eventId: string, staged: StagedBlob, attachment: Attachment): Promise<RecordAttachment> {
  const segment = store.allocateSegment();
  const segmentPath = path.join(store.blobsDir, segmentFileName(segment));
  const listed: RecordAttachment = { file_id: staged.fileId, label: attachment.label, content_type: attachment.contentType, size_bytes: staged.size };
  let refusal: AppError | undefined;
  let attached: EventRecord | undefined;
  await checkpointed(store);
  try {
    await fsp.rename(staged.path, segmentPath);
    await syncDirectory(store.blobsDir);
    await store.dbs.root.transaction(() => {
      const record = store.getEvent(eventId);
      if (!record) {
        refusal = new AppError('event_not_found', `Event ${eventId} not found`);
        return;
      }
      if (record.finalized_at !== null) {
        refusal = new AppError('event_finalized', `Event ${eventId} was finalized; attachment refused`);
        return;
      }
      (attachment.kind === 'video' ? record.videos : record.local_only_files).push(listed);
      record.original_file_count++;
      record.current_file_count++;
      putRecord(store, record);
      attached = record;
      store.dbs.files.putSync(staged.fileId, {
        segment, offset: FRAME_HEADER_BYTES, length: staged.size, kind: attachment.kind,
        contentType: attachment.contentType, event: record.created_at, crc: staged.crc,
      });
      store.dbs.index.putSync(fileAgeKey(record.created_at, staged.fileId), EMPTY);
      store.dbs.segments.putSync(segment, { committed: FRAME_HEADER_BYTES + staged.size, liveBytes: staged.size, liveBlobs: 1, sealed: true });
      addToCounters(store.dbs, { files: 1, liveBlobBytes: staged.size });
    });
    await store.flushed();
  } catch (err) {
    await fsp.rm(segmentPath, { force: true });
    throw fromDiskError(err);
  }
  if (refusal) {
    await fsp.rm(segmentPath, { force: true });
    throw refusal;
  }
  if (attached) store.announceChange({ kind: 'files_attached', id: eventId, createdAt: attached.created_at, record: attached });
  return listed;
}
