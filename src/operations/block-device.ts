/**
 * The block device under a directory and what it has written, from /proc/diskstats
 * (docs/OPERATIONS.md, "Disk writes"). The device counts every writer on it (the filesystem's
 * journal, other services), but it is what wears the card, where a process's own `write_bytes`
 * can count whole page-cache folios for a 4 KiB write (native-bench/PROFILE.md, "Stalls and
 * `write_bytes` on a grown store, traced").
 */
import fs from 'node:fs';
import path from 'node:path';

/** /proc/diskstats counts sectors of 512 bytes, whatever the device's own sector size (Linux's Documentation/admin-guide/iostats.rst). */
const DISKSTATS_SECTOR_BYTES = 512;

/**
 * The block device that holds `dir`, as /proc/diskstats names it (`vda`, `mmcblk0p2`): from the
 * directory's st_dev (major:minor) through /sys/dev/block/MAJ:MIN, so a partition or a dm device is
 * itself, not its disk.
 * @returns null when the filesystem has no block device of its own (tmpfs, overlay, btrfs's
 *   anonymous device numbers) or the system has no /sys (not Linux)
 * @throws the fs error when `dir` cannot be stat'ed
 */
export function blockDeviceOf(dir: string): { name: string; majorMinor: string } | null {
  const { dev } = fs.statSync(dir, { bigint: true });
  // Linux's new_encode_dev: minor in bits 0-7 and 20-31, major in bits 8-19.
  const major = Number((dev >> 8n) & 0xfffn);
  const minor = Number((dev & 0xffn) | ((dev >> 12n) & 0xfff00n));
  const majorMinor = `${major}:${minor}`;
  try {
    return { name: path.basename(fs.realpathSync(`/sys/dev/block/${majorMinor}`)), majorMinor };
  } catch {
    return null;
  }
}

/**
 * Bytes the block device `name` has written since boot (sectors written × 512), or undefined when
 * /proc/diskstats is absent or has no line for it.
 */
export function deviceWrittenBytes(name: string): number | undefined {
  let text: string;
  try {
    text = fs.readFileSync('/proc/diskstats', 'utf8');
  } catch {
    return undefined;
  }
  for (const line of text.split('\n')) {
    // major minor name reads reads-merged sectors-read ms-reading writes writes-merged sectors-written ...
    const fields = line.trim().split(/\s+/);
    if (fields[2] === name) return Number(fields[9]) * DISKSTATS_SECTOR_BYTES;
  }
  return undefined;
}
