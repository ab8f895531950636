/**
 * Stored events for export tests (real fixture images), a zip reader (yauzl, whole entries into
 * memory: test zips are small), and the consistency checks of each dataset format written from
 * the formats' published descriptions, not from the exporter's code.
 */
import { readFile } from 'node:fs/promises';
import yauzl from 'yauzl';
import type { ImageResults, StoredEvent } from '../../src/events/types.js';
import type { ExportEvent } from '../../src/export/export-types.js';

/** A stored event as the GET routes answer it, with the given images (`file_id` only). */
export function storedEvent(id: string, images: { fileId: string; results?: Partial<ImageResults>; inputFileId?: string }[], overrides: Partial<StoredEvent> = {}): StoredEvent {
  return {
    id, solution: null, workflow_id: 'wf-1', workflow_version: '3', inference_timestamp: '2026-11-22T01:00:00Z',
    device_id: 'cam-1', stream_id: null, image_id: null,
    images: images.map((image) => ({ file_id: image.fileId, input_file_id: image.inputFileId ?? null, ...results(image.results) })),
    videos: [], local_only_files: [], display_image_position: null, event_schema: 'custom', event_data: {}, custom_metadata: {},
    created_at: '2026-11-22T01:00:01.000000Z', api_version: 'v2', original_file_count: images.length,
    current_file_count: images.length, draft: false, finalized_at: null, auto_finalized_at: null,
    ...overrides,
  };
}

/** Empty results with `overrides`. */
export function results(overrides: Partial<ImageResults> = {}): ImageResults {
  return { label: null, object_detections: [], classifications: [], instance_segmentations: [], keypoints: [], metadata: {}, ...overrides };
}

/** The events as an async iterable of ExportEvents (content type image/jpeg for every file). */
export async function* exportEvents(events: StoredEvent[]): AsyncGenerator<ExportEvent> {
  for (const event of events) {
    yield {
      event,
      images: event.images.flatMap((image) => {
        if (image.file_id === null) return [];
        const { file_id: fileId, input_file_id: _input, ...imageResults } = image;
        return [{ fileId, contentType: 'image/jpeg', results: imageResults }];
      }),
    };
  }
}

/** Every entry of the zip at `zipPath`, in order, with its bytes and compression method. */
export async function readZip(zipPath: string): Promise<{ name: string; method: number; bytes: Buffer }[]> {
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) => {
    yauzl.open(zipPath, { lazyEntries: true }, (err, opened) => (err ? reject(err) : resolve(opened)));
  });
  const entries: { name: string; method: number; bytes: Buffer }[] = [];
  await new Promise<void>((resolve, reject) => {
    zip.on('error', reject);
    zip.on('end', () => resolve());
    zip.on('entry', (entry: yauzl.Entry) => {
      zip.openReadStream(entry, (err, stream) => {
        if (err) return reject(err);
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('error', reject);
        stream.on('end', () => {
          entries.push({ name: entry.fileName, method: entry.compressionMethod, bytes: Buffer.concat(chunks) });
          zip.readEntry();
        });
      });
    });
    zip.readEntry();
  });
  return entries;
}

/**
 * The entries' names and sizes from the zip's central directory (nothing is decompressed). The file
 * is read whole first: yauzl reading it from the file takes ten times as long for 65,600 entries
 * (a read for each entry's header).
 */
export async function listZip(zipPath: string): Promise<{ name: string; size: number }[]> {
  const bytes = await readFile(zipPath);
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) => {
    yauzl.fromBuffer(bytes, { lazyEntries: false }, (err, opened) => (err ? reject(err) : resolve(opened)));
  });
  const entries: { name: string; size: number }[] = [];
  await new Promise<void>((resolve, reject) => {
    zip.on('error', reject);
    zip.on('entry', (entry: yauzl.Entry) => entries.push({ name: entry.fileName, size: entry.uncompressedSize }));
    zip.on('end', () => resolve());
  });
  zip.close();
  return entries;
}

/**
 * Problems of a COCO object-detection/keypoint document, per the format's description on
 * cocodataset.org ("Data format"): images {id, file_name, width, height}, annotations {id,
 * image_id, category_id, bbox [x, y, width, height] from the top-left, area, iscrowd,
 * segmentation polygons [[x1, y1, ...]], keypoints [x, y, v] * K with K the category's keypoint
 * names, num_keypoints the keypoints with v > 0}, categories {id, name}.
 * @returns the problems found (empty when consistent)
 */
export function cocoProblems(doc: any, epsilon = 1e-9): string[] {
  const problems: string[] = [];
  for (const key of ['images', 'annotations', 'categories']) if (!Array.isArray(doc[key])) problems.push(`${key} is not an array`);
  if (problems.length > 0) return problems;
  const unique = (name: string, ids: unknown[]) => {
    if (new Set(ids).size !== ids.length) problems.push(`${name} ids are not unique`);
    if (!ids.every((id) => Number.isInteger(id))) problems.push(`${name} ids are not integers`);
  };
  unique('image', doc.images.map((i: any) => i.id));
  unique('annotation', doc.annotations.map((a: any) => a.id));
  unique('category', doc.categories.map((c: any) => c.id));
  const images = new Map<number, any>(doc.images.map((i: any) => [i.id, i]));
  const categories = new Map<number, any>(doc.categories.map((c: any) => [c.id, c]));
  for (const image of doc.images) {
    if (typeof image.file_name !== 'string' || !(image.width > 0) || !(image.height > 0)) problems.push(`image ${image.id} lacks file_name or size`);
  }
  for (const a of doc.annotations) {
    const image = images.get(a.image_id);
    const category = categories.get(a.category_id);
    if (!image) { problems.push(`annotation ${a.id}: image ${a.image_id} does not exist`); continue; }
    if (!category) problems.push(`annotation ${a.id}: category ${a.category_id} does not exist`);
    if (!Array.isArray(a.bbox) || a.bbox.length !== 4) { problems.push(`annotation ${a.id}: bbox is not [x, y, w, h]`); continue; }
    const [x, y, w, h] = a.bbox;
    if (x < -epsilon || y < -epsilon || w <= 0 || h <= 0 || x + w > image.width + epsilon || y + h > image.height + epsilon) problems.push(`annotation ${a.id}: bbox ${a.bbox} outside image ${image.width}x${image.height}`);
    if (a.iscrowd !== 0) problems.push(`annotation ${a.id}: iscrowd is not 0`);
    if (!(a.area > 0)) problems.push(`annotation ${a.id}: area is not positive`);
    if (a.segmentation !== undefined) {
      if (!Array.isArray(a.segmentation) || !a.segmentation.every((p: unknown) => Array.isArray(p) && p.length >= 6 && p.length % 2 === 0)) problems.push(`annotation ${a.id}: segmentation is not polygons`);
      else for (const polygon of a.segmentation) for (let i = 0; i < polygon.length; i += 2) {
        if (polygon[i] < 0 || polygon[i] > image.width || polygon[i + 1] < 0 || polygon[i + 1] > image.height) problems.push(`annotation ${a.id}: polygon point outside image`);
      }
    }
    if (a.keypoints !== undefined) {
      const names = category?.keypoints;
      if (!Array.isArray(names) || a.keypoints.length !== names.length * 3) problems.push(`annotation ${a.id}: keypoints length ${a.keypoints.length} is not 3 x ${names?.length}`);
      let visible = 0;
      for (let i = 0; i < a.keypoints.length; i += 3) {
        if (![0, 1, 2].includes(a.keypoints[i + 2])) problems.push(`annotation ${a.id}: visibility ${a.keypoints[i + 2]}`);
        if (a.keypoints[i + 2] > 0) visible += 1;
      }
      if (a.num_keypoints !== visible) problems.push(`annotation ${a.id}: num_keypoints ${a.num_keypoints} != ${visible}`);
    }
  }
  return problems;
}

/** The same checks in Python, for a test that loads the document with Python's json module. */
export const COCO_CHECK_PY = String.raw`
import json, sys
doc = json.load(open(sys.argv[1]))
problems = []
for key in ("images", "annotations", "categories"):
    if not isinstance(doc.get(key), list): problems.append(key + " is not a list")
images = {i["id"]: i for i in doc["images"]}
categories = {c["id"]: c for c in doc["categories"]}
if len(images) != len(doc["images"]): problems.append("image ids not unique")
if len(categories) != len(doc["categories"]): problems.append("category ids not unique")
if len({a["id"] for a in doc["annotations"]}) != len(doc["annotations"]): problems.append("annotation ids not unique")
for a in doc["annotations"]:
    image = images.get(a["image_id"])
    if image is None:
        problems.append("annotation %d: no image %d" % (a["id"], a["image_id"])); continue
    if a["category_id"] not in categories: problems.append("annotation %d: no category" % a["id"])
    x, y, w, h = a["bbox"]
    if x < 0 or y < 0 or w <= 0 or h <= 0 or x + w > image["width"] + 1e-9 or y + h > image["height"] + 1e-9:
        problems.append("annotation %d: bbox outside image" % a["id"])
    if "keypoints" in a:
        k = len(categories[a["category_id"]].get("keypoints", []))
        if len(a["keypoints"]) != 3 * k: problems.append("annotation %d: keypoints length" % a["id"])
        if a["num_keypoints"] != sum(1 for v in a["keypoints"][2::3] if v > 0): problems.append("annotation %d: num_keypoints" % a["id"])
print(json.dumps({"images": len(doc["images"]), "annotations": len(doc["annotations"]), "categories": len(doc["categories"]), "problems": problems}))
`;
