/**
 * The YOLO layout (docs/API.md, "Dataset export", "YOLO"): `images/`, `labels/<basename>.txt`
 * beside each image (empty when it has no box: a background image), and `data.yaml` added last.
 * Label files are STOREd (a few hundred bytes each: deflate would save little and cost a zlib
 * stream per image). Only the class names stay in memory.
 */
import type { DatasetLayout } from './dataset-layout.js';
import type { DatasetZip } from './dataset-zip.js';
import type { ExportImage } from './export-types.js';
import { YoloClasses, yoloDataYaml, yoloLabelLines, yoloLabelPath } from './yolo-format.js';

export const YOLO_DATA_FILE = 'data.yaml';

/** Opens the YOLO layout of one export. */
export function openYoloLayout(): DatasetLayout {
  const classes = new YoloClasses();
  return {
    async addImage(_event, image: ExportImage, zip: DatasetZip) {
      const lines = yoloLabelLines(image, classes);
      const text = lines.length === 0 ? '' : `${lines.join('\n')}\n`;
      await zip.addBuffer(yoloLabelPath(image.fileName), Buffer.from(text), { compress: false });
      return lines.length;
    },
    async finish(zip: DatasetZip) {
      await zip.addBuffer(YOLO_DATA_FILE, Buffer.from(yoloDataYaml(classes.names())), { compress: false });
    },
    async dispose() {},
  };
}
