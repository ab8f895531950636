/**
 * Bytes written, counted two ways (sweep.js): what a process tree sent toward storage
 * (`write_bytes` of /proc/<pid>/io: page-cache pages it dirtied, and direct I/O), and what the
 * block device holding a directory wrote (sectors written in /proc/diskstats, which counts every
 * writer on that device: the journal, and any other work on the machine).
 */
import fs from 'node:fs';
import path from 'node:path';
import { processTree } from './store-process.js';

/** /proc/diskstats counts sectors of 512 bytes, whatever the device's own sector size. */
const DISKSTATS_SECTOR_BYTES = 512;

/** `write_bytes` of one process (all its threads, and its reaped children), in bytes. */
function processWriteBytes(pid) {
  const value = /^write_bytes: (\d+)$/m.exec(fs.readFileSync(`/proc/${pid}/io`, 'utf8'))?.[1];
  if (value === undefined) throw new Error(`/proc/${pid}/io has no write_bytes (kernel without task I/O accounting?)`);
  return Number(value);
}

/**
 * `write_bytes` summed over `pid` and its live descendants (uvicorn's workers), in bytes;
 * a process that exits while it is read is left out.
 */
export function treeWriteBytes(pid) {
  let total = 0;
  for (const member of processTree(pid)) {
    try {
      total += processWriteBytes(member);
    } catch (error) {
      if (member === pid) throw error; // the server itself must be readable
    }
  }
  return total;
}

/**
 * The block device that holds `dir`, as /proc/diskstats names it: from the directory's st_dev
 * (major:minor) through /sys/dev/block/MAJ:MIN, so a partition or a dm device is itself, not its
 * disk. Null when the filesystem has no block device of its own (tmpfs, overlay, btrfs's
 * anonymous device numbers).
 * @returns {{ name: string, majorMinor: string } | null}
 */
export function blockDeviceOf(dir) {
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

/** Bytes the block device `name` has written since boot (sectors written x 512). */
export function deviceWrittenBytes(name) {
  for (const line of fs.readFileSync('/proc/diskstats', 'utf8').split('\n')) {
    // major minor name reads reads-merged sectors-read ms-reading writes writes-merged sectors-written ...
    const fields = line.trim().split(/\s+/);
    if (fields[2] === name) return Number(fields[9]) * DISKSTATS_SECTOR_BYTES;
  }
  throw new Error(`/proc/diskstats has no line for ${name}`);
}
