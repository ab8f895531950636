/**
 * What the store writes to its disk against what it accepts (docs/OPERATIONS.md, "Disk
 * writes"): edge boxes run on eMMC and SD cards with a fixed write endurance, so bytes written per
 * event and the write amplification are figures an operator watches beside capacity.
 *
 * Written: the process's `write_bytes` from `/proc/self/io` (proc(5): bytes this process, all its
 * threads, caused to be sent to the storage layer: the log's appends, LMDB's commits and flushes,
 * staging files), since the store started. Accepted: the request bodies of the creates and
 * attachments the store answered 2xx (JSON with base64 images as sent, uploads as streamed).
 */
import fs from 'node:fs';

/** Where `written` comes from, as /stats names it. */
export const WRITES_SOURCE = '/proc/self/io write_bytes';
const DAY_SECONDS = 86_400;

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
  /** bytes_written over the time since the start, scaled to a day. */
  bytes_written_per_day: number | null;
}

export class DiskWrites {
  private readonly startedAt = Date.now();
  private readonly baseline = processWriteBytes();
  private acceptedBytes = 0;
  private acceptedEvents = 0;

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

  /** Bytes of accepted request bodies since the start. */
  accepted(): number {
    return this.acceptedBytes;
  }

  /** The report at `now` (ms since the epoch). */
  report(now = Date.now()): DiskWriteReport {
    const written = this.written();
    const ratio = (per: number) => (written === undefined || per === 0 ? null : Number((written / per).toFixed(2)));
    const seconds = Math.max(1, (now - this.startedAt) / 1000);
    return {
      source: written === undefined ? null : WRITES_SOURCE,
      since: new Date(this.startedAt).toISOString(),
      bytes_written: written ?? null,
      bytes_accepted: this.acceptedBytes,
      events_accepted: this.acceptedEvents,
      write_amplification: ratio(this.acceptedBytes),
      bytes_written_per_event: ratio(this.acceptedEvents) === null ? null : Math.round(written! / this.acceptedEvents),
      bytes_written_per_day: written === undefined ? null : Math.round((written * DAY_SECONDS) / seconds),
    };
  }
}
