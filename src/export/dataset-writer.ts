/**
 * Writes a dataset export (docs/API.md, "Dataset export"): the matching events' images and their
 * annotations, in COCO, YOLO or Label Studio layout, as one zip streamed into a sink with
 * backpressure. Knows nothing of HTTP: the route hands it a started response as the sink.
 *
 * Images are read one ahead (the next file's read overlaps the current one's write) and added
 * only when the zip has room, so memory holds about three images whatever the export's size,
 * plus each format's in-memory tables (categories, classes, labels).
 */
import { fromDiskError } from '../errors.js';
import { openCocoLayout } from './coco-layout.js';
import type { DatasetLayout } from './dataset-layout.js';
import { DatasetZip } from './dataset-zip.js';
import type { ByteSink } from './dataset-zip.js';
import type { ExportEvent, ExportFormat, ExportImageRef, ExportSummary, ReadImage } from './export-types.js';
import { imageDimensions, imageFileName } from './image-file.js';
import { openLabelStudioLayout } from './label-studio-layout.js';
import { openYoloLayout } from './yolo-layout.js';

/** The zip's suggested file name, e.g. for a Content-Disposition: `dataset-coco.zip`. */
export function datasetFileName(format: ExportFormat): string {
  return `dataset-${format}.zip`;
}

function openLayout(format: ExportFormat): Promise<DatasetLayout> | DatasetLayout {
  if (format === 'coco') return openCocoLayout();
  if (format === 'yolo') return openYoloLayout();
  return openLabelStudioLayout();
}

interface Pending {
  event: ExportEvent['event'];
  ref: ExportImageRef;
  bytes: Promise<Buffer | null>;
}

/**
 * Writes the export of `events` to `sink` and ends it.
 * @param readImage the bytes of a stored file, null when it is gone (the image is skipped and
 *   counted in `skippedImages`)
 * @param onProgress called with the running summary after each image (and once at the end)
 * @returns the summary; `aborted` when the sink went away (reading stopped, the sink not ended)
 * @throws AppError disk_full (507) or store_failure (500), the cause kept, when a temporary file,
 *   a read or the zip fails; the sink is then neither ended nor written further (a started
 *   response must be destroyed by the caller)
 */
export async function writeDataset(
  format: ExportFormat,
  events: AsyncIterable<ExportEvent>,
  readImage: ReadImage,
  sink: ByteSink,
  onProgress?: (summary: Readonly<ExportSummary>) => void,
): Promise<ExportSummary> {
  const summary: ExportSummary = { events: 0, images: 0, skippedImages: 0, annotations: 0, bytes: 0, aborted: false };
  const zip = new DatasetZip(sink);
  let layout: DatasetLayout | undefined;
  const iterator = imagesOf(events, summary)[Symbol.asyncIterator]();
  const start = async (): Promise<Pending | undefined> => {
    const next = await iterator.next();
    if (next.done) return undefined;
    const bytes = readImage(next.value.ref.fileId);
    bytes.catch(() => undefined); // awaited below; never an unhandled rejection meanwhile
    return { ...next.value, bytes };
  };
  try {
    layout = await openLayout(format);
    for (let current = await start(); current !== undefined && !zip.aborted;) {
      const following = start();
      following.catch(() => undefined);
      await writeImage(current, layout, zip, summary);
      summary.bytes = zip.bytes;
      onProgress?.(summary);
      current = await following;
    }
    if (!zip.aborted) await layout.finish(zip);
    summary.bytes = await zip.finish();
    summary.aborted = zip.aborted;
    onProgress?.(summary);
    return summary;
  } catch (err) {
    zip.destroy();
    throw fromDiskError(err);
  } finally {
    await iterator.return?.(undefined);
    await layout?.dispose();
  }
}

/** Adds one image and its annotations; skips (and counts) an image gone or of unknown size. */
async function writeImage(pending: Pending, layout: DatasetLayout, zip: DatasetZip, summary: ExportSummary): Promise<void> {
  const bytes = await pending.bytes;
  const size = bytes === null ? undefined : imageDimensions(bytes);
  if (bytes === null || size === undefined) {
    summary.skippedImages += 1;
    return;
  }
  const image = { ...pending.ref, fileName: imageFileName(pending.ref.fileId, pending.ref.contentType), ...size };
  await zip.addBuffer(image.fileName, bytes, { compress: false });
  summary.annotations += await layout.addImage(pending.event, image, zip);
  summary.images += 1;
}

/** Every image of every event, in order; counts the events as they are read. */
async function* imagesOf(events: AsyncIterable<ExportEvent>, summary: ExportSummary): AsyncGenerator<{ event: ExportEvent['event']; ref: ExportImageRef }> {
  for await (const { event, images } of events) {
    summary.events += 1;
    for (const ref of images) yield { event, ref };
  }
}
