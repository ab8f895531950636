/**
 * Where every frame of a data folder's segment log lies (docs/STORAGE.md, "The segment log"), for
 * the disk-fault harness: which events a damaged byte range of a segment belongs to. Read from a
 * log no store is running on, with the store's own scan (src/store/log/segment-frames.ts).
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { segmentNumberOf } from '../../src/store/log/segment-files.js';
import { FRAME_HEADER_BYTES, isDataFrame, scanFrames, type FrameKind } from '../../src/store/log/segment-frames.js';

/** A segment file of the log: its number, its path, its size in bytes. */
export interface SegmentFile {
  segment: number;
  file: string;
  bytes: number;
}

/** One whole frame: `start` is its header's first byte, `end` the first byte after its data (bytes from the segment's start). */
export interface LogFrame {
  segment: number;
  start: number;
  end: number;
  kind: FrameKind;
  /** A file id (image, video, local-only frames) or the event id (record, update, record copy and tombstone frames). */
  id: string;
}

/** The segment files (`blobs/seg-NNNNNNNN.blob`) of `dataDir`, ascending. */
export function segmentFiles(dataDir: string): SegmentFile[] {
  const blobs = path.join(dataDir, 'blobs');
  return fs.readdirSync(blobs)
    .map((name) => ({ name, segment: segmentNumberOf(name) }))
    .filter((entry): entry is { name: string; segment: number } => entry.segment !== undefined)
    .sort((a, b) => a.segment - b.segment)
    .map(({ name, segment }) => {
      const file = path.join(blobs, name);
      return { segment, file, bytes: fs.statSync(file).size };
    });
}

/**
 * Every whole frame of every segment of `dataDir`, in log order, up to each segment's first torn
 * frame (the zeros written ahead of the last append end the active segment).
 * @throws the fs error of a failed read
 */
export async function readLogFrames(dataDir: string): Promise<LogFrame[]> {
  const frames: LogFrame[] = [];
  for (const { segment, file } of segmentFiles(dataDir)) {
    const handle = await fsp.open(file, 'r');
    try {
      for await (const frame of scanFrames(handle, 0, segment)) {
        frames.push({ segment, start: frame.offset - FRAME_HEADER_BYTES, end: frame.offset + frame.length, kind: frame.kind, id: frame.id });
      }
    } finally {
      await handle.close();
    }
  }
  return frames;
}

/** The log's frames with the event each belongs to, for finding the events a byte range of a segment held. */
export class FrameMap {
  private readonly bySegment = new Map<number, { frame: LogFrame; event: string | undefined }[]>();
  private readonly records = new Map<string, LogFrame>();

  /**
   * @param frames the log's frames (`readLogFrames`)
   * @param eventOfFile the event an image's file id belongs to (record and update frames name their event themselves)
   */
  constructor(readonly frames: LogFrame[], eventOfFile: (fileId: string) => string | undefined) {
    for (const frame of frames) {
      const event = isDataFrame(frame.kind) ? frame.id : eventOfFile(frame.id);
      // An event's home: its create's record frame, or the latest record copy of it (docs/STORAGE.md, "Two copies of every record").
      if (frame.kind === 'record' || frame.kind === 'copy') this.records.set(frame.id, frame);
      const list = this.bySegment.get(frame.segment) ?? [];
      list.push({ frame, event });
      this.bySegment.set(frame.segment, list);
    }
  }

  /** The frames of `segment`, in order. */
  framesOf(segment: number): LogFrame[] {
    return (this.bySegment.get(segment) ?? []).map((entry) => entry.frame);
  }

  /** The events with a frame (header or data) overlapping bytes `from` to `to` (exclusive) of `segment`. */
  eventsIn(segment: number, from: number, to: number): Set<string> {
    const events = new Set<string>();
    for (const { frame, event } of this.bySegment.get(segment) ?? []) {
      if (event !== undefined && frame.start < to && frame.end > from) events.add(event);
    }
    return events;
  }

  /** Event `eventId`'s home frame in the log: its record frame, or its latest record copy. */
  homeOf(eventId: string): LogFrame | undefined {
    return this.records.get(eventId);
  }

  /**
   * Whether the header of event `eventId`'s home frame (FRAME_HEADER_BYTES bytes, which name
   * the event) overlaps bytes `from` to `to` (exclusive) of `segment`.
   */
  headerIn(eventId: string, segment: number, from: number, to: number): boolean {
    const record = this.records.get(eventId);
    return record !== undefined && record.segment === segment && record.start < to && record.start + FRAME_HEADER_BYTES > from;
  }

  /** Whether a whole frame of `segment` begins at or after byte `at`: damage before it is no torn tail (docs/STORAGE.md, "Damage in the log"). */
  frameAfter(segment: number, at: number): boolean {
    return (this.bySegment.get(segment) ?? []).some(({ frame }) => frame.start >= at);
  }
}
