/**
 * What the store writes to its disk against what it accepts (docs/OPERATIONS.md, "Disk
 * writes"): edge boxes run on eMMC and SD cards with a fixed write endurance, so bytes written per
 * event and the write amplification are figures an operator watches beside capacity.
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
/**
 * Seconds the store must have run before /stats scales its bytes written to a day (600 s). The
 * first seconds hold start-up's own writes (the replay, the start-up cleanup's checkpoint) and,
 * on the device, whatever else wrote then: scaled to a day they read as terabytes.
 */
export const PER_DAY_AFTER_SECONDS = 600;

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

/** What the data directory's block device wrote since the store started (/stats `disk_writes.device`). */
export interface DeviceWriteReport {
  source: string;
  /** The device as /proc/diskstats names it (`mmcblk0p2`). */
  name: string;
  /** Bytes written by every writer on the device. */
  bytes_written: number;
  /** bytes_written / bytes_accepted; null before anything was accepted. */
  write_amplification: number | null;
  bytes_written_per_event: number | null;
  /** As the process's: null in the first PER_DAY_AFTER_SECONDS. */
  bytes_written_per_day: number | null;
}

/** The figures /stats reports under `disk_writes` (docs/API.md, "Statistics"). */
export interface DiskWriteReport {
  /** null where the kernel does not report it (no /proc/self/io). */
  source: string | null;
  since: string;
  bytes_written: number | null;
  bytes_accepted: number;
  events_accepted: number;
  /** bytes_written / bytes_accepted; null before anything was accepted. */
  write_amplification: number | null;
  bytes_written_per_event: number | null;
  /**
   * bytes_written over the time since the start, scaled to a day (bytes); null until the store has
   * run PER_DAY_AFTER_SECONDS.
   */
  bytes_written_per_day: number | null;
  /** null where the data directory has no block device of its own (tmpfs, overlay) or no /proc/diskstats. */
  device: DeviceWriteReport | null;
}

export class DiskWrites {
  private readonly startedAt = Date.now();
  private readonly baseline = processWriteBytes();
  private readonly device: { name: string; baseline: number } | undefined;
  private acceptedBytes = 0;
  private acceptedEvents = 0;

  /**
   * @param dataDir the store's DATA_DIR: the block device under it is reported beside the
   *   process (none when omitted, or when it has no block device of its own)
   */
  constructor(dataDir?: string) {
    const device = dataDir === undefined ? null : blockDeviceOf(dataDir);
    const baseline = device ? deviceWrittenBytes(device.name) : undefined;
    if (device && baseline !== undefined) this.device = { name: device.name, baseline };
  }

  /**
   * Counts an accepted request body.
   * @param bytes its length (bytes)
   * @param events events it created (1 for a create, 0 for an attachment)
   */
  accept(bytes: number, events: number): void {
    this.acceptedBytes += bytes;
    this.acceptedEvents += events;
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

  /**
   * What `bytes` written since the start come to (docs/API.md, "Statistics", `disk_writes`): over
   * the bytes accepted (null before anything was accepted), per event accepted (bytes; null before
   * the first), and scaled to a day at the rate since the start (bytes; null in the first
   * PER_DAY_AFTER_SECONDS).
   * @param now ms since the epoch
   */
  figures(bytes: number, now = Date.now()): Pick<DiskWriteReport, 'write_amplification' | 'bytes_written_per_event' | 'bytes_written_per_day'> {
    const seconds = (now - this.startedAt) / 1000;
    return {
      write_amplification: this.acceptedBytes === 0 ? null : Number((bytes / this.acceptedBytes).toFixed(2)),
      bytes_written_per_event: this.acceptedEvents === 0 ? null : Math.round(bytes / this.acceptedEvents),
      bytes_written_per_day: seconds < PER_DAY_AFTER_SECONDS ? null : Math.round((bytes * DAY_SECONDS) / seconds),
    };
  }

  /** The report at `now` (ms since the epoch). */
  report(now = Date.now()): DiskWriteReport {
    const written = this.written();
    const device = this.deviceWritten();
    return {
      source: written === undefined ? null : WRITES_SOURCE,
      since: new Date(this.startedAt).toISOString(),
      bytes_written: written ?? null,
      bytes_accepted: this.acceptedBytes,
      events_accepted: this.acceptedEvents,
      ...(written === undefined ? { write_amplification: null, bytes_written_per_event: null, bytes_written_per_day: null } : this.figures(written, now)),
      device: device ? { source: DEVICE_WRITES_SOURCE, name: device.name, bytes_written: device.bytes, ...this.figures(device.bytes, now) } : null,
    };
  }
}
