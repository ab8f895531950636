/**
 * Bytes written, counted two ways (sweep.js): what a process tree sent toward storage
 * (`write_bytes` of /proc/<pid>/io: page-cache pages it dirtied, and direct I/O), and what the
 * block device holding a directory wrote (sectors written in /proc/diskstats, which counts every
 * writer on that device: the journal, and any other work on the machine).
 */
import fs from 'node:fs';
import { blockDeviceOf, deviceWrittenBytes as readDeviceWrittenBytes } from '../../dist/src/operations/block-device.js';
import { processTree } from './store-process.js';

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
 * The block device that holds `dir`, as /proc/diskstats names it, or null when its filesystem has
 * none of its own: the store's own reader (src/operations/block-device.ts), from the build.
 * @returns {{ name: string, majorMinor: string } | null}
 */
export { blockDeviceOf };

/**
 * Bytes the block device `name` has written since boot (sectors written x 512).
 * @throws Error when /proc/diskstats has no line for it
 */
export function deviceWrittenBytes(name) {
  const bytes = readDeviceWrittenBytes(name);
  if (bytes === undefined) throw new Error(`/proc/diskstats has no line for ${name}`);
  return bytes;
}
