/**
 * The live list of the newest events: newest first (by `created_at`, unique per store, docs/API.md
 * "Query parameters"; ISO 8601 with six fraction digits and `Z`, so text order is time order), bounded to `limit` entries, each with its time, device, schema, data,
 * attachments (attachments.ts) and thumbnails (thumbnail.ts); clicking a thumbnail shows that image at full size, clicking elsewhere
 * on the event its first image still stored (image-viewer.ts). An event already listed is replaced in place (a `finalized` or `files_attached`
 * message, or a repeat after a reconnect).
 */
import { attachmentList } from './attachments.js';
import type { StoredEvent } from './shapes.js';
import { showImage } from './image-viewer.js';
import { thumbnail, type Thumbnail } from './thumbnail.js';

/** Thumbnails shown per event; an event may carry up to 100 images. */
const MAX_THUMBNAILS = 4;

interface Entry {
  event: StoredEvent;
  element: HTMLLIElement;
  thumbnails: Thumbnail[];
}

const timeFormat = new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });

/** `key: value` pairs of `event_data`, shortened. */
function dataSummary(data: Record<string, unknown>): string {
  return Object.entries(data)
    .map(([key, value]) => `${key}: ${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join(', ')
    .slice(0, 200);
}

/** The file ids of an event's images, as one string to compare. */
const imageIds = (event: StoredEvent): string => event.images.map((image) => image.file_id).join(',');

function span(className: string, text: string): HTMLSpanElement {
  const element = document.createElement('span');
  element.className = className;
  element.textContent = text;
  return element;
}

export class EventList {
  private readonly entries = new Map<string, Entry>();

  /**
   * @param root the list element
   * @param limit how many events are kept (the oldest leave first)
   * @param failed called when a thumbnail's image cannot be fetched
   */
  constructor(private readonly root: HTMLOListElement, private readonly limit: number, private readonly failed: (err: unknown) => void) {}

  /** Adds `event`, or replaces it where it is listed already. */
  upsert(event: StoredEvent): void {
    const previous = this.entries.get(event.id);
    // A finalize or an attachment leaves the images as they were: their thumbnails are kept.
    const keep = previous && imageIds(previous.event) === imageIds(event) ? previous : undefined;
    const entry = this.render(event, keep);
    if (previous) {
      previous.element.replaceWith(entry.element);
      if (!keep) this.release(previous);
    } else {
      // The first listed (newest first) that is older: usually the top one.
      const older = [...this.root.children].find((item) => (item as HTMLElement).dataset.createdAt! < event.created_at);
      this.root.insertBefore(entry.element, older ?? null);
    }
    this.entries.set(event.id, entry);
    // The oldest is listed last.
    while (this.entries.size > this.limit) this.remove((this.root.lastElementChild as HTMLElement).dataset.id!);
  }

  /** Removes the event `id` (deleted by cleanup), if listed. */
  remove(id: string): void {
    const entry = this.entries.get(id);
    if (!entry) return;
    entry.element.remove();
    this.release(entry);
    this.entries.delete(id);
  }

  /** Removes every event (a reset, or new filters). */
  clear(): void {
    for (const id of [...this.entries.keys()]) this.remove(id);
  }

  private release(entry: Entry): void {
    for (const thumb of entry.thumbnails) thumb.dispose();
  }

  /** The event's element; `keep`'s thumbnails are moved into it rather than fetched again. */
  private render(event: StoredEvent, keep?: Entry): Entry {
    const element = document.createElement('li');
    element.className = 'event';
    element.dataset.id = event.id;
    element.dataset.device = event.device_id ?? '';
    element.dataset.createdAt = event.created_at;
    const head = document.createElement('div');
    head.className = 'event-head';
    const time = document.createElement('time');
    time.dateTime = event.created_at;
    time.textContent = timeFormat.format(new Date(event.created_at));
    time.title = event.created_at;
    head.append(time, span('device', event.device_id ?? '(no device)'), span('schema', event.event_schema));
    if (event.draft) head.append(span('draft', 'draft'));
    head.append(span('data', dataSummary(event.event_data)));
    const attachments = attachmentList(event, this.failed);
    if (attachments) head.append(attachments);

    element.addEventListener('click', (clicked) => {
      // A thumbnail opens its own image, an attachment's link saves its file.
      if ((clicked.target as Element).closest('.thumb, .attachments')) return;
      const first = event.images.find((image) => image.file_id !== null);
      if (first) showImage(first, this.failed);
    });
    if (keep) {
      element.append(head, keep.element.querySelector('.images')!);
      return { event, element, thumbnails: keep.thumbnails };
    }
    const images = document.createElement('div');
    images.className = 'images';
    const thumbnails = event.images.slice(0, MAX_THUMBNAILS).map((image) => thumbnail(image, this.failed));
    images.append(...thumbnails.map((thumb) => thumb.element));
    if (event.images.length > MAX_THUMBNAILS) images.append(span('more', `+${event.images.length - MAX_THUMBNAILS} more`));
    element.append(head, images);
    return { event, element, thumbnails };
  }
}
