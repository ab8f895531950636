/**
 * The Label Studio layout (docs/API.md, "Dataset export", "Label Studio"): `images/`, then
 * `tasks.json` (a JSON array of tasks, assembled from a temporary file written while the events
 * streamed past: json-spool.ts) and `labeling-config.xml` added last. Only the labels seen stay
 * in memory.
 */
import { Readable } from 'node:stream';
import type { StoredEvent } from '../events/types.js';
import type { DatasetLayout } from './dataset-layout.js';
import { exportTempDir } from './dataset-layout.js';
import type { DatasetZip } from './dataset-zip.js';
import type { ExportImage } from './export-types.js';
import { JsonSpool } from './json-spool.js';
import { LabelStudioLabels, labelStudioConfig, labelStudioTask } from './label-studio-format.js';

export const LABEL_STUDIO_TASKS_FILE = 'tasks.json';
export const LABEL_STUDIO_CONFIG_FILE = 'labeling-config.xml';

/** Opens the Label Studio layout of one export (its temporary directory in os.tmpdir()). */
export async function openLabelStudioLayout(): Promise<DatasetLayout> {
  const temp = await exportTempDir();
  const tasks = new JsonSpool(temp.directory, 'tasks.ndjson');
  const labels = new LabelStudioLabels();

  async function* document(): AsyncGenerator<Buffer> {
    yield Buffer.from('[');
    yield* tasks.arrayBody();
    yield Buffer.from(']\n');
  }

  return {
    async addImage(event: StoredEvent, image: ExportImage) {
      const task = labelStudioTask(event, image, labels);
      await tasks.push([task]);
      return task.predictions[0]?.result.length ?? 0;
    },
    async finish(zip: DatasetZip) {
      await tasks.close();
      await zip.addStream(LABEL_STUDIO_TASKS_FILE, Readable.from(document(), { objectMode: false }));
      await zip.addBuffer(LABEL_STUDIO_CONFIG_FILE, Buffer.from(labelStudioConfig(labels)), { compress: true });
    },
    async dispose() {
      await tasks.close().catch(() => undefined);
      await temp.remove();
    },
  };
}
