/**
 * Updates to existing events (docs/API.md, "Drafts and attachments"): finalize (by the producer or
 * by the auto-finalize sweep) and attaching a staged upload to a draft. Each is decided and made
 * durable by the store's log stage as a frame of the segment log (EventStore.update;
 * docs/STORAGE.md, "Updates to events"), so it is acknowledged after one fdatasync, like a create.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { fromDiskError } from '../../errors.js';
import { segmentFileName, syncDirectory } from '../log/segment-files.js';
import type { FinalizeOutcome } from './update-decisions.js';
import type { RecordAttachment } from '../record/event-record.js';
import type { EventStore } from './event-store.js';
import { storeHandles } from '../read/store-view.js';
import type { FileKind } from '../log/log-entries.js';
import type { StagedBlob } from '../log/staging-file.js';

export type { FinalizeOutcome } from './update-decisions.js';

/**
 * Finalizes a draft; a repeat call is a no-op reporting `alreadyFinalized` (docs/API.md, "Drafts
 * and attachments").
 * @param auto true for the auto-finalize sweep: sets `auto_finalized_at` too
 * @throws AppError event_not_found; disk_full or store_failure on a failed append
 */
export async function finalizeEvent(store: EventStore, id: string, auto = false): Promise<FinalizeOutcome> {
  return await store.update({ type: 'finalize', id, auto });
}

/** What to attach: the staged blob and how the event lists it. */
export interface Attachment {
  kind: Extract<FileKind, 'video' | 'local_only'>;
  label: string;
  contentType: string;
}

/**
 * Moves a finished staged upload into blobs/ as a segment of its own (renamed, and the directory
 * synced, before its update is logged) and lists it on the draft `eventId`. When the event
 * vanished or was finalized while the upload streamed, nothing is kept (docs/API.md, "Drafts and
 * attachments"; `event_finalized`).
 * @throws AppError event_not_found, event_finalized; disk_full on ENOSPC, store_failure on another failure
 */
export async function attachStagedBlob(store: EventStore, eventId: string, staged: StagedBlob, attachment: Attachment): Promise<RecordAttachment> {
  const segment = store.allocateSegment();
  const segmentPath = path.join(store[storeHandles].blobsDir, segmentFileName(segment));
  const file: RecordAttachment = { file_id: staged.fileId, label: attachment.label, content_type: attachment.contentType, size_bytes: staged.size };
  try {
    await fsp.rename(staged.path, segmentPath);
    await syncDirectory(store[storeHandles].blobsDir);
    return await store.update({ type: 'attach', id: eventId, kind: attachment.kind, file, segment, crc: staged.crc });
  } catch (err) {
    await fsp.rm(segmentPath, { force: true });
    throw fromDiskError(err);
  }
}
