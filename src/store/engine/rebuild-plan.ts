/**
 * What a rebuild of the index replays (docs/STORAGE.md, "A damaged index"). The log holds every
 * live event's whole record (docs/STORAGE.md, "Two copies of every record"), but not only that:
 * a record copy supersedes its event's earlier frames, and a tombstone every frame of its event
 * before it. So before the replay, one pass over the frames' headers finds each event's **home**
 * (its last record frame or record copy) and its last tombstone; the replay then takes only a home
 * no tombstone follows, and the update frames after it.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { decodeTombstone } from '../log/record-copy-frame.js';
import { segmentFileName } from '../log/segment-files.js';
import { scanSegment } from '../log/segment-frames.js';
import type { FileKind } from '../log/log-entries.js';

/** A frame's place as one number: the segment in the high bits, the offset (bytes, < 2^32) in the low. */
function placeOf(segment: number, offset: number): number {
  return segment * 2 ** 32 + offset;
}

/** A tombstone the rebuilt index must keep: its event's home is still in the log. */
export interface KeptTombstone {
  /** Where the tombstone is. */
  segment: number;
  /** The deleted event's id, created_at (µs) and the segment of its home frame. */
  id: string;
  createdAt: number;
  home: number;
}

/** Each event's home and last tombstone in a log, by event id. */
export class RebuildPlan {
  /** Events' homes: the place of the data of their last record frame or record copy. */
  private readonly homes = new Map<string, number>();
  /** Events' last tombstones: place and the created_at it names. */
  private readonly deaths = new Map<string, { place: number; createdAt: number }>();
  /** Where each blob frame is, by file id: kept only when the scan is asked to (a salvage's records name their files so). */
  readonly blobs = new Map<string, { kind: FileKind; segment: number; offset: number; length: number; crc: number }>();

  /**
   * Reads the frames of every segment in `segments` (ascending) of `blobsDir`, going past damage as
   * a replay does. Memory: about 100 bytes per event in the log, and as much per file `withBlobs`.
   * @throws the fs error of a failed read
   */
  static async scan(blobsDir: string, segments: readonly number[], { withBlobs = false } = {}): Promise<RebuildPlan> {
    const plan = new RebuildPlan();
    for (const segment of segments) {
      const handle = await fsp.open(path.join(blobsDir, segmentFileName(segment)), 'r');
      try {
        for await (const frame of scanSegment(handle, 0, segment)) {
          if (frame.kind === 'record' || frame.kind === 'copy') plan.homes.set(frame.id, placeOf(segment, frame.offset));
          else if (frame.kind === 'tombstone') plan.deaths.set(frame.id, { place: placeOf(segment, frame.offset), createdAt: decodeTombstone(frame.data!) });
          else if (withBlobs && frame.kind !== 'update' && frame.kind !== 'damaged') plan.blobs.set(frame.id, { kind: frame.kind, segment, offset: frame.offset, length: frame.length, crc: frame.crc });
        }
      } finally {
        await handle.close();
      }
    }
    return plan;
  }

  /** Whether the record frame or copy of event `id` at `offset` (its data, bytes) in `segment` is the event's home, and no tombstone follows it. */
  isHome(id: string, segment: number, offset: number): boolean {
    const place = placeOf(segment, offset);
    return this.homes.get(id) === place && !((this.deaths.get(id)?.place ?? -1) > place);
  }

  /** Whether the update frame of event `id` at `offset` in `segment` follows its home, with no tombstone after the home. */
  appliesUpdate(id: string, segment: number, offset: number): boolean {
    const home = this.homes.get(id);
    return home !== undefined && placeOf(segment, offset) > home && !((this.deaths.get(id)?.place ?? -1) > home);
  }

  /** Whether the log holds a whole record frame or record copy of event `id`, or its tombstone. */
  knows(id: string): boolean {
    return this.homes.has(id) || this.deaths.has(id);
  }

  /** The tombstones whose event's home is still in the log, before them: what the rebuilt index keeps. */
  keptTombstones(): KeptTombstone[] {
    const kept: KeptTombstone[] = [];
    for (const [id, { place: at, createdAt }] of this.deaths) {
      const home = this.homes.get(id);
      if (home !== undefined && home < at && Math.floor(home / 2 ** 32) !== Math.floor(at / 2 ** 32)) kept.push({ segment: Math.floor(at / 2 ** 32), id, createdAt, home: Math.floor(home / 2 ** 32) });
    }
    return kept;
  }
}
