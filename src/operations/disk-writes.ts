/**
 * What the store writes to its disk against what it accepts (docs/OPERATIONS.md, "Disk
 * writes"): edge boxes run on eMMC and SD cards with a fixed write endurance, so bytes written per
 * event and the write amplification are figures an operator watches beside capacity.
 *
 * One-time writes are counted apart: what was written before the measurement began, which is at
 * the first event accepted once start-up's own work is done (the start-up cleanup and its
 * checkpoint, the disk reserve), that event's append and the zeros written ahead of the log
 * included. The figures per event, per day and over accepted are the measurement's, and none is
 * given ("measuring") until it holds MEASURE_MIN_SECONDS and MEASURE_MIN_EVENTS: a fresh store's
 * start-up writes divided among a handful of events and scaled to a day read as 150 GiB a day.
 *
 * Written: the process's `write_bytes` from `/proc/self/io` (proc(5): bytes this process, all its
 * threads, caused to be sent to the storage layer: the log's appends, LMDB's commits and flushes,
 * staging files), since the store started. Accepted: the request bodies of the creates and
 * attachments the store answered 2xx (JSON with base64 images as sent, uploads as streamed).
 * Beside them, the sectors written by the block device under the data directory
 * (block-device.ts): every writer on it, but not the whole page-cache folios `write_bytes` can
 * count for a small write.
 */
import fs from 'node:fs';
import { blockDeviceOf, deviceWrittenBytes } from './block-device.js';

/** Where `written` comes from, as /stats names it. */
export const WRITES_SOURCE = '/proc/self/io write_bytes';
const DAY_SECONDS = 86_400;
/** Seconds the measurement must hold before /stats gives a figure per event, per day or over accepted (600 s). */
export const MEASURE_MIN_SECONDS = 600;
/** Events it must hold likewise (1,000): bytes a day are scaled from the time, bytes per event divided among the events. */
export const MEASURE_MIN_EVENTS = 1_000;

/**
 * The process's `write_bytes` (bytes), or undefined where `/proc/self/io` is absent (not Linux)
 * or unreadable.
 */
export function processWriteBytes(): number | undefined {
  try {
    const match = /^write_bytes:\s*(\d+)$/m.exec(fs.readFileSync('/proc/self/io', 'utf8'));
    return match ? Number(match[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** Where `device.bytes_written` comes from, as /stats names it. */
export const DEVICE_WRITES_SOURCE = '/proc/diskstats sectors written';

/** The figures of one count of bytes written (the process's, or the device's) over the measurement. */
export interface WriteFigures {
  /** Bytes written before the measurement began (all so far while it has not): start-up's own, the first event's append. */
  one_time_bytes_written: number;
  /** Written over accepted, both since the measurement began; null while measuring. */
  write_amplification: number | null;
  /** Bytes written per event accepted since the measurement began; null while measuring. */
  bytes_written_per_event: number | null;
  /** Bytes written since the measurement began, scaled to a day; null while measuring. */
  bytes_written_per_day: number | null;
}

/** What the data directory's block device wrote since the store started (/stats `disk_writes.device`). */
export interface DeviceWriteReport extends WriteFigures {
  source: string;
  /** The device as /proc/diskstats names it (`mmcblk0p2`). */
  name: string;
  /** Bytes written by every writer on the device. */
  bytes_written: number;
}

/** The figures /stats reports under `disk_writes` (docs/API.md, "Statistics"). */
export interface DiskWriteReport extends Omit<WriteFigures, 'one_time_bytes_written'> {
  /** null where the kernel does not report it (no /proc/self/io). */
  source: string | null;
  since: string;
  /** Bytes the process wrote since the store started; null where the kernel does not say. */
  bytes_written: number | null;
  /** As `WriteFigures`; null where `bytes_written` is. */
  one_time_bytes_written: number | null;
  bytes_accepted: number;
  events_accepted: number;
  /** When the measurement began (ISO 8601); null before it has. */
  measured_since: string | null;
  /** Events accepted since it began. */
  measured_events: number;
  /** True until the measurement holds MEASURE_MIN_SECONDS and MEASURE_MIN_EVENTS: the figures are null meanwhile. */
  measuring: boolean;
  /** null where the data directory has no block device of its own (tmpfs, overlay) or no /proc/diskstats. */
  device: DeviceWriteReport | null;
}

/** Where the measurement began: when, the bytes each count had written by then (since the start), what was accepted by then. */
interface MeasureStart {
  at: number;
  written: number | undefined;
  deviceWritten: number | undefined;
  acceptedBytes: number;
  acceptedEvents: number;
}

export class DiskWrites {
  private readonly startedAt = Date.now();
  private readonly baseline = processWriteBytes();
  private readonly device: { name: string; baseline: number } | undefined;
  private acceptedBytes = 0;
  private acceptedEvents = 0;
  private measureStart: MeasureStart | undefined;

  /**
   * @param dataDir the store's DATA_DIR: the block device under it is reported beside the
   *   process (none when omitted, or when it has no block device of its own)
   * @param startUpDone whether start-up's own writes are done (the lifecycle worker's start-up
   *   cleanup ran, the disk reserve taken): the measurement begins at the first event accepted
   *   after (default: at the first event)
   */
  constructor(dataDir?: string, private readonly startUpDone: () => boolean = () => true) {
    const device = dataDir === undefined ? null : blockDeviceOf(dataDir);
    const baseline = device ? deviceWrittenBytes(device.name) : undefined;
    if (device && baseline !== undefined) this.device = { name: device.name, baseline };
  }

  /**
   * Counts an accepted request body; the first create accepted once start-up is done begins the
   * measurement, its own writes counted as one-time.
   * @param bytes its length (bytes)
   * @param events events it created (1 for a create, 0 for an attachment)
   */
  accept(bytes: number, events: number): void {
    this.acceptedBytes += bytes;
    this.acceptedEvents += events;
    if (this.measureStart || events === 0 || !this.startUpDone()) return;
    this.measureStart = { at: Date.now(), written: this.written(), deviceWritten: this.deviceWritten()?.bytes, acceptedBytes: this.acceptedBytes, acceptedEvents: this.acceptedEvents };
  }

  /** Bytes written since the start (bytes), or undefined where the kernel does not say. */
  written(): number | undefined {
    const now = processWriteBytes();
    return now === undefined || this.baseline === undefined ? undefined : now - this.baseline;
  }

  /**
   * Bytes the data directory's block device wrote since the start, by every writer on it, with
   * its name; undefined where there is none to read.
   */
  deviceWritten(): { name: string; bytes: number } | undefined {
    if (!this.device) return undefined;
    const now = deviceWrittenBytes(this.device.name);
    return now === undefined ? undefined : { name: this.device.name, bytes: now - this.device.baseline };
  }

  /** Whether the measurement holds too little to divide at `now` (ms since the epoch). */
  measuring(now = Date.now()): boolean {
    const start = this.measureStart;
    return !start || (now - start.at) / 1000 < MEASURE_MIN_SECONDS || this.acceptedEvents - start.acceptedEvents < MEASURE_MIN_EVENTS;
  }

  /**
   * What `bytes` written since the start by one count (`which`: the process's or the device's)
   * come to (docs/API.md, "Statistics", `disk_writes`): the one-time bytes before the measurement
   * began, and over it, once it holds enough, written over accepted, per event (bytes) and scaled
   * to a day (bytes).
   * @param now ms since the epoch
   */
  figures(bytes: number, which: 'process' | 'device' = 'process', now = Date.now()): WriteFigures {
    const start = this.measureStart;
    const before = which === 'process' ? start?.written : start?.deviceWritten;
    if (!start || before === undefined || this.measuring(now)) {
      return { one_time_bytes_written: before ?? bytes, write_amplification: null, bytes_written_per_event: null, bytes_written_per_day: null };
    }
    const measured = Math.max(0, bytes - before);
    const accepted = this.acceptedBytes - start.acceptedBytes;
    return {
      one_time_bytes_written: before,
      write_amplification: accepted === 0 ? null : Number((measured / accepted).toFixed(2)),
      bytes_written_per_event: Math.round(measured / (this.acceptedEvents - start.acceptedEvents)),
      bytes_written_per_day: Math.round((measured * DAY_SECONDS) / ((now - start.at) / 1000)),
    };
  }

  /** The report at `now` (ms since the epoch). */
  report(now = Date.now()): DiskWriteReport {
    const written = this.written();
    const device = this.deviceWritten();
    const start = this.measureStart;
    const none = { one_time_bytes_written: null, write_amplification: null, bytes_written_per_event: null, bytes_written_per_day: null };
    return {
      source: written === undefined ? null : WRITES_SOURCE,
      since: new Date(this.startedAt).toISOString(),
      bytes_written: written ?? null,
      bytes_accepted: this.acceptedBytes,
      events_accepted: this.acceptedEvents,
      measured_since: start ? new Date(start.at).toISOString() : null,
      measured_events: start ? this.acceptedEvents - start.acceptedEvents : 0,
      measuring: this.measuring(now),
      ...(written === undefined ? none : this.figures(written, 'process', now)),
      device: device ? { source: DEVICE_WRITES_SOURCE, name: device.name, bytes_written: device.bytes, ...this.figures(device.bytes, 'device', now) } : null,
    };
  }
}
