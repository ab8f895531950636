/**
 * Detections drawn as boxes over an image (docs/API.md, "Shapes inside an image entry": `x`, `y`
 * are the box centre, `width`, `height` the full box, all in pixels of the image). Boxes are
 * absolutely positioned elements (class `box`) over the image, placed in percent of the image's
 * own size, so they scale with it. Each box's label (class `box-label`) sits outside the box,
 * above it, or below it when the box touches the top (class `below`), so it never covers a
 * small box; thumbnails show labels only on hover (page.css).
 */
import type { Box, StoredImage } from './shapes.js';

/** Every box of an image: detections, and the boxes of segmentations and keypoint groups. */
export const imageBoxes = (image: StoredImage): Box[] => [
  ...(image.object_detections ?? []),
  ...(image.instance_segmentations ?? []),
  ...(image.keypoints ?? []),
];

const percent = (part: number, whole: number): string => `${(100 * part) / whole}%`;

/** Height of a label (px, page.css `.box-label`): a box whose top is nearer the image's top gets its label below. */
const LABEL_HEIGHT_PX = 14;

/**
 * Places `boxes` over an image of `width` x `height` pixels (its own size, not the size shown).
 * @param frame the positioned element wrapping the image, exactly its size
 * @param shownHeight the height the image is shown at (px), to tell whether a label fits above
 */
export function drawBoxes(frame: HTMLElement, boxes: Box[], width: number, height: number, shownHeight: number): void {
  for (const box of boxes) {
    const element = document.createElement('div');
    element.className = 'box';
    const top = box.y - box.height / 2;
    element.style.left = percent(box.x - box.width / 2, width);
    element.style.top = percent(top, height);
    element.style.width = percent(box.width, width);
    element.style.height = percent(box.height, height);
    const label = document.createElement('span');
    label.className = (top / height) * shownHeight < LABEL_HEIGHT_PX ? 'box-label below' : 'box-label';
    label.textContent = `${box.class} ${Math.round(box.confidence * 100)}%`;
    element.append(label);
    element.title = `${box.class} (${box.confidence}) at ${box.x},${box.y} ${box.width}x${box.height}`;
    frame.append(element);
  }
}
