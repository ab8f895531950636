/**
 * What the cloud uploader sends: the public cloud Vision Events API's event
 * objects, mapped from stored records (camelCase field names, null fields left out), and the
 * multipart body of an image upload, streamed from the blob log in bounded chunks so no more
 * than one chunk of one image is read ahead of the socket.
 */
import { randomUUID } from 'node:crypto';
import type { Classification, Detection, InstanceSegmentation, KeypointGroup, MetadataValue, StoredImage } from '../events/types.js';
import type { EventRecord, StoredFile } from '../store/index.js';

/** An image of a cloud event: the ids the upload route answered, and the model's results. */
export interface CloudImage {
  sourceId?: string;
  inputSourceId?: string;
  label?: string;
  objectDetections: Detection[];
  classifications: Classification[];
  instanceSegmentations: InstanceSegmentation[];
  keypoints: KeypointGroup[];
}

/** One event of `POST /vision-events/batch`. */
export interface CloudEvent {
  eventId: string;
  eventType: string;
  useCaseId?: string;
  timestamp: string;
  deviceId?: string;
  streamId?: string;
  workflowId?: string;
  eventData: Record<string, unknown>;
  customMetadata: Record<string, MetadataValue>;
  displayImagePosition?: number;
  images: CloudImage[];
}

/** A request body with the headers that describe it. */
export interface RequestParts {
  body: string | ReadableStream<Uint8Array>;
  headers: Record<string, string>;
}

const camel = (name: string): string => name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/** `value` unless it is null: optional cloud fields are left out rather than sent as null. */
const present = <T>(value: T | null): T | undefined => value ?? undefined;

/**
 * Maps a finalized record to a cloud event. `eventId` is the store's id, so a re-sent event
 * replaces the earlier copy (the cloud's idempotency key). Videos and local-only files are
 * not part of it.
 * @param sourceIdOf the `sourceId` the cloud answered for an uploaded file id, or undefined when
 *   the file was not uploaded (removed by cleanup or the consistency pass, or refused): the
 *   image entry is then sent with its results but without that id
 * @param defaultSolutionId DEFAULT_SOLUTION_ID, the `useCaseId` of events without `solution`
 */
export function toCloudEvent(
  record: EventRecord,
  sourceIdOf: (fileId: string | null) => string | undefined,
  defaultSolutionId: string | undefined,
): CloudEvent {
  return {
    eventId: record.id,
    eventType: record.event_schema,
    useCaseId: present(record.solution) ?? defaultSolutionId,
    timestamp: record.inference_timestamp,
    deviceId: present(record.device_id),
    streamId: present(record.stream_id),
    workflowId: present(record.workflow_id),
    eventData: Object.fromEntries(Object.entries(record.event_data).map(([key, value]) => [camel(key), value])),
    customMetadata: record.custom_metadata,
    displayImagePosition: present(record.display_image_position),
    // The store keeps image results opaque; they are the ImageResults the create route validated.
    images: (record.images as StoredImage[]).map((image) => ({
      sourceId: sourceIdOf(image.file_id),
      inputSourceId: sourceIdOf(image.input_file_id),
      label: present(image.label),
      objectDetections: image.object_detections,
      classifications: image.classifications,
      instanceSegmentations: image.instance_segmentations,
      keypoints: image.keypoints,
    })),
  };
}

/**
 * The name an image is uploaded under: its file id with an extension from its content type
 * (e.g. `<uuid>.jpg`); only characters safe in a multipart header.
 */
export function imageName(fileId: string, contentType: string): string {
  const subtype = contentType.split('/')[1] ?? 'bin';
  return `${fileId}.${subtype === 'jpeg' ? 'jpg' : subtype}`;
}

/**
 * The `multipart/form-data` body of `POST /vision-events/upload`: the `name` field, then the
 * `file` part with the image's bytes and content type, read from the blob log in chunks
 * (StoredFile.stream) as the request is sent. Its length is known, so it goes with a Content-Length.
 * A read that fails or comes back short errors the stream (and so the request).
 */
export function imageUploadForm(file: StoredFile, name: string): RequestParts {
  const boundary = `edge-events-${randomUUID()}`;
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\n${name}\r\n`
    + `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\n`
    + `Content-Type: ${file.contentType}\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const blob = file.stream().getReader();
  let ended = false;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(head);
    },
    async pull(controller) {
      if (ended) return;
      const { done, value } = await blob.read();
      if (!done) {
        controller.enqueue(value);
        return;
      }
      ended = true;
      controller.enqueue(tail);
      controller.close();
    },
  });
  return {
    body,
    headers: {
      'content-type': `multipart/form-data; boundary=${boundary}`,
      'content-length': String(head.length + file.size + tail.length),
    },
  };
}
