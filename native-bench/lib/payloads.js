/**
 * Request files for wrk: realistic create bodies (small ones of ~1 KB, the same with varied index
 * keys, and ones carrying a real JPEG) and list queries. Values come from a seeded generator, so every run sends the same
 * requests. Devices `cam-1`..`cam-20`, lines A..D, shifts, batches 1..500 and temperatures are
 * drawn independently, so `device_id=cam-7&metadata_filter=line:B` selects about 1 in 80 events.
 */
import fs from 'node:fs';
import path from 'node:path';
import { BATCHES, DEVICES, imageEventBodies as imageBodiesOf, LINES, seeded, smallEvent, smallEventBodies } from '../../dist/src/bench/payloads.js';
import { repoRoot } from './store-process.js';

/** The events' generator and bodies: one definition, shipped with the store for `edge-events bench` (src/bench/payloads.ts). */
export { seeded, smallEvent, smallEventBodies };

/** The image the image-ingest workload carries (test/fixtures, 640x427, 41,501 bytes). */
export const IMAGE_FIXTURE = 'rocket.jpg';

function writeLines(file, lines) {
  fs.writeFileSync(file, lines.join('\n') + '\n');
  return { file, count: lines.length, meanBytes: lines.reduce((n, l) => n + Buffer.byteLength(l), 0) / lines.length };
}

/**
 * Writes `count` distinct small create bodies (no image).
 * @returns {{ file: string, count: number, meanBytes: number }}
 */
export function writeSmallEvents(dir, count = 2000) {
  return writeLines(path.join(dir, 'small-events.txt'), smallEventBodies(count));
}

/** Where requests.lua's post-ids mode puts an id unique to each request. */
export const UNIQUE_ID_SLOT = '{{n}}';
/** Devices of the varied-key workload. */
export const VARIED_DEVICES = 1000;

/**
 * A small event whose index keys vary as a fleet's do: one of VARIED_DEVICES devices, an
 * event_data.external_id unique to each request (a random part per body, then UNIQUE_ID_SLOT),
 * and custom_metadata values drawn from large ranges (an order number, a lot among 10,000, an
 * operator among 200, a temperature), so consecutive events share almost no index key value.
 */
export function variedEvent(random, i) {
  const int = (n) => Math.floor(random() * n);
  const event = smallEvent(random, i);
  event.device_id = `cam-${String(1 + int(VARIED_DEVICES)).padStart(4, '0')}`;
  event.event_data = { result: event.event_data.result, external_id: `unit-${int(2 ** 32).toString(16).padStart(8, '0')}-${UNIQUE_ID_SLOT}` };
  event.custom_metadata = {
    order: `PO-${100000 + int(900000)}`,
    lot: `L${String(int(10000)).padStart(4, '0')}`,
    operator: `op-${1 + int(200)}`,
    temperature_c: Number((18 + random() * 20).toFixed(2)),
  };
  return event;
}

/**
 * Writes `count` varied-key small bodies (variedEvent), each with one UNIQUE_ID_SLOT: replay
 * them with wrk's post-ids mode, which fills the slot anew for every request.
 * @returns {{ file: string, count: number, meanBytes: number, devices: number, mode: 'post-ids' }} meanBytes:
 *   as written, before each request's id (~25 characters) takes the slot's place
 */
export function writeVariedEvents(dir, count = 10_000) {
  const random = seeded(4);
  const lines = Array.from({ length: count }, (_, i) => JSON.stringify(variedEvent(random, i)));
  return { ...writeLines(path.join(dir, 'varied-events.txt'), lines), devices: VARIED_DEVICES, mode: 'post-ids' };
}

/**
 * Writes `count` create bodies, each a small event plus one image: the base64 of IMAGE_FIXTURE.
 * @returns {{ file: string, count: number, meanBytes: number, imageBytes: number }}
 */
export function writeImageEvents(dir, count = 50) {
  const { bodies, imageBytes } = imageEventBodies(count);
  return { ...writeLines(path.join(dir, 'image-events.txt'), bodies), imageBytes };
}

/**
 * `count` create bodies carrying IMAGE_FIXTURE, as JSON: the ones writeImageEvents writes.
 * @returns {{ bodies: string[], imageBytes: number }} imageBytes: the JPEG's size (41,501)
 */
export function imageEventBodies(count = 50) {
  const image = fs.readFileSync(path.join(repoRoot, 'test', 'fixtures', IMAGE_FIXTURE));
  return { bodies: imageBodiesOf(image, count), imageBytes: image.length };
}

/**
 * Writes the list queries, one path per line, rotating over the filter values.
 * @returns {Record<string, { file: string, count: number, example: string }>}
 */
export function writeQueries(dir) {
  const sets = {
    deviceAndLine: Array.from({ length: DEVICES * LINES.length }, (_, i) =>
      `/v2/events?device_id=cam-${1 + (i % DEVICES)}&metadata_filter=line:${LINES[Math.floor(i / DEVICES)]}&limit=100`),
    batchOnly: Array.from({ length: BATCHES }, (_, i) => `/v2/events?metadata_filter=batch:${1 + i}&limit=100`),
    deviceAndRange: Array.from({ length: DEVICES }, (_, i) =>
      `/v2/events?device_id=cam-${1 + i}&metadata_filter=temperature_c:gt:35&limit=100`),
  };
  return Object.fromEntries(Object.entries(sets).map(([name, paths]) => {
    const { file, count } = writeLines(path.join(dir, `query-${name}.txt`), paths);
    return [name, { file, count, example: paths[Math.min(paths.length - 1, 26)] }];
  }));
}

/**
 * Writes Range requests of 1 MiB at seeded offsets into a file of `fileBytes` at `route`, one
 * `path<TAB>bytes=a-b` line each (requests.lua's range mode).
 * @returns {{ file: string, count: number, rangeBytes: number }}
 */
export function writeRangeRequests(dir, name, route, fileBytes, count = 200) {
  const random = seeded(3);
  const rangeBytes = 1024 * 1024;
  const lines = Array.from({ length: count }, () => {
    const first = Math.floor(random() * (fileBytes - rangeBytes));
    return `${route}\tbytes=${first}-${first + rangeBytes - 1}`;
  });
  return { ...writeLines(path.join(dir, `range-${name}.txt`), lines), rangeBytes };
}
