/**
 * The parts of the store's answers the operator page reads (docs/API.md, "Response shapes",
 * "Statistics"; the full shapes are schemas/responses/*.json). Fields the page does not use are
 * left out.
 */

/** A box: centre (`x`, `y`) and full size (`width`, `height`), in pixels of its image. */
export interface Box {
  class: string;
  x: number;
  y: number;
  width: number;
  height: number;
  confidence: number;
}

/** A stored image entry; `file_id` is null once cleanup removed the file. */
export interface StoredImage {
  file_id: string | null;
  label: string | null;
  object_detections: Box[];
  /** Instance segmentations and keypoint groups carry a detection's box too. */
  instance_segmentations: Box[];
  keypoints: Box[];
}

/** A stored event, as `created`, `finalized` and `files_attached` messages carry it. */
export interface StoredEvent {
  id: string;
  device_id: string | null;
  event_schema: string;
  event_data: Record<string, unknown>;
  images: StoredImage[];
  created_at: string;
  draft: boolean;
}

/** A page of `GET /v2/events`. */
export interface EventPage {
  events: StoredEvent[];
  next_timestamp: string | null;
}

/** MQTT publishing, null when MQTT is off. */
export interface MqttStats {
  connected: boolean;
  published_total: number;
  resume_point: string | null;
  oldest_unpublished_age_seconds: number | null;
}

/** The latest cleanup, null before the first one ran. */
export interface LastCleanup {
  finished_at: string;
  duration_ms: number;
  events_deleted: number;
  files_deleted: number;
  bytes_freed: number;
}

/** `GET /stats`. */
export interface Stats {
  current: { total_events: number; days_of_data_stored: number };
  configuration: { retention_days: number };
  capacity: {
    records: { used: number; limit: number; percent_used: number };
    storage: { bytes_used_formatted: string; bytes_limit_formatted: string; percent_used: number };
    blocked: boolean;
    uploads_pending: number;
  };
  /** Absent on a store without MQTT support. */
  mqtt?: MqttStats | null;
  /** Absent on a store that does not report it. */
  last_cleanup?: LastCleanup | null;
}
