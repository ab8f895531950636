/**
 * Domain shapes of the event store (docs/API.md). Input is accepted in camelCase or snake_case;
 * after validation every shape here is snake_case, as responses are.
 */

export const EVENT_SCHEMAS = ['quality_check', 'inventory_count', 'safety_alert', 'operator_feedback', 'custom'] as const;
export type EventSchemaName = (typeof EVENT_SCHEMAS)[number];

/** Box centre (x, y) and full size in absolute pixels; confidence 0..1. */
export interface Detection {
  class: string;
  x: number;
  y: number;
  width: number;
  height: number;
  confidence: number;
}
export interface Classification {
  class: string;
  confidence: number;
}
export interface InstanceSegmentation extends Detection {
  points: number[][];
}
export interface Keypoint {
  id: number;
  x: number;
  y: number;
  occluded: boolean;
}
export interface KeypointGroup extends Detection {
  keypoints: Keypoint[];
}

/** Per-image results, shared by the input (after normalisation) and the stored event. */
export interface ImageResults {
  label: string | null;
  object_detections: Detection[];
  classifications: Classification[];
  instance_segmentations: InstanceSegmentation[];
  keypoints: KeypointGroup[];
  metadata: Record<string, unknown>;
}

/** An image entry of a create request, normalised; base64 payloads still encoded. */
export interface ImageInput extends ImageResults {
  base64_image: string | null;
  input_base64_image: string | null;
}

export type MetadataValue = string | number | boolean;

/** A validated, normalised create request (docs/API.md, "Create an event"). */
export interface CreateEventInput {
  solution: string | null;
  workflow_id: string | null;
  workflow_version: string | null;
  inference_timestamp: string;
  device_id: string | null;
  stream_id: string | null;
  image_id: string | null;
  event_schema: EventSchemaName;
  /** Keys in snake_case, e.g. `external_id`, `related_event_id`. */
  event_data: Record<string, unknown>;
  custom_metadata: Record<string, MetadataValue>;
  images: ImageInput[];
  display_image_position: number | null;
  draft: boolean;
}

/** A stored image entry: results plus the ids of its decoded files. */
export interface StoredImage extends ImageResults {
  file_id: string | null;
  input_file_id: string | null;
}

/** A video or local-only file attached to a draft. */
export interface StoredAttachment {
  file_id: string;
  label: string;
  content_type: string;
  size_bytes: number;
}

/** The stored event as the GET routes return it (docs/API.md, "Response shapes"). */
export interface StoredEvent {
  id: string;
  solution: string | null;
  workflow_id: string | null;
  workflow_version: string | null;
  inference_timestamp: string;
  device_id: string | null;
  stream_id: string | null;
  image_id: string | null;
  images: StoredImage[];
  videos: StoredAttachment[];
  local_only_files: StoredAttachment[];
  display_image_position: number | null;
  event_schema: string;
  event_data: Record<string, unknown>;
  custom_metadata: Record<string, MetadataValue>;
  created_at: string;
  api_version: 'v2';
  original_file_count: number;
  current_file_count: number;
  draft: boolean;
  finalized_at: string | null;
  auto_finalized_at: string | null;
}
