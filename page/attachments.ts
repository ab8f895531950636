/**
 * An event's videos and local-only files (docs/API.md, "Drafts and attachments"): one link each,
 * with its kind, label, type and size. A link's `href` is the file's download route
 * (`/videos/{id}`, `/local-only-files/{id}`; docs/API.md, "Downloads"), but a click fetches it
 * with the key, as a plain link cannot send `X-API-Key`, and saves it from a blob URL.
 */
import type { StoredAttachment, StoredEvent } from './shapes.js';
import { getBlob } from './store-api.js';
import { formatBytes } from './units.js';

/** How long a saved file's blob URL is kept (ms). */
const BLOB_KEPT_MS = 60_000;

/** Saves `blob` under `name` as a download (an `<a download>` clicked). */
function save(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  link.click();
  // A download reads the blob after the click's task; a minute is long past its start.
  setTimeout(() => URL.revokeObjectURL(url), BLOB_KEPT_MS);
}

function attachmentItem(kind: 'video' | 'file', route: string, attachment: StoredAttachment, failed: (err: unknown) => void): HTMLLIElement {
  const item = document.createElement('li');
  item.className = `attachment ${kind}`;
  const link = document.createElement('a');
  const path = `/${route}/${encodeURIComponent(attachment.file_id)}`;
  link.href = path;
  link.textContent = `${kind}: ${attachment.label}`;
  link.title = `Download ${attachment.label} (${attachment.content_type})`;
  link.addEventListener('click', (clicked) => {
    clicked.preventDefault();
    getBlob(path).then((blob) => save(blob, attachment.label), failed);
  });
  const about = document.createElement('span');
  about.className = 'about';
  about.textContent = `${attachment.content_type}, ${formatBytes(attachment.size_bytes)}`;
  item.append(link, ' ', about);
  return item;
}

/**
 * The list of `event`'s attachments, or undefined when it has none.
 * @param failed called when a file cannot be fetched (Unauthorized on a 401)
 */
export function attachmentList(event: StoredEvent, failed: (err: unknown) => void): HTMLUListElement | undefined {
  if (event.videos.length + event.local_only_files.length === 0) return undefined;
  const list = document.createElement('ul');
  list.className = 'attachments';
  list.append(
    ...event.videos.map((video) => attachmentItem('video', 'videos', video, failed)),
    ...event.local_only_files.map((file) => attachmentItem('file', 'local-only-files', file, failed)),
  );
  return list;
}
