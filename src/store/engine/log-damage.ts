/**
 * What recovery finds damaged in the log (docs/STORAGE.md, "Damage in the log"): a cut tail that
 * holds a frame written whole once, bytes the index says were written and the file lacks, and the
 * damage a scan reported, each as the LogDamage quarantine.ts copies aside.
 */
import fsp from 'node:fs/promises';
import type { StoreDatabases } from '../index/lmdb-env.js';
import type { LogDamage } from '../log/quarantine.js';
import { FRAME_HEADER_BYTES, readFrameHeader, scanFrames, segmentTag, type DamagedBytes } from '../log/segment-frames.js';

/**
 * The damage a segment's cut tail holds, when the tail starts with a header of a frame of the
 * segment itself, followed by some of its data, in a segment the log had moved on from: that
 * frame was written whole once (only the active segment's last append can be torn), so it is
 * damage, not a torn append; its data may end with the file's end, the file cut short after it.
 * A tail of zeros written ahead, of a recycled file's former frames (another segment's tag), or
 * of a write that failed after its first header (zeros follow it) before the log gave the
 * segment up (blob-log.ts `abandon`) is none.
 * @param committed where the tail starts (bytes)
 * @throws the fs error of a failed read
 */
export async function damagedTail(file: string, segment: number, committed: number): Promise<LogDamage | undefined> {
  const handle = await fsp.open(file, 'r');
  try {
    const header = await readFrameHeader(handle, committed);
    if (!header || header.tag !== segmentTag(segment)) return undefined;
    const dataStart = committed + FRAME_HEADER_BYTES;
    // A header written alone: zeros follow it, or the file's end. A frame whose data the file's end
    // cuts off after some of it was cut off with the file, whole when its segment rolled.
    if (await allZero(handle, dataStart, header.length)) return undefined;
    return {
      segment,
      offset: committed,
      end: dataStart + header.length,
      lostEvents: header.kind === 'record' ? [header.id] : [],
      lostChanges: header.kind === 'update' ? [header.id] : [],
    };
  } finally {
    await handle.close();
  }
}

/**
 * Bytes `from`..`end` of a segment the index says were written, gone from its file (the file
 * missing, or cut short): damage with nothing to copy, naming the files the index places there
 * (docs/STORAGE.md, "Damage in the log"). Creates only the log held there cannot be named.
 */
export function missingBytes(dbs: StoreDatabases, segment: number, from: number, end: number): LogDamage {
  const lostFiles: string[] = [];
  for (const { key, value } of dbs.files.getRange()) {
    if (value.segment === segment && value.offset + value.length > from) lostFiles.push(key);
  }
  return { segment, offset: from, end, lostEvents: [], lostChanges: [], missing: true, lostFiles };
}

/**
 * Where the whole frames of segment `segment`'s file that follow `from` (bytes) end: `from` when
 * none follows.
 * @throws the fs error of a failed read
 */
export async function wholeFramesEnd(file: string, segment: number, from: number): Promise<number> {
  const handle = await fsp.open(file, 'r');
  try {
    let end = from;
    for await (const frame of scanFrames(handle, from, segment)) end = frame.offset + frame.length;
    return end;
  } finally {
    await handle.close();
  }
}

/** Whether the `length` bytes at `position` of an open file are all zeros; bytes past the file's end count as zeros. */
async function allZero(handle: fsp.FileHandle, position: number, length: number): Promise<boolean> {
  const chunk = Buffer.allocUnsafe(Math.min(length, 1024 * 1024));
  for (let at = position; at < position + length;) {
    const { bytesRead } = await handle.read(chunk, 0, Math.min(chunk.length, position + length - at), at);
    if (bytesRead === 0) return true;
    if (chunk.subarray(0, bytesRead).some((byte) => byte !== 0)) return false;
    at += bytesRead;
  }
  return true;
}

/** The damage `scanSegment` reported, with the create or update its first frame held when its header still names it. */
export function damageOf(segment: number, { offset, end, frame }: DamagedBytes): LogDamage {
  return {
    segment, offset, end,
    lostEvents: frame?.kind === 'record' ? [frame.id] : [],
    lostChanges: frame?.kind === 'update' ? [frame.id] : [],
  };
}
