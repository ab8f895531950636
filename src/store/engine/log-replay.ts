/**
 * The replay of the log into batches for the head (docs/STORAGE.md, "Recovery"): segment
 * by segment, in log order, going past damage with whole frames after it and stopping at the torn
 * tail; checkpointed as it goes once the head's size trigger is reached.
 */
import fsp from 'node:fs/promises';
import { checkpointDue } from '../head/checkpoint-pace.js';
import type { HeadBatch, LoggedCreate, LoggedEntries } from '../head/head.js';
import type { LogPosition } from '../index/lmdb-env.js';
import type { StoredEvents } from '../read/stored-events.js';
import { attachedFile, decodeUpdate } from '../index/record-update.js';
import { recordFromFrame, type RecordPresenter } from '../index/record-codec.js';
import type { FileKind } from '../log/log-entries.js';
import type { LogDamage } from '../log/quarantine.js';
import type { EventRecord } from '../record/event-record.js';
import { decodeRecordFrame } from '../log/record-frame.js';
import { decodeRecordCopy } from '../log/record-copy-frame.js';
import { blobCrcMatches, FRAME_HEADER_BYTES, scanSegment, type ScannedFrame } from '../log/segment-frames.js';
import { indexBatches, type IndexOptions } from './checkpoint-writer.js';
import { damageOf } from './log-damage.js';
import type { RebuildPlan } from './rebuild-plan.js';

/**
 * A create the replay could not index and went past: its record frame is whole, but a file it
 * names is in no frame before it (an id that was not a UUID, so its blob frame's 16-byte id
 * does not read back the same). Nothing of it is indexed; the creates after it are.
 */
export interface SkippedCreate {
  segment: number;
  /** Byte offset of the record frame in the segment. */
  offset: number;
  eventId: string;
  /** The file ids no frame holds. */
  missingFiles: string[];
}

/** Creates, or updates, per batch a replay hands to the head. */
const REPLAY_BATCH = 1000;

/**
 * The batches a replay hands to the head, and where it got to in each segment. Past the
 * checkpoint's size trigger (checkpoint-pace.ts `checkpointDue`) the
 * batches held are checkpointed into LMDB before the replay goes on, as the running store's head
 * would be, so a long log replays in bounded memory.
 */
export class ReplayedBatches {
  readonly head: HeadBatch[] = [];
  /**
   * The segments the replayed batches hold frames in or attach files from: the end (bytes) of
   * the last frame replayed, or of the attached file; an upload's segment is sealed.
   */
  readonly segments = new Map<number, { end: number; sealed: boolean }>();
  replayed = 0;
  changesReplayed = 0;
  /** Creates and updates held, and the bytes of their records: what `checkpointDue` weighs. */
  entries = 0;
  bytes = 0;

  constructor(private readonly stored: StoredEvents, private readonly options: IndexOptions) {}

  /**
   * Takes creates and updates logged together in log order, ending at `end`.
   * @throws the lmdb error of a failed checkpoint
   */
  async add(batch: LoggedEntries, end: LogPosition): Promise<void> {
    // Record copies and tombstones alone hold nothing to index, but the segment keeps them.
    const known = this.segments.get(end.segment);
    if (!known || known.end < end.offset) this.segments.set(end.segment, { end: end.offset, sealed: false });
    if (batch.creates.length === 0 && batch.updates.length === 0) return;
    this.head.push({ ...batch, end });
    for (const update of batch.updates) {
      if (update.type === 'attach') this.segments.set(update.segment, { end: attachedFile(update).offset + update.file.size_bytes, sealed: true });
    }
    this.replayed += batch.creates.length;
    this.changesReplayed += batch.updates.length;
    this.entries += batch.creates.length + batch.updates.length;
    for (const { value } of batch.creates) this.bytes += value.length;
    if (checkpointDue(this)) await this.checkpoint();
  }

  /**
   * Commits every batch held (a rebuild's replay, whose record copies come out of created_at
   * order, which the head's order does not allow: docs/STORAGE.md, "A damaged index").
   * @throws the lmdb error of a failed commit
   */
  async finish(): Promise<void> {
    if (this.head.length > 0) await this.checkpoint();
  }

  /** Commits the batches held to LMDB, as a checkpoint of the head does (event-store.ts `commitHead`). */
  private async checkpoint(): Promise<void> {
    await indexBatches(this.stored, this.head.splice(0), this.options);
    this.entries = 0;
    this.bytes = 0;
  }
}

/** What the replay of one segment found besides what it replayed. */
export interface SegmentFindings {
  skipped: SkippedCreate[];
  damaged: LogDamage[];
}

/** A create's record frame read with the blob frames before it in its segment. */
interface ReadCreate {
  record: EventRecord;
  /** The record as the `events` database stores it. */
  value: Buffer;
  /** Each file the record names, with its blob frame when one was found. */
  placed: { fileId: string; contentType: string; frame: ScannedFrame | undefined }[];
  /** The files no blob frame before it holds. */
  missingFiles: string[];
  /** Per placed file, whether its bytes match their CRC (empty when a file is missing). */
  whole: boolean[];
  /** Where the record frame ends (bytes). */
  end: number;
}

/**
 * Reads a create's record frame and checks the blob frames it names among `blobs`, the blob
 * frames read since the create before it.
 * @throws the fs error of a failed read
 */
async function readCreate(handle: fsp.FileHandle, frame: ScannedFrame, blobs: Map<string, ScannedFrame>, present: RecordPresenter): Promise<ReadCreate> {
  const { record: bytes, files } = decodeRecordFrame(frame.data!);
  const { record, value } = recordFromFrame(bytes, present);
  const placed = files.map(({ fileId, contentType }) => ({ fileId, contentType, frame: blobs.get(fileId) }));
  const missingFiles = placed.filter(({ frame: blob }) => !blob).map(({ fileId }) => fileId);
  const whole = missingFiles.length > 0 ? [] : await Promise.all(placed.map(({ frame: blob }) => blobCrcMatches(handle, blob!)));
  return { record, value, placed, missingFiles, whole, end: frame.offset + frame.length };
}

/** The create a head batch holds, of a create read whole (every file found) from its record frame `frame` in `segment`. */
function loggedCreate(segment: number, frame: ScannedFrame, { record, value, placed }: ReadCreate): LoggedCreate {
  return {
    record,
    value,
    files: placed.map(({ fileId, contentType, frame: blob }) => ({
      fileId, contentType, kind: blob!.kind as FileKind,
      at: { segment, offset: blob!.offset, length: blob!.length, crc: blob!.crc },
    })),
    frame: { segment, offset: frame.offset, length: frame.length },
  };
}

/** The create a head batch holds, of a record copy `frame` in `segment` (a rebuild's: its files are where it says). */
function copiedCreate(segment: number, frame: ScannedFrame, present: RecordPresenter): LoggedCreate {
  const copy = decodeRecordCopy(frame.data!);
  const { record, value } = recordFromFrame(copy.record, present);
  return {
    record,
    value,
    files: copy.files.map(({ fileId, contentType, kind, segment: at, offset, length, crc }) => ({ fileId, contentType, kind, at: { segment: at, offset, length, crc } })),
    frame: { segment, offset: frame.offset, length: frame.length },
    copy: true,
  };
}

/**
 * Takes an update, a record copy or a tombstone into `batch`: an update always, but for a
 * rebuild's `plan` only when it follows its event's home; a record copy only when it is a
 * rebuild's home; a tombstone never (it holds nothing to index).
 */
function takeFrame(batch: LoggedEntries, segment: number, frame: ScannedFrame, present: RecordPresenter, plan: RebuildPlan | undefined): void {
  if (frame.kind === 'update' && (!plan || plan.appliesUpdate(frame.id, segment, frame.offset))) batch.updates.push(decodeUpdate(frame.data!));
  else if (frame.kind === 'copy' && plan?.isHome(frame.id, segment, frame.offset)) batch.creates.push(copiedCreate(segment, frame, present));
}

/**
 * Replays the creates and updates logged in segment `segment` from `start` (bytes) into
 * `replay`, in log order, in batches of creates followed by updates to events created before
 * them. Every create after the index's position is replayed, even one the index already holds,
 * and every create and update is counted once (why: docs/STORAGE.md, "Recovery", step 2, "Replay"). Stops
 * at the torn tail, the last append a crash cut. Goes past damage with whole frames after it,
 * losing the creates and updates it holds, and a create one of whose blobs fails its CRC; skips a
 * whole create naming a file no frame holds (SkippedCreate), or counts it lost when damage since
 * the create before it took the file (docs/STORAGE.md, "Damage in the log").
 * Record copies and tombstones are passed over (the index had them before the log position moved
 * past them), except by a rebuild, whose `plan` says which frame of each event is its home and
 * which updates follow it (rebuild-plan.ts): the others are superseded and passed over.
 * @param present the store's presenter: it renders the presented JSON a record frame leaves out
 *   (record-codec.ts `recordFromFrame`)
 * @param plan a rebuild's plan; undefined for a start-up's replay
 * @returns the creates skipped and the damage gone past, in log order
 * @throws the fs error of a failed read, the lmdb error of a failed checkpoint
 */
export async function replaySegment(
  file: string, segment: number, start: number, replay: ReplayedBatches, present: RecordPresenter, plan?: RebuildPlan,
): Promise<SegmentFindings> {
  const handle = await fsp.open(file, 'r');
  const findings: SegmentFindings = { skipped: [], damaged: [] };
  try {
    const blobs = new Map<string, ScannedFrame>();
    /** Damage since the last create: a create after it missing a file lost the file to it. */
    let damageSinceCreate: LogDamage | undefined;
    let batch: LoggedEntries = { creates: [], updates: [] };
    let end = start;
    const flush = async () => {
      if (end === start && batch.creates.length === 0 && batch.updates.length === 0) return;
      await replay.add(batch, { segment, offset: end });
      batch = { creates: [], updates: [] };
    };
    for await (const frame of scanSegment(handle, start, segment)) {
      if (frame.kind === 'damaged') {
        damageSinceCreate = damageOf(segment, frame);
        findings.damaged.push(damageSinceCreate);
        continue;
      }
      if (frame.kind === 'update' || frame.kind === 'copy' || frame.kind === 'tombstone') {
        takeFrame(batch, segment, frame, present, plan);
        end = frame.offset + frame.length;
        if (batch.creates.length >= REPLAY_BATCH || batch.updates.length >= REPLAY_BATCH) await flush();
        continue;
      }
      if (frame.kind !== 'record') {
        blobs.set(frame.id, frame);
        continue;
      }
      const create = await readCreate(handle, frame, blobs, present);
      const { record, placed, missingFiles, whole, end: recordEnd } = create;
      blobs.clear();
      if (missingFiles.length > 0 && damageSinceCreate) {
        damageSinceCreate.end = recordEnd; // the create's frames after the damage go with it
        damageSinceCreate.lostEvents.push(record.id);
      } else if (missingFiles.length > 0) {
        findings.skipped.push({ segment, offset: frame.offset, eventId: record.id, missingFiles });
      } else if (whole.includes(false)) {
        const first = Math.min(...placed.map(({ frame: blob }) => blob!.offset - FRAME_HEADER_BYTES));
        findings.damaged.push({ segment, offset: first, end: recordEnd, lostEvents: [record.id], lostChanges: [] });
      }
      damageSinceCreate = undefined;
      if (findings.damaged.at(-1)?.end === recordEnd) continue; // lost: `end` stays before it
      if (missingFiles.length === 0 && (!plan || plan.isHome(frame.id, segment, frame.offset))) batch.creates.push(loggedCreate(segment, frame, create));
      end = recordEnd;
      if (batch.creates.length >= REPLAY_BATCH) await flush();
    }
    await flush();
    // Damage with nothing whole replayed after it is the torn tail of the last append: cut, not quarantined.
    while ((findings.damaged.at(-1)?.offset ?? -1) >= end) findings.damaged.pop();
  } finally {
    await handle.close();
  }
  return findings;
}
