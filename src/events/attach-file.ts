/**
 * Attaching videos and local-only files to drafts, and finalizing (docs/API.md, "Drafts and
 * attachments"; `event_finalized`). The HTTP layer streams the upload to staging; this module
 * decides whether it is accepted and how it is listed.
 */
import { fileTypeFromBuffer } from 'file-type';
import { AppError, fromDiskError, validationError } from '../errors.js';
import { checkedContentType } from './content-type.js';
import { type Attachment, attachStagedBlob, type EventStore, finalizeEvent, formatMicros, formatMicrosOrNull, StagingFile } from '../store/index.js';

/**
 * A new staging file in `store`'s staging directory, where the HTTP layer streams an upload
 * before `attachUpload` decides on it (docs/ARCHITECTURE.md, "Attach and download").
 */
export function newStagingFile(store: EventStore): StagingFile {
  return new StagingFile(store.stagingDir);
}

/** Attach response (docs/API.md, "Response shapes"). */
export interface AttachResponse {
  file_id: string;
  event_id: string;
  label: string;
  content_type: string;
  size_bytes: number;
  message: string;
}

/** Finalize response (docs/API.md, "Response shapes"). */
export interface FinalizeResponse {
  id: string;
  finalized_at: string;
  already_finalized: boolean;
  auto_finalized_at: string | null;
  message: string;
}

/** What an upload route receives: the staged `file` part and the text fields. */
export interface UploadedParts {
  staging: StagingFile;
  fields: Record<string, string>;
}

/**
 * Checks, before any body is read, that event `id` can take an attachment (docs/API.md, "Drafts and
 * attachments", rule 1).
 * @throws AppError event_not_found (404), event_finalized (409)
 */
export function assertAttachable(store: EventStore, id: string): void {
  const record = store.getEvent(id);
  if (!record) throw new AppError('event_not_found', `Event ${id} not found`);
  if (record.finalized_at !== null) throw new AppError('event_finalized', `Event ${id} is finalized; attachments are closed`);
}

const LABEL = /^[^\u0000-\u001f\u007f]{1,256}$/;

/**
 * An attachment's label: 1 to 256 characters, no control character (docs/API.md, "Drafts and
 * attachments"). The hub checks imported videos' labels with it too.
 * @param loc where the label was, for the issue
 * @throws AppError validation_failed (422) otherwise
 */
export function checkedLabel(value: unknown, loc: (string | number)[]): string {
  if (typeof value !== 'string' || !LABEL.test(value)) throw validationError(loc, 'label must be 1 to 256 characters without control characters');
  return value;
}

function label(fields: Record<string, string>, fallback: string): string {
  return checkedLabel(fields.label ?? fallback, ['body', 'label']);
}

async function describe(kind: Attachment['kind'], upload: UploadedParts): Promise<Attachment> {
  const sniffed = await fileTypeFromBuffer(upload.staging.firstBytes);
  if (kind === 'video') {
    // Attachment rule 3 (docs/API.md): the format comes from the bytes, never from the declared type.
    if (!sniffed?.mime.startsWith('video/')) throw new AppError('unsupported_video', 'Content is not a supported video format');
    return { kind, label: label(upload.fields, 'video'), contentType: sniffed.mime };
  }
  const declared = upload.fields.content_type;
  const contentType = declared === undefined ? sniffed?.mime ?? 'application/octet-stream' : checkedContentType(declared, ['body', 'content_type']);
  return { kind, label: label(upload.fields, 'file'), contentType };
}

/**
 * Accepts a received upload as a video or local-only file of draft `eventId`, or refuses it and
 * removes the staging file.
 * @throws AppError validation_failed (422: label, content_type), unsupported_video (415),
 *   event_not_found (404), event_finalized (409, finalized while streaming), disk_full (507)
 */
export async function attachUpload(store: EventStore, eventId: string, upload: UploadedParts, kind: Attachment['kind']): Promise<AttachResponse> {
  let attachment: Attachment;
  let staged;
  try {
    attachment = await describe(kind, upload);
    staged = await upload.staging.finish(kind);
  } catch (err) {
    await upload.staging.discard();
    throw fromDiskError(err); // ENOSPC: 507; a refusal (AppError) as it is
  }
  const listed = await attachStagedBlob(store, eventId, staged, attachment);
  return {
    ...listed,
    event_id: eventId,
    message: kind === 'video' ? 'Video attached' : 'Local-only file attached',
  };
}

/**
 * Finalizes event `id` (idempotent; docs/API.md, "Drafts and attachments").
 * @throws AppError event_not_found (404)
 */
export async function finalize(store: EventStore, id: string): Promise<FinalizeResponse> {
  const outcome = await finalizeEvent(store, id);
  return {
    id,
    finalized_at: formatMicros(outcome.finalizedAt),
    already_finalized: outcome.alreadyFinalized,
    auto_finalized_at: formatMicrosOrNull(outcome.autoFinalizedAt),
    message: outcome.alreadyFinalized ? 'Event was already finalized' : 'Event finalized',
  };
}
