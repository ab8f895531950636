/** Request bodies made from real media in test/fixtures. */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const fixturesDir = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures');

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

/** POSTs JSON and returns status and parsed body. */
export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** GETs JSON and returns status and parsed body. */
export async function getJson(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(url, { headers });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}
