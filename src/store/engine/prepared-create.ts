/**
 * A create made ready for the log stage (docs/STORAGE.md, "Creates", step 0): its ids assigned,
 * its record built and encoded with placeholder times, and the record the head will keep.
 * Needs no store, so it runs where the create was prepared: on the HTTP thread for a light
 * create, on the create preparer's worker for a heavy one (src/events/create-preparer.ts), whose
 * result crosses back as the encoded bytes and a record without its geometry.
 */
import type { EventRecord, RecordImage, RecordImageResults } from '../record/event-record.js';
import { timeOrderedId } from '../record/ids.js';
import type { FileKind } from '../log/log-entries.js';
import { encodeRecord, encodeUnstamped, stampValue, type RecordPresenter, type UnstampedValue } from '../index/record-codec.js';

/** An image of a create, decoded: its bytes and sniffed content type. */
export interface DecodedImage {
  bytes: Buffer;
  contentType: string;
}

/** A create request ready to store: the record's fields and the decoded images. */
export interface NewEvent {
  fields: Omit<EventRecord, 'id' | 'created_at' | 'images' | 'videos' | 'local_only_files' |
    'original_file_count' | 'current_file_count' | 'finalized_at' | 'auto_finalized_at'>;
  images: { results: RecordImageResults; image: DecodedImage | null; input: DecodedImage | null }[];
  /**
   * Ids to keep instead of new ones: an event a hub consumes from a fleet's stream keeps its
   * device-side event and file ids (docs/OPERATIONS.md, "Hub mode"); per image, its file and
   * input file ids (null where it has none).
   */
  ids?: { event: string; images: { file: string | null; input: string | null }[] };
}

/** A create as the log stage takes it (event-store.ts `commitLogged`). */
export interface PreparedCreate {
  type: 'create';
  /**
   * The record as the head keeps it (`headRecord`), its created_at (and finalized_at) a
   * placeholder until the commit sets them.
   */
  record: EventRecord;
  /**
   * The whole record encoded, times aside (record-codec.ts `encodeUnstamped`); or, where the
   * times' places in it could not be told, the whole record, which the commit encodes.
   */
  encoded: { unstamped: UnstampedValue } | { whole: EventRecord };
  /** The images' bytes, each a blob frame of the create. */
  imageBlobs: { fileId: string; kind: FileKind; bytes: Buffer; contentType: string }[];
}

/**
 * Builds and encodes a create's record (docs/STORAGE.md, "Creates", step 0): new UUIDv7 ids for
 * the event and each image file, unless `event.ids` keeps others; no draft's finalized_at is
 * its created_at, set at the commit (`stampedValue`).
 * @param present the store's presenter (store-view.ts `StoreOptions.present`), as the store that
 *   will commit the create has it
 */
export function prepareCreateRecord(event: NewEvent, present: RecordPresenter): PreparedCreate {
  const imageBlobs: PreparedCreate['imageBlobs'] = [];
  const addBlob = (image: DecodedImage | null, keptId: string | null | undefined): string | null => {
    if (!image) return null;
    const fileId = keptId ?? timeOrderedId();
    imageBlobs.push({ fileId, kind: 'image', bytes: image.bytes, contentType: image.contentType });
    return fileId;
  };
  // Built field by field: spreading the validated input here made every record a slow
  // dictionary-mode object (measured: 40 µs per event more CPU).
  const images: RecordImage[] = event.images.map(({ results, image, input }, i) => ({
    file_id: addBlob(image, event.ids?.images[i]?.file),
    input_file_id: addBlob(input, event.ids?.images[i]?.input),
    label: results.label,
    object_detections: results.object_detections,
    classifications: results.classifications,
    instance_segmentations: results.instance_segmentations,
    keypoints: results.keypoints,
    metadata: results.metadata,
  }));
  const f = event.fields;
  const record: EventRecord = {
    id: event.ids?.event ?? timeOrderedId(),
    created_at: 0, // a placeholder until commit, which assigns it in commit order
    solution: f.solution,
    workflow_id: f.workflow_id,
    workflow_version: f.workflow_version,
    inference_timestamp: f.inference_timestamp,
    device_id: f.device_id,
    stream_id: f.stream_id,
    image_id: f.image_id,
    event_schema: f.event_schema,
    event_data: f.event_data,
    custom_metadata: f.custom_metadata,
    images,
    videos: [],
    local_only_files: [],
    display_image_position: f.display_image_position,
    original_file_count: imageBlobs.length,
    current_file_count: imageBlobs.length,
    draft: f.draft,
    finalized_at: null,
    auto_finalized_at: null,
  };
  const unstamped = encodeUnstamped(record, present);
  if (!unstamped) return { type: 'create', record, encoded: { whole: record }, imageBlobs };
  return { type: 'create', record: headRecord(record), encoded: { unstamped }, imageBlobs };
}

/**
 * The stored value of a prepared create committed at `createdAt` (µs): its unstamped value with
 * the time written in (record-codec.ts `stampValue`), else the whole record encoded.
 * @param present the store's presenter, as `prepareCreateRecord` was given it
 */
export function stampedValue(prepared: PreparedCreate, createdAt: number, present: RecordPresenter): Buffer {
  const { encoded } = prepared;
  if ('unstamped' in encoded) return stampValue(encoded.unstamped, createdAt, present);
  encoded.whole.created_at = createdAt;
  if (!encoded.whole.draft) encoded.whole.finalized_at = createdAt;
  return encodeRecord(encoded.whole, present);
}

/**
 * Object detections in an event from which the head keeps only each one's class and confidence
 * (`headRecord`); below it, the detections are kept as they are, with no copy made.
 */
export const HEAD_GEOMETRY_DETECTIONS = 1000;

/**
 * The record as the head keeps it (docs/STORAGE.md, "The head"): the same, but each
 * instance segmentation's `points` and each keypoint group's `keypoints` empty, and, in an event
 * of HEAD_GEOMETRY_DETECTIONS object detections or more, each detection only its `class` and
 * `confidence`. Nothing that reads the head's records looks at the rest: queries, index keys,
 * counters and the stream's filters read classes, confidences and how many predictions there
 * are, and every read of an event's content reads its stored value. Kept, a create's up to
 * MAX_POINTS_PER_EVENT points, or the geometry of its up to MAX_PREDICTIONS_PER_EVENT detections,
 * would stay on the HTTP thread's heap until its checkpoint, for every major GC to mark, and
 * would be copied back from the create preparer's worker (native-bench/RESULTS.stalls.md: 100,000 detections held the
 * HTTP thread for their copy and its garbage collection).
 */
export function headRecord(record: EventRecord): EventRecord {
  const detections = record.images.reduce((n, image) => n + image.object_detections.length, 0) >= HEAD_GEOMETRY_DETECTIONS;
  if (!detections && !record.images.some((i) => i.instance_segmentations.length > 0 || i.keypoints.length > 0)) return record;
  const classOnly = (d: unknown) => ({ class: (d as { class: string }).class, confidence: (d as { confidence: number }).confidence });
  const images = record.images.map((image) => ({
    ...image,
    object_detections: detections ? image.object_detections.map(classOnly) : image.object_detections,
    instance_segmentations: image.instance_segmentations.map((s) => ({ ...(s as object), points: [] })),
    keypoints: image.keypoints.map((g) => ({ ...(g as object), keypoints: [] })),
  }));
  return { ...record, images };
}
