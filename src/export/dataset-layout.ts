/**
 * What a format adds to the zip besides the images (docs/API.md, "Dataset export"): each format's
 * layout turns the images' predictions into its annotation entries, and closes the export with
 * the entries that need every image seen (COCO's annotations file, YOLO's `data.yaml`, Label
 * Studio's tasks and labeling configuration).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { StoredEvent } from '../events/types.js';
import type { DatasetZip } from './dataset-zip.js';
import type { ExportImage } from './export-types.js';

export interface DatasetLayout {
  /**
   * Records the annotations of `image` (its bytes are already in the zip), adding entries or
   * writing them to temporary files.
   * @returns annotations written
   * @throws the file system's error of a temporary file (e.g. ENOSPC)
   */
  addImage(event: StoredEvent, image: ExportImage, zip: DatasetZip): Promise<number>;
  /** Adds the closing entries. */
  finish(zip: DatasetZip): Promise<void>;
  /** Removes the temporary files; call once, after `finish` or a failure. */
  dispose(): Promise<void>;
}

/** A fresh directory in os.tmpdir() for one export's temporary files, and its removal. */
export async function exportTempDir(): Promise<{ directory: string; remove: () => Promise<void> }> {
  const directory = await mkdtemp(path.join(os.tmpdir(), 'edge-export-'));
  return { directory, remove: () => rm(directory, { recursive: true, force: true }) };
}
