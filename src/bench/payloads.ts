/**
 * Create bodies for the bench (`edge-events bench`; native-bench/lib/payloads.js builds its request
 * files on them): a quality-check event of about 850 bytes of JSON, with detections,
 * classifications and 7 custom_metadata keys, and the same event carrying one image. Values come
 * from a seeded generator, so every run sends the same requests. Devices `cam-1`..`cam-20`, lines
 * A..D, shifts, batches 1..500 and temperatures are drawn independently, so
 * `device_id=cam-7&metadata_filter=line:B` selects about 1 in 80 events.
 */

/** Devices the events are spread over. */
export const DEVICES = 20;
/** custom_metadata.line values. */
export const LINES = ['A', 'B', 'C', 'D'];
/** custom_metadata.batch runs from 1 to BATCHES. */
export const BATCHES = 500;

/** A generator of numbers in [0, 1) from `seed` (mulberry32): the same sequence on every run. */
export function seeded(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One detection box of class `cls` inside a 640x480 frame, pixels. */
function box(random: () => number, cls: string): Record<string, number | string> {
  const int = (n: number) => Math.floor(random() * n);
  return {
    class: cls,
    x: 40 + int(560), y: 40 + int(350), width: 20 + int(120), height: 20 + int(120),
    confidence: Number((0.5 + random() * 0.49).toFixed(3)),
  };
}

/**
 * The `i`-th small event (a create body as docs/API.md, "Create an event", gives it), values from
 * `random`: one image entry with detections and classifications, no image bytes.
 * @returns the body as an object; `images[0].base64Image` may be set to carry an image
 */
export function smallEvent(random: () => number, i: number): { images: Record<string, unknown>[]; [key: string]: unknown } {
  const int = (n: number) => Math.floor(random() * n);
  const detection = (cls: string) => box(random, cls);
  const fail = random() < 0.1;
  return {
    solution: 'bench',
    workflow_id: `inspection-${1 + int(3)}`,
    workflow_version: '7',
    inference_timestamp: new Date(Date.UTC(2025, 0, 1, 8) + i * 40).toISOString(),
    device_id: `cam-${1 + int(DEVICES)}`,
    stream_id: 'rtsp-main',
    image_id: `frame-${String(5_000_000 + i * 3).padStart(9, '0')}`,
    event_schema: 'quality_check',
    event_data: { result: fail ? 'fail' : 'pass', externalId: `unit-${100000 + i}` },
    custom_metadata: {
      line: LINES[int(LINES.length)],
      shift: random() < 0.5 ? 'day' : 'night',
      batch: 1 + int(BATCHES),
      temperature_c: Number((18 + random() * 20).toFixed(1)),
      conveyor_speed_mps: Number((0.2 + random() * 1.3).toFixed(2)),
      operator_present: random() < 0.7,
      sku: `SKU-${1000 + int(40)}`,
    },
    images: [{
      label: 'annotated',
      objectDetections: [detection('bottle'), detection('cap'), detection('label'), ...(fail ? [detection('dent')] : [])],
      classifications: [
        { class: fail ? 'defective' : 'ok', confidence: Number((0.8 + random() * 0.19).toFixed(3)) },
        { class: 'fill_level_ok', confidence: Number((0.7 + random() * 0.29).toFixed(3)) },
      ],
      metadata: { overexposed: false },
    }],
  };
}

/**
 * `count` distinct small create bodies (no image), as JSON text.
 * @returns about 850 bytes each
 */
export function smallEventBodies(count = 2000): string[] {
  const random = seeded(1);
  return Array.from({ length: count }, (_, i) => JSON.stringify(smallEvent(random, i)));
}

/**
 * `count` create bodies, each a small event carrying `image` (JPEG or PNG bytes) as its one
 * image's base64, as JSON text.
 * @returns bodies of the image's size x 4/3 plus about 850 bytes
 */
export function imageEventBodies(image: Buffer, count = 50): string[] {
  const random = seeded(2);
  const base64 = image.toString('base64');
  return Array.from({ length: count }, (_, i) => {
    const event = smallEvent(random, i);
    event.images[0].base64Image = base64;
    return JSON.stringify(event);
  });
}
