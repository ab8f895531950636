/**
 * The store's own record of an event: what record-codec.ts writes and reads, what the indexes
 * and queries look at. It is not the API's response type (src/events/types.ts): the two have the
 * same field names today, and the presenter the store is given (store-view.ts,
 * `StoreOptions.present`) maps one to the other, so a change of the wire shape (docs/API.md) never
 * changes what is on disk by accident.
 */

/** A `custom_metadata` value as stored. */
export type RecordMetadataValue = string | number | boolean;

/**
 * The model's results for one image. The store never looks inside them; they are kept as the
 * create route validated them.
 */
export interface RecordImageResults {
  label: string | null;
  object_detections: unknown[];
  classifications: unknown[];
  instance_segmentations: unknown[];
  keypoints: unknown[];
  metadata: Record<string, unknown>;
}

/** One image of a record: the ids of its stored files (null: none sent) and its results. */
export interface RecordImage extends RecordImageResults {
  file_id: string | null;
  input_file_id: string | null;
}

/** A video or local-only file attached to a draft; `size_bytes` in bytes. */
export interface RecordAttachment {
  file_id: string;
  label: string;
  content_type: string;
  size_bytes: number;
}

/** A decoded record. Timestamps are µs since the epoch (timestamps.ts). */
export interface EventRecord {
  id: string;
  /** The record's key: unique per store, assigned at commit. */
  created_at: number;
  solution: string | null;
  workflow_id: string | null;
  workflow_version: string | null;
  /** As the producer sent it (ISO 8601 text). */
  inference_timestamp: string;
  device_id: string | null;
  stream_id: string | null;
  image_id: string | null;
  event_schema: string;
  event_data: Record<string, unknown>;
  custom_metadata: Record<string, RecordMetadataValue>;
  images: RecordImage[];
  videos: RecordAttachment[];
  local_only_files: RecordAttachment[];
  display_image_position: number | null;
  original_file_count: number;
  current_file_count: number;
  draft: boolean;
  finalized_at: number | null;
  auto_finalized_at: number | null;
}
