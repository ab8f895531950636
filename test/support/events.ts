/** Request bodies made from real media in test/fixtures. */
import fs from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../../src/paths.js';
import { exactJsonBody } from './exact-json.js';

export const fixturesDir = path.join(packageRoot, 'test', 'fixtures');

/** The bytes of a fixture file. */
export const fixture = (name: string): Buffer => fs.readFileSync(path.join(fixturesDir, name));

/** A valid quality_check event in camelCase with one real JPEG, overridable. */
export function imageEvent(overrides: Record<string, unknown> = {}, image = 'cat.jpg'): Record<string, unknown> {
  return {
    inferenceTimestamp: '2026-11-22T01:00:00Z',
    eventSchema: 'quality_check',
    eventData: { result: 'pass', externalId: 'lot-1' },
    deviceId: 'cam-1',
    workflowId: 'wf-inspect',
    customMetadata: { line: 'A', temperature: 21.5 },
    images: [
      {
        label: 'front',
        base64Image: fixture(image).toString('base64'),
        objectDetections: [{ class: 'cat', x: 225, y: 150, width: 200, height: 180, confidence: 0.92 }],
        classifications: [{ class: 'cat', confidence: 0.97 }],
      },
    ],
    ...overrides,
  };
}

/** A small event without images, snake_case, overridable. */
export function smallEvent(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    inference_timestamp: '2026-11-22T01:00:00Z',
    event_schema: 'custom',
    event_data: { value: 'ok' },
    device_id: 'cam-1',
    ...overrides,
  };
}

/** POSTs JSON and returns status and parsed body (read whole and checked to the byte: exact-json.ts). */
export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, body: await exactJsonBody(res, `${res.status} from ${url}`) };
}

/** GETs JSON and returns status and parsed body (read whole and checked to the byte: exact-json.ts). */
export async function getJson(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(url, { headers });
  return { status: res.status, body: await exactJsonBody(res, `${res.status} from ${url}`) };
}

/** Base64 as Python's `base64.encodebytes` and `openssl base64` write it: 76-column lines, each ending in `eol`. */
export function wrappedBase64(bytes: Buffer, eol = '\n'): string {
  const text = bytes.toString('base64');
  let wrapped = '';
  for (let i = 0; i < text.length; i += 76) wrapped += text.slice(i, i + 76) + eol;
  return wrapped;
}

/**
 * A keypoint event shaped exactly as the open-source inference server's event-writer and
 * vision-events workflow sinks send it: snake_case, keypoints without `occluded`, predictions
 * carrying the model output's own keys (`class_id`, `detection_id`, `tracker_id`, `parent_id`),
 * and the image base64-encoded by Python's `base64.encodebytes` (wrapped at 76 columns).
 */
export function producerKeypointEvent(image = 'rocket.jpg'): Record<string, unknown> {
  const box = { x: 320.0, y: 240.0, width: 180.0, height: 400.0, confidence: 0.87 };
  return {
    solution: 'people-counting',
    workflow_id: 'pose-workflow',
    workflow_version: '3',
    inference_timestamp: '2026-11-22T08:15:30.123456+00:00',
    device_id: 'jetson-07',
    stream_id: 'rtsp-gate',
    event_schema: 'custom',
    event_data: { external_id: 'frame-118', value: 'person' },
    custom_metadata: { zone: 'gate', people: 1 },
    images: [
      {
        label: 'output_image',
        base64_image: wrappedBase64(fixture(image)),
        object_detections: [{ class: 'person', ...box, class_id: 0, detection_id: 'f3a1c2d4-0000-4000-8000-000000000001', tracker_id: 12, parent_id: 'image' }],
        classifications: [],
        instance_segmentations: [],
        keypoints: [
          {
            class: 'person', ...box, class_id: 0, detection_id: 'f3a1c2d4-0000-4000-8000-000000000002', parent_id: 'image',
            keypoints: [
              { id: 0, x: 300.0, y: 80.0 },
              { id: 1, x: 290.0, y: 70.0, confidence: 0.91, class_name: 'left_eye', class_id: 1 },
            ],
          },
        ],
      },
    ],
  };
}
