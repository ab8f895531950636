/**
 * Turns stored records into the response shape of a stored event (docs/API.md, "Routes";
 * schemas/responses/stored-event.json). The store keeps each record's JSON of this shape beside it
 * (src/store/index/record-codec.ts), presented by `presentEventJson`.
 */
import { type EventRecord, formatMicros, formatMicrosOrNull } from '../store/index.js';
import type { StoredEvent, StoredImage } from './types.js';

/** A record as the GET event routes return it, snake_case with `api_version` "v2". */
export function presentEvent(record: EventRecord): StoredEvent {
  return {
    id: record.id,
    solution: record.solution,
    workflow_id: record.workflow_id,
    workflow_version: record.workflow_version,
    inference_timestamp: record.inference_timestamp,
    device_id: record.device_id,
    stream_id: record.stream_id,
    image_id: record.image_id,
    // The store keeps the image results opaque; they are the ImageResults the create route validated.
    images: record.images as StoredImage[],
    videos: record.videos,
    local_only_files: record.local_only_files,
    display_image_position: record.display_image_position,
    event_schema: record.event_schema,
    event_data: record.event_data,
    custom_metadata: record.custom_metadata,
    created_at: formatMicros(record.created_at),
    api_version: 'v2',
    original_file_count: record.original_file_count,
    current_file_count: record.current_file_count,
    draft: record.draft,
    finalized_at: formatMicrosOrNull(record.finalized_at),
    auto_finalized_at: formatMicrosOrNull(record.auto_finalized_at),
  };
}

/**
 * The JSON text of `presentEvent(record)`: the body of `GET /v2/events/{event_id}` and one
 * element of a list page. The store's record presenter (store-view.ts `StoreOptions.present`), given
 * by each thread's composition root (serve.ts, src/lifecycle/worker.ts).
 */
export function presentEventJson(record: EventRecord): string {
  return JSON.stringify(presentEvent(record));
}
