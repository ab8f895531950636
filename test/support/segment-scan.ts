/** Reads a segment file's frames with the store's own scan (src/store/log/segment-frames.ts `scanFrames`). */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { scanFrames, type ScannedFrame } from '../../src/store/log/segment-frames.js';
import { segmentNumberOf } from '../../src/store/log/segment-files.js';

/**
 * Every frame `scanFrames` finds in `file` from byte `start`, until the first bad or torn one.
 * The segment is the one the file's name gives; 0, for another name, takes untagged frames alone.
 */
export async function scan(file: string, start = 0): Promise<ScannedFrame[]> {
  const handle = await fsp.open(file, 'r');
  try {
    const frames: ScannedFrame[] = [];
    for await (const frame of scanFrames(handle, start, segmentNumberOf(path.basename(file)) ?? 0)) frames.push(frame);
    return frames;
  } finally {
    await handle.close();
  }
}
