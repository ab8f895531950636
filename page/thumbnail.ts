/**
 * A thumbnail of one stored image with its detections drawn as boxes (boxes.ts). The image is
 * the store's thumbnail (`GET /images/{image_id}/thumbnail`, docs/API.md, "Thumbnails": a WebP
 * of at most 256 px a side, with the image's own size in X-Source-Width/Height, in which the boxes
 * are), fetched only when the thumbnail comes near the screen (an IntersectionObserver: lazy, as
 * `<img loading="lazy">`, which cannot send the key).
 *
 * The image is fetched with `X-API-Key` and shown from a blob URL, which keeps the key out of
 * URLs (an `<img src>` cannot send a header); the blob URL is revoked when the thumbnail leaves
 * the list. Clicking it shows the image at full size (image-viewer.ts).
 */
import { drawBoxes, imageBoxes } from './boxes.js';
import { showImage } from './image-viewer.js';
import { getBlobAnswer } from './store-api.js';
import type { StoredImage } from './shapes.js';

/** A thumbnail element and how to release what it holds. */
export interface Thumbnail {
  element: HTMLElement;
  /** Revokes the blob URL; call when the element leaves the page. */
  dispose(): void;
}

/** Loads of thumbnails waiting to come near the screen, by their element. */
const pending = new Map<Element, () => void>();
/** Starts a thumbnail's load when it is within a screen's height of the viewport. */
const nearScreen = new IntersectionObserver((entries) => {
  for (const entry of entries) {
    if (!entry.isIntersecting) continue;
    const load = pending.get(entry.target);
    pending.delete(entry.target);
    nearScreen.unobserve(entry.target);
    load?.();
  }
}, { rootMargin: '100% 0px' });

/** A number header of the answer, or `fallback` when absent or not a positive number. */
function sizeHeader(headers: Headers, name: string, fallback: number): number {
  const value = Number(headers.get(name));
  return Number.isFinite(value) && value > 0 ? value : fallback;
}

/**
 * A thumbnail of `image`, its bytes fetched from `/images/{file_id}/thumbnail` once it nears the screen.
 * @param failed called with the error when the image cannot be fetched (Unauthorized on a 401)
 */
export function thumbnail(image: StoredImage, failed: (err: unknown) => void): Thumbnail {
  const figure = document.createElement('figure');
  figure.className = 'thumb';
  const frame = document.createElement('div');
  frame.className = 'frame';
  const caption = document.createElement('figcaption');
  caption.textContent = image.label ?? '';
  figure.append(frame, caption);

  let url: string | undefined;
  let disposed = false;
  const missing = (text: string) => {
    frame.classList.add('missing');
    frame.textContent = text;
  };
  const load = () => {
    getBlobAnswer(`/images/${encodeURIComponent(image.file_id!)}/thumbnail`).then(
      ({ blob, headers }) => {
        if (disposed) return;
        url = URL.createObjectURL(blob);
        const img = document.createElement('img');
        img.alt = image.label ?? 'image';
        img.addEventListener('load', () => {
          const width = sizeHeader(headers, 'X-Source-Width', img.naturalWidth);
          const height = sizeHeader(headers, 'X-Source-Height', img.naturalHeight);
          drawBoxes(frame, imageBoxes(image), width, height, img.clientHeight);
        }, { once: true });
        img.src = url;
        frame.append(img);
      },
      (err: unknown) => {
        // File ids are ephemeral: cleanup may have removed it since (docs/API.md, "Downloads").
        missing('image unavailable');
        failed(err);
      },
    );
  };
  if (image.file_id === null) {
    missing('removed by cleanup');
  } else {
    figure.classList.add('openable');
    figure.title = 'Show at full size';
    figure.addEventListener('click', () => showImage(image, failed));
    pending.set(figure, load);
    nearScreen.observe(figure);
  }
  return {
    element: figure,
    dispose() {
      disposed = true;
      pending.delete(figure);
      nearScreen.unobserve(figure);
      if (url !== undefined) URL.revokeObjectURL(url);
    },
  };
}
