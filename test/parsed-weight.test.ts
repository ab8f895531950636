/**
 * What parsing a chunk of a create's JSON adds to the body budget (src/http/body-budget.ts
 * `parsedExtraBytes`; docs/OPERATIONS.md, "Memory"): PARSED_WEIGHT per `[` or `{` and per `,`,
 * whether the chunk is counted by memchr jumps (sparse: an image's base64) or by one pass (dense:
 * a polygon's points, or a chunk of a few KB). Every weight is checked against a count made here.
 */
import t from 'tap';
import { PARSED_WEIGHT, parsedExtraBytes } from '../src/http/body-budget.js';
import { fixture } from './support/events.js';

/** The weight `chunk` must have: its `,`, `[` and `{` counted byte by byte. */
function expectedWeight(chunk: Buffer): number {
  let weight = 0;
  for (const byte of chunk) {
    if (byte === 0x2c) weight += PARSED_WEIGHT.value;
    else if (byte === 0x5b || byte === 0x7b) weight += PARSED_WEIGHT.container;
  }
  return weight;
}

const detection = (i: number) => ({ class: `part-${i % 7}`, x: i, y: 2 * i, width: 40, height: 30, confidence: 0.9 });

t.test('every kind of chunk weighs its brackets, braces and commas', async (t) => {
  const base64Image = fixture('rocket.jpg').toString('base64');
  const chunks: [string, unknown][] = [
    ['an image event (sparse: jumps)', { deviceId: 'cam-1', images: [{ base64Image, objectDetections: [detection(1)] }] }],
    ['40 detections before the image', { images: [{ objectDetections: Array.from({ length: 40 }, (_, i) => detection(i)), base64Image }] }],
    ['300 detections after the image (dense past the base64)', { images: [{ base64Image, objectDetections: Array.from({ length: 300 }, (_, i) => detection(i)) }] }],
    ['a polygon of 50,000 points (dense: one pass)', { points: Array.from({ length: 50_000 }, (_, i) => [i % 640, i % 480]) }],
    ['a small event (under 4 KiB: one pass)', { deviceId: 'cam-1', images: [{ objectDetections: [detection(1), detection(2)] }] }],
    ['a string of commas', { note: ','.repeat(20_000) }],
    ['base64 alone', base64Image],
  ];
  for (const [name, body] of chunks) {
    const chunk = Buffer.from(JSON.stringify(body));
    t.equal(parsedExtraBytes(chunk), expectedWeight(chunk), name);
  }
  t.equal(parsedExtraBytes(Buffer.alloc(0)), 0, 'an empty chunk weighs nothing');
});
