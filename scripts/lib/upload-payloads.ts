/**
 * The bytes the harnesses upload to drafts, by name: the real videos of test/fixtures, one of
 * them grown to 4 MiB (still an MP4 to the sniffer, and long enough to be cut off by a kill
 * mid-stream), and local-only files.
 */
import { fixture, VIDEO_FIXTURES } from './fixtures.js';

const MiB = 1024 * 1024;

/** A repeatable filler (not zeros, so a hole or a shifted slice shows up). */
function pattern(length: number): Buffer {
  const bytes = Buffer.alloc(length);
  for (let i = 0; i < length; i++) bytes[i] = (i * 31 + (i >>> 11)) & 0xff;
  return bytes;
}

const payloads = new Map<string, () => Buffer>([
  ...VIDEO_FIXTURES.map((name) => [name, () => fixture(name)] as [string, () => Buffer]),
  ['cat-zoom-4mib.mp4', () => Buffer.concat([fixture('cat-zoom.mp4'), pattern(4 * MiB)])],
  ['counts.csv', () => Buffer.from(Array.from({ length: 2000 }, (_, i) => `${i},${(i * 7) % 13},line-${i % 3}`).join('\n'))],
  ['rocket.jpg', () => fixture('rocket.jpg')],
]);
const cache = new Map<string, Buffer>();

/** Names of the video payloads. */
export const VIDEO_PAYLOADS = [...VIDEO_FIXTURES, 'cat-zoom-4mib.mp4'];
/** Names of the local-only payloads. */
export const LOCAL_ONLY_PAYLOADS = ['counts.csv', 'rocket.jpg'];

/**
 * The bytes of payload `name` (built once, then cached; do not modify them).
 * @throws Error for an unknown name
 */
export function payload(name: string): Buffer {
  let bytes = cache.get(name);
  if (!bytes) {
    const build = payloads.get(name);
    if (!build) throw new Error(`unknown payload ${name}`);
    bytes = build();
    cache.set(name, bytes);
  }
  return bytes;
}
