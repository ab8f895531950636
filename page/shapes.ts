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

/** A video or local-only file attached to a draft (docs/API.md, "Drafts and attachments"). */
export interface StoredAttachment {
  file_id: string;
  label: string;
  content_type: string;
  size_bytes: number;
}

/** A stored event, as `created`, `finalized` and `files_attached` messages carry it. */
export interface StoredEvent {
  id: string;
  device_id: string | null;
  event_schema: string;
  event_data: Record<string, unknown>;
  images: StoredImage[];
  videos: StoredAttachment[];
  local_only_files: StoredAttachment[];
  created_at: string;
  draft: boolean;
}

/** A page of `GET /v2/events`. */
export interface EventPage {
  events: StoredEvent[];
  next_timestamp: string | null;
}

/** A page of `GET /v2/events/search`. */
export interface EventSearchPage {
  events: StoredEvent[];
  next_cursor: string | null;
}

/** MQTT publishing (docs/OPERATIONS.md, "MQTT"), null when MQTT_URL is unset. */
export interface MqttStats {
  connected: boolean;
  /** Messages the broker acknowledged since the store started. */
  published_total: number;
  resume_point: string | null;
  /** Age of the oldest event not yet published (s); null when none waits. */
  oldest_unpublished_age_seconds: number | null;
  /** Finalizes and deletions not published because too many happened while the broker was away. */
  changes_skipped: number;
  last_error: string | null;
}

/** The latest cleanup run since the store started, null before the first. */
/** `/stats` `log_damage`: damage in the segment log that start-up replays moved to quarantine/ (docs/API.md, "Statistics"). */
export interface LogDamageStats {
  quarantined_ranges: number;
  quarantined_bytes: number;
  events_lost: number;
  recent: { segment: number; offset: number; end: number; lost_events: string[]; file: string; found_at: string }[];
}

/** `/stats` `scrub`: the running store's scrub of the log (docs/API.md, "Statistics"; docs/STORAGE.md, "The scrub"). */
export interface ScrubStats {
  pass_hours: number;
  passes: number;
  last_pass_at: string | null;
  verified_bytes: number;
  damaged: number;
  repaired: number;
  unrepairable: number;
  recent: { at: string; copy: 'log_copy' | 'index_copy' | 'file'; repaired: boolean; event_ids: string[]; file_id: string | null; file: string; offset: number; detail: string }[];
}

export interface LastCleanup {
  trigger: 'MANUAL' | 'AUTOMATIC';
  finished_at: string;
  duration_seconds: number;
  records_deleted: number;
  files_deleted: number;
  bytes_freed: number;
}

/**
 * What the store wrote against what it accepted since it started (docs/API.md, "Statistics"):
 * the one-time writes before the measurement began apart, the figures over the measurement null
 * while it is `measuring`.
 */
export interface DiskWriteStats {
  source: string | null;
  bytes_written: number | null;
  one_time_bytes_written: number | null;
  bytes_accepted: number;
  events_accepted: number;
  measured_since: string | null;
  measured_events: number;
  measuring: boolean;
  write_amplification: number | null;
  bytes_written_per_event: number | null;
  bytes_written_per_day: number | null;
  /** The data directory's block device, every writer on it; null where it has none. */
  device?: DeviceWriteStats | null;
}

/** What the block device under the data directory wrote since the store started (`disk_writes.device`); its bytes are always known. */
export interface DeviceWriteStats extends Pick<DiskWriteStats, 'write_amplification' | 'bytes_written_per_event' | 'bytes_written_per_day'> {
  name: string;
  bytes_written: number;
  one_time_bytes_written: number;
}

/** `/stats` `hub`: hub mode's consumer of a fleet's stream (docs/API.md, "Statistics"; docs/OPERATIONS.md, "Hub mode"); null when not a hub. */
export interface HubStats {
  imported: number;
  terminated: number;
  collisions: number;
  /** Messages the hub's consumer has not had acknowledged (num_pending + num_ack_pending); null before the first read. */
  pending_messages: number | null;
  /** Seconds the hub is behind its stream; null while unknown. */
  lag_seconds: number | null;
  /** The JetStream timestamp of the newest message imported since the hub started; null before one. */
  newest_imported_at: string | null;
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
  /** Absent on a store older than MQTT publishing. */
  mqtt?: MqttStats | null;
  /** Absent on a store older than this field. */
  last_cleanup?: LastCleanup | null;
  /** Absent on a store older than this field. */
  log_damage?: LogDamageStats;
  /** Absent on a store older than this field. */
  scrub?: ScrubStats;
  /** Absent on a store older than this field. */
  disk_writes?: DiskWriteStats | null;
  /** Null when not a hub; absent on a store older than hub mode. */
  hub?: HubStats | null;
}
