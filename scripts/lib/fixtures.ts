/** The real media in test/fixtures (JPEGs, MP4/MOV/MKV), read once, for the harness scripts. */
import fs from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../../src/paths.js';

const fixturesDir = path.join(packageRoot, 'test', 'fixtures');
const cache = new Map<string, Buffer>();
const base64Cache = new Map<string, string>();

/** The JPEGs, smallest first. */
export const IMAGE_FIXTURES = ['cat.jpg', 'camera.jpg', 'rocket.jpg', 'retina.jpg'] as const;
/** The videos (MP4, QuickTime, Matroska). */
export const VIDEO_FIXTURES = ['cat-zoom.mp4', 'testsrc.mov', 'testsrc.mkv'] as const;

/** The bytes of fixture `name` (cached; do not modify them). */
export function fixture(name: string): Buffer {
  let bytes = cache.get(name);
  if (!bytes) {
    bytes = fs.readFileSync(path.join(fixturesDir, name));
    cache.set(name, bytes);
  }
  return bytes;
}

/** The base64 text of fixture `name` (cached). */
export function fixtureBase64(name: string): string {
  let text = base64Cache.get(name);
  if (!text) {
    text = fixture(name).toString('base64');
    base64Cache.set(name, text);
  }
  return text;
}
