/**
 * A thumbnail of one stored image with its detections drawn as boxes (docs/API.md, "Shapes
 * inside an image entry": `x`, `y` are the box centre, `width`, `height` the full box, all in
 * pixels of the image). Boxes are absolutely positioned elements (class `box`) over the image,
 * placed in percent of the image's natural size, so they scale with the thumbnail.
 *
 * The image is fetched with `X-API-Key` and shown from a blob URL, which keeps the key out of
 * URLs (an `<img src>` cannot send a header); the blob URL is revoked when the thumbnail leaves
 * the list.
 */
import { getBlob } from './store-api.js';
import type { Box, StoredImage } from './shapes.js';

/** A thumbnail element and how to release what it holds. */
export interface Thumbnail {
  element: HTMLElement;
  /** Revokes the blob URL; call when the element leaves the page. */
  dispose(): void;
}

/** Every box of an image: detections, and the boxes of segmentations and keypoint groups. */
export const imageBoxes = (image: StoredImage): Box[] => [
  ...(image.object_detections ?? []),
  ...(image.instance_segmentations ?? []),
  ...(image.keypoints ?? []),
];

const percent = (part: number, whole: number): string => `${(100 * part) / whole}%`;

/**
 * Places `boxes` over an image of `naturalWidth` x `naturalHeight` pixels.
 * @param frame the positioned element wrapping the image, exactly its size
 */
function drawBoxes(frame: HTMLElement, boxes: Box[], naturalWidth: number, naturalHeight: number): void {
  for (const box of boxes) {
    const element = document.createElement('div');
    element.className = 'box';
    element.style.left = percent(box.x - box.width / 2, naturalWidth);
    element.style.top = percent(box.y - box.height / 2, naturalHeight);
    element.style.width = percent(box.width, naturalWidth);
    element.style.height = percent(box.height, naturalHeight);
    const label = document.createElement('span');
    label.className = 'box-label';
    label.textContent = `${box.class} ${Math.round(box.confidence * 100)}%`;
    element.append(label);
    element.title = `${box.class} (${box.confidence}) at ${box.x},${box.y} ${box.width}x${box.height}`;
    frame.append(element);
  }
}

/**
 * A thumbnail of `image`, its bytes fetched from `/images/{file_id}`.
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
  if (image.file_id === null) {
    missing('removed by cleanup');
  } else {
    getBlob(`/images/${encodeURIComponent(image.file_id)}`).then(
      (blob) => {
        if (disposed) return;
        url = URL.createObjectURL(blob);
        const img = document.createElement('img');
        img.alt = image.label ?? 'image';
        img.addEventListener('load', () => drawBoxes(frame, imageBoxes(image), img.naturalWidth, img.naturalHeight), { once: true });
        img.src = url;
        frame.append(img);
      },
      (err: unknown) => {
        // File ids are ephemeral: cleanup may have removed it since (docs/API.md, "Downloads").
        missing('image unavailable');
        failed(err);
      },
    );
  }
  return {
    element: figure,
    dispose() {
      disposed = true;
      if (url !== undefined) URL.revokeObjectURL(url);
    },
  };
}
