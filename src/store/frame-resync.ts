/**
 * Looking past a bad frame in a segment (docs/STORAGE.md, "Checking the log"): `scanFrames`
 * (segment-frames.ts) stops at the first frame that does not check, which is right for the torn
 * tail of the last append. Bytes damaged in the middle of a segment are followed by whole
 * frames, though, and a check of the data folder (store-check.ts) reports the damaged range and
 * goes on. `findNextFrame` is that search, for any reader of the log; `walkSegment` a walk of a
 * whole segment with it.
 *
 * A frame found past damage must prove itself more than a frame met in order, since the search
 * tries every offset: its header checks as `scanFrames` checks one (magic `EEB1`, a known kind,
 * a length within the file, a record or change frame's data matching its CRC32C), its tag is
 * the segment's own (or 0, unless the segment's first frame carries its own tag: untagged frames
 * belong to a segment begun before tags, or an upload's; docs/STORAGE.md, "Recycled segments"),
 * and a blob frame's data matches its CRC too.
 * Frames tagged for another segment are a recycled file's former life and never match.
 */
import fsp from 'node:fs/promises';
import { blobCrcMatches, firstFrameTag, FRAME_HEADER_BYTES, scanFrames, segmentTag, type ScannedFrame } from './segment-frames.js';

/** A frame's first bytes: the magic "EEB1" (docs/STORAGE.md, "The segment log"). */
const MAGIC = Buffer.from('EEB1', 'latin1');
/** Bytes read at a time by the search. */
const SEARCH_WINDOW_BYTES = 1024 * 1024;

/** Reads up to `target.length` bytes at `position`; fewer at the end of the file. */
async function readAt(handle: fsp.FileHandle, target: Buffer, position: number): Promise<number> {
  let done = 0;
  while (done < target.length) {
    const { bytesRead } = await handle.read(target, done, target.length - done, position + done);
    if (bytesRead === 0) break;
    done += bytesRead;
  }
  return done;
}

/**
 * Whether a whole frame of `segment` starts at `at` (see the module's comment): its header and,
 * for a record or change frame, its data check as `scanFrames` checks them; its tag is `ownTag`,
 * or 0 when `untaggedAllowed`; a blob frame's data matches its CRC.
 * @returns the frame, or undefined
 */
async function wholeFrameAt(handle: fsp.FileHandle, at: number, segment: number, untaggedAllowed: boolean): Promise<ScannedFrame | undefined> {
  let frame: ScannedFrame | undefined;
  for await (const first of scanFrames(handle, at, segment)) {
    frame = first;
    break;
  }
  if (!frame || frame.offset !== at + FRAME_HEADER_BYTES) return undefined;
  const header = Buffer.alloc(FRAME_HEADER_BYTES);
  await readAt(handle, header, at);
  const tag = header.readUIntBE(5, 3);
  if (tag !== segmentTag(segment) && !(tag === 0 && untaggedAllowed)) return undefined;
  if (frame.data === undefined && !(await blobCrcMatches(handle, frame))) return undefined;
  return frame;
}

/**
 * Searches segment `segment`'s open file, from byte `from` on, for the next whole frame (see the
 * module's comment: magic "EEB1", a known kind, the segment's own tag, or 0 unless the segment's
 * first frame carries its own tag, a length within the file, data matching its CRC32C), reading
 * 1 MiB at a time. What lies between `from` and that frame is no frame of the log.
 * @param handle the segment file, open for reading
 * @param from the byte offset to search from (inclusive)
 * @param segment the segment's number (its tag is its low 24 bits, segment-frames.ts `segmentTag`)
 * @returns the byte offset of the frame's header, or undefined when no whole frame starts at or
 *   after `from`: the rest of the file is a torn tail (zeros written ahead, an append cut short,
 *   a recycled file's former frames)
 * @throws the fs error of a failed read
 */
export async function findNextFrame(handle: fsp.FileHandle, from: number, segment: number): Promise<number | undefined> {
  const size = (await handle.stat()).size;
  const untaggedAllowed = (await firstFrameTag(handle)) !== segmentTag(segment);
  const window = Buffer.allocUnsafe(SEARCH_WINDOW_BYTES);
  // Windows overlap by the magic's length less one, so a magic across two windows is found once.
  for (let base = from; base + FRAME_HEADER_BYTES <= size; base += SEARCH_WINDOW_BYTES - (MAGIC.length - 1)) {
    const read = await readAt(handle, window, base);
    const bytes = window.subarray(0, read);
    for (let i = bytes.indexOf(MAGIC); i >= 0; i = bytes.indexOf(MAGIC, i + 1)) {
      if (await wholeFrameAt(handle, base + i, segment, untaggedAllowed)) return base + i;
    }
    if (read < window.length) break;
  }
  return undefined;
}

/** What `walkSegment` meets, in file order. Offsets in bytes from the start of the segment file. */
export type SegmentPiece =
  /** A frame whose header checks (a record or change frame's data too; a blob's is not read). */
  | { type: 'frame'; frame: ScannedFrame }
  /** Bytes that are no whole frame, with a whole frame after them, at `end`. */
  | { type: 'damaged'; offset: number; end: number }
  /** Bytes that are no whole frame, up to the end of the file (`end`), with no whole frame after them. */
  | { type: 'tail'; offset: number; end: number };

/**
 * Walks segment `segment`'s open file from `start` (bytes): the frames `scanFrames` yields; where
 * it stops before the end of the file, the bytes up to the next frame `findNextFrame` finds, as
 * `damaged`, and on from there; or, when none follows, the rest as the `tail`. A blob frame's
 * data is not checked here (`blobCrcMatches` does, segment-frames.ts).
 * @throws the fs error of a failed read
 */
export async function* walkSegment(handle: fsp.FileHandle, segment: number, start = 0): AsyncGenerator<SegmentPiece, void, void> {
  const size = (await handle.stat()).size;
  for (let at = start; at < size;) {
    let next = at;
    for await (const frame of scanFrames(handle, at, segment)) {
      yield { type: 'frame', frame };
      next = frame.offset + frame.length;
    }
    if (next >= size) return;
    const found = await findNextFrame(handle, next + 1, segment);
    if (found === undefined) {
      yield { type: 'tail', offset: next, end: size };
      return;
    }
    yield { type: 'damaged', offset: next, end: found };
    at = found;
  }
}
