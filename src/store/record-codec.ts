/**
 * Versioned record codec (DESIGN.md, "Storage engine invariants"): records are msgpackr-encoded
 * with their layout version first, so records written by older versions of the service still
 * decode and are returned by queries (spec B, Versioning rule 2).
 *
 * Layout 2 (current): a positional array, compact and fast to encode:
 *   [2, id, created_at µs, solution, workflow_id, workflow_version, inference_timestamp,
 *    device_id, stream_id, image_id, event_schema, event_data, custom_metadata, images,
 *    videos, local_only_files, display_image_position, original_file_count,
 *    current_file_count, draft, finalized_at µs|null, auto_finalized_at µs|null]
 *   images: [file_id, input_file_id, label, object_detections, classifications,
 *            instance_segmentations, keypoints, metadata][]
 *   videos, local_only_files: [file_id, label, content_type, size_bytes][]
 *
 * Layout 1 (the first release): a map `{v: 1, id, created_at: ISO string, ...snake_case
 * fields, images: [{file_id, input_file_id, label, ...}]}` without drafts, attachments or file
 * counts; every layout-1 event was finalized on creation.
 */
import { Packr } from 'msgpackr';
import type { MetadataValue, StoredAttachment, StoredEvent, StoredImage } from '../events/types.js';
import { parseIsoMicros } from './timestamps.js';

/** A decoded record: the stored event with its timestamps as µs and without `api_version`. */
export interface EventRecord extends Omit<StoredEvent, 'created_at' | 'finalized_at' | 'auto_finalized_at' | 'api_version'> {
  created_at: number;
  finalized_at: number | null;
  auto_finalized_at: number | null;
}

export const CURRENT_LAYOUT = 2;

const packr = new Packr({ useRecords: false, mapsAsObjects: true, variableMapSize: true });

type Tuple = unknown[];

const encodeAttachment = (a: StoredAttachment): Tuple => [a.file_id, a.label, a.content_type, a.size_bytes];
const decodeAttachment = (t: Tuple): StoredAttachment => ({
  file_id: t[0] as string,
  label: t[1] as string,
  content_type: t[2] as string,
  size_bytes: t[3] as number,
});

/** Encodes a record in the current layout. */
export function encodeRecord(r: EventRecord): Buffer {
  return packr.pack([
    CURRENT_LAYOUT, r.id, r.created_at, r.solution, r.workflow_id, r.workflow_version,
    r.inference_timestamp, r.device_id, r.stream_id, r.image_id, r.event_schema, r.event_data,
    r.custom_metadata,
    r.images.map((i) => [i.file_id, i.input_file_id, i.label, i.object_detections, i.classifications,
      i.instance_segmentations, i.keypoints, i.metadata]),
    r.videos.map(encodeAttachment), r.local_only_files.map(encodeAttachment),
    r.display_image_position, r.original_file_count, r.current_file_count, r.draft,
    r.finalized_at, r.auto_finalized_at,
  ]);
}

function decodeLayout2(t: Tuple): EventRecord {
  return {
    id: t[1] as string,
    created_at: t[2] as number,
    solution: t[3] as string | null,
    workflow_id: t[4] as string | null,
    workflow_version: t[5] as string | null,
    inference_timestamp: t[6] as string,
    device_id: t[7] as string | null,
    stream_id: t[8] as string | null,
    image_id: t[9] as string | null,
    event_schema: t[10] as string,
    event_data: t[11] as Record<string, unknown>,
    custom_metadata: t[12] as Record<string, MetadataValue>,
    images: (t[13] as Tuple[]).map((i) => ({
      file_id: i[0] as string | null,
      input_file_id: i[1] as string | null,
      label: i[2] as string | null,
      object_detections: i[3] as StoredImage['object_detections'],
      classifications: i[4] as StoredImage['classifications'],
      instance_segmentations: i[5] as StoredImage['instance_segmentations'],
      keypoints: i[6] as StoredImage['keypoints'],
      metadata: i[7] as Record<string, unknown>,
    })),
    videos: (t[14] as Tuple[]).map(decodeAttachment),
    local_only_files: (t[15] as Tuple[]).map(decodeAttachment),
    display_image_position: t[16] as number | null,
    original_file_count: t[17] as number,
    current_file_count: t[18] as number,
    draft: t[19] as boolean,
    finalized_at: t[20] as number | null,
    auto_finalized_at: t[21] as number | null,
  };
}

function decodeLayout1(m: Record<string, unknown>): EventRecord {
  const createdAt = parseIsoMicros(String(m.created_at));
  if (createdAt === undefined) throw new Error(`layout-1 record ${String(m.id)} has a bad created_at`);
  const images = ((m.images ?? []) as Record<string, unknown>[]).map((i) => ({
    file_id: (i.file_id ?? null) as string | null,
    input_file_id: (i.input_file_id ?? null) as string | null,
    label: (i.label ?? null) as string | null,
    object_detections: (i.object_detections ?? []) as StoredImage['object_detections'],
    classifications: (i.classifications ?? []) as StoredImage['classifications'],
    instance_segmentations: (i.instance_segmentations ?? []) as StoredImage['instance_segmentations'],
    keypoints: (i.keypoints ?? []) as StoredImage['keypoints'],
    metadata: (i.metadata ?? {}) as Record<string, unknown>,
  }));
  const fileCount = images.reduce((n, i) => n + (i.file_id ? 1 : 0) + (i.input_file_id ? 1 : 0), 0);
  return {
    id: String(m.id),
    created_at: createdAt,
    solution: (m.solution ?? null) as string | null,
    workflow_id: (m.workflow_id ?? null) as string | null,
    workflow_version: (m.workflow_version ?? null) as string | null,
    inference_timestamp: String(m.inference_timestamp),
    device_id: (m.device_id ?? null) as string | null,
    stream_id: (m.stream_id ?? null) as string | null,
    image_id: (m.image_id ?? null) as string | null,
    event_schema: String(m.event_schema),
    event_data: (m.event_data ?? {}) as Record<string, unknown>,
    custom_metadata: (m.custom_metadata ?? {}) as Record<string, MetadataValue>,
    images,
    videos: [],
    local_only_files: [],
    display_image_position: (m.display_image_position ?? null) as number | null,
    original_file_count: fileCount,
    current_file_count: fileCount,
    draft: false,
    finalized_at: createdAt,
    auto_finalized_at: null,
  };
}

/**
 * Decodes a record of any known layout.
 * @throws Error on an unknown layout version or a malformed record
 */
export function decodeRecord(bytes: Buffer | Uint8Array): EventRecord {
  const value = packr.unpack(bytes) as unknown;
  if (Array.isArray(value) && value[0] === 2) return decodeLayout2(value);
  if (value && typeof value === 'object' && (value as { v?: unknown }).v === 1) {
    return decodeLayout1(value as Record<string, unknown>);
  }
  throw new Error('record of an unknown layout');
}
