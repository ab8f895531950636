/**
 * One stored image at full size with its boxes and their labels (boxes.ts), in the page's
 * `<dialog id="viewer">`: opened by clicking a thumbnail, closed by Escape, its close button or a
 * click outside the image. The image is `GET /images/{image_id}` with the key, shown from a blob
 * URL revoked on close; shown at its own size, or scaled down to fit the window.
 */
import { drawBoxes, imageBoxes } from './boxes.js';
import { getBlob } from './store-api.js';
import type { StoredImage } from './shapes.js';

let shownUrl: string | undefined;
/** Bumped by every open, so an answer for an image no longer asked for is dropped. */
let opened = 0;

function viewer(): HTMLDialogElement {
  const dialog = document.querySelector<HTMLDialogElement>('#viewer');
  if (!dialog) throw new Error('the page has no #viewer');
  return dialog;
}

function release(): void {
  opened++;
  if (shownUrl !== undefined) URL.revokeObjectURL(shownUrl);
  shownUrl = undefined;
  viewer().querySelector('.viewer-frame')?.replaceChildren();
}

/**
 * Shows `image` at full size with its boxes.
 * @param failed called with the error when the image cannot be fetched (Unauthorized on a 401)
 */
export function showImage(image: StoredImage, failed: (err: unknown) => void): void {
  if (image.file_id === null) return;
  const dialog = viewer();
  release();
  const current = opened;
  const frame = dialog.querySelector<HTMLElement>('.viewer-frame')!;
  dialog.querySelector('.viewer-caption')!.textContent = image.label ?? '';
  frame.classList.remove('missing');
  if (!dialog.open) dialog.showModal();
  getBlob(`/images/${encodeURIComponent(image.file_id)}`).then(
    (blob) => {
      if (current !== opened) return;
      shownUrl = URL.createObjectURL(blob);
      const img = document.createElement('img');
      img.alt = image.label ?? 'image';
      img.addEventListener('load', () => drawBoxes(frame, imageBoxes(image), img.naturalWidth, img.naturalHeight, img.clientHeight), { once: true });
      img.src = shownUrl;
      frame.append(img);
    },
    (err: unknown) => {
      if (current !== opened) return;
      frame.classList.add('missing');
      frame.textContent = 'image unavailable';
      failed(err);
    },
  );
}

const dialog = viewer();
dialog.addEventListener('close', release);
dialog.querySelector('.viewer-close')?.addEventListener('click', () => dialog.close());
// A click on the backdrop (the dialog itself, outside its content) closes it.
dialog.addEventListener('click', (clicked) => clicked.target === dialog && dialog.close());
