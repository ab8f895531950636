/**
 * Shapes of the dataset export (docs/API.md, "Dataset export"): what the writer reads (an event
 * and the image files it refers to), what the format converters read (an image already named and
 * measured), and what the writer answers.
 */
import type { ImageResults, StoredEvent } from '../events/types.js';

/** The dataset formats an export is written in. */
export const EXPORT_FORMATS = ['coco', 'yolo', 'labelstudio'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** True when `value` names an export format (`coco`, `yolo`, `labelstudio`). */
export function isExportFormat(value: string): value is ExportFormat {
  return (EXPORT_FORMATS as readonly string[]).includes(value);
}

/**
 * One image of an event as the writer reads it: the stored file the predictions refer to (the
 * image entry's `file_id`; its `input_file_id` is never exported) and those predictions.
 */
export interface ExportImageRef {
  fileId: string;
  /** As stored, e.g. `image/jpeg`; names the file's extension in the zip. */
  contentType: string;
  results: ImageResults;
}

/** An event to export with its images (built by `exportEventOf`, src/export/export-event.ts). */
export interface ExportEvent {
  event: StoredEvent;
  images: ExportImageRef[];
}

/** An image the converters read: named in the zip and measured from its header. */
export interface ExportImage extends ExportImageRef {
  /** The image's path in the zip, e.g. `images/<file_id>.jpg`. */
  fileName: string;
  /** Pixels, from the file's header. */
  width: number;
  height: number;
}

/** What `writeDataset` answers once the zip is written (or the consumer went away). */
export interface ExportSummary {
  /** Events read from the source. */
  events: number;
  /** Images written into the zip. */
  images: number;
  /** Images not written: their file is gone (cleanup), or its header gives no dimensions. */
  skippedImages: number;
  /** Annotations written (COCO annotations, YOLO label lines, Label Studio results). */
  annotations: number;
  /** Bytes of zip handed to the sink. */
  bytes: number;
  /** True when the sink went away before the zip was complete (nothing more was read). */
  aborted: boolean;
}

/** Reads a stored file's bytes; null when the file is gone. */
export type ReadImage = (fileId: string) => Promise<Buffer | null>;
