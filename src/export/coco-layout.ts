/**
 * The COCO layout (docs/API.md, "Dataset export", "COCO"): `images/` and one
 * `annotations.coco.json` added last, assembled from three temporary files written while the
 * events streamed past (images, annotations, keypoint drafts: json-spool.ts); only the categories
 * stay in memory.
 */
import { Readable } from 'node:stream';
import type { StoredEvent } from '../events/types.js';
import { CocoCategories, cocoAnnotations, cocoImage, finishKeypoints } from './coco-format.js';
import type { CocoKeypointDraft } from './coco-format.js';
import type { DatasetLayout } from './dataset-layout.js';
import { exportTempDir } from './dataset-layout.js';
import type { DatasetZip } from './dataset-zip.js';
import type { ExportImage } from './export-types.js';
import { JsonSpool } from './json-spool.js';

export const COCO_FILE = 'annotations.coco.json';

/** Opens the COCO layout of one export (its temporary directory in os.tmpdir()). */
export async function openCocoLayout(): Promise<DatasetLayout> {
  const temp = await exportTempDir();
  const images = new JsonSpool(temp.directory, 'images.ndjson');
  const annotations = new JsonSpool(temp.directory, 'annotations.ndjson');
  const drafts = new JsonSpool(temp.directory, 'keypoints.ndjson');
  const categories = new CocoCategories();
  let annotationId = 0;
  const nextId = () => ++annotationId;

  async function* document(): AsyncGenerator<Buffer> {
    yield Buffer.from(`{"info":${JSON.stringify({ description: 'edge-event-store dataset export', version: '1.0', date_created: new Date().toISOString() })},"licenses":[],"images":[`);
    yield* images.arrayBody();
    yield Buffer.from('],"annotations":[');
    yield* annotations.arrayBody();
    let separator = annotations.count > 0 ? ',' : '';
    for await (const line of drafts.lines()) {
      yield Buffer.from(separator + JSON.stringify(finishKeypoints(JSON.parse(line) as CocoKeypointDraft, categories)));
      separator = ',';
    }
    yield Buffer.from(`],"categories":${JSON.stringify(categories.list())}}\n`);
  }

  return {
    async addImage(event: StoredEvent, image: ExportImage) {
      const imageId = images.count + 1;
      const converted = cocoAnnotations(image, imageId, categories, nextId);
      await images.push([cocoImage(event, image, imageId)]);
      await annotations.push(converted.annotations);
      await drafts.push(converted.keypointDrafts);
      return converted.annotations.length + converted.keypointDrafts.length;
    },
    async finish(zip: DatasetZip) {
      await Promise.all([images.close(), annotations.close(), drafts.close()]);
      await zip.addStream(COCO_FILE, Readable.from(document(), { objectMode: false }));
    },
    async dispose() {
      await Promise.all([images.close(), annotations.close(), drafts.close()].map((closing) => closing.catch(() => undefined)));
      await temp.remove();
    },
  };
}
