/**
 * Which files of an event an export takes (docs/API.md, "Dataset export"): each image entry's
 * `file_id`, the image its predictions were made on; never `input_file_id`, videos or
 * local-only files. Image entries without a file (predictions only) are left out.
 */
import type { StoredEvent } from '../events/types.js';
import type { ExportEvent } from './export-types.js';

/**
 * The export's view of `event`.
 * @param contentTypeOf the stored content type of a file (e.g. `image/jpeg`), or undefined when
 *   the index no longer has the file; such images stay listed, and the writer counts them as
 *   skipped when their bytes cannot be read
 */
export function exportEventOf(event: StoredEvent, contentTypeOf: (fileId: string) => string | undefined): ExportEvent {
  const images = [];
  for (const image of event.images) {
    if (image.file_id === null) continue;
    const { file_id: fileId, input_file_id: _input, ...results } = image;
    images.push({ fileId, contentType: contentTypeOf(fileId) ?? 'application/octet-stream', results });
  }
  return { event, images };
}
