/**
 * Writes that finish: writev may write part of what it is given, and takes at most IOV_MAX
 * buffers a call (writev(2)), so these call it until every byte is written.
 */
import fs from 'node:fs';
import type fsp from 'node:fs/promises';

/** writev's cap on buffers per call (IOV_MAX on Linux). */
export const IOV_MAX = 1024;

/** Writes `buffers` at `position` (bytes) with as many writevs as it takes. */
export async function writeAll(handle: fsp.FileHandle, buffers: Buffer[], position: number): Promise<void> {
  for (let pending = buffers, at = position; pending.length > 0;) {
    const taken = Math.min(pending.length, IOV_MAX);
    const { bytesWritten } = await handle.writev(pending.slice(0, taken), at);
    at += bytesWritten;
    pending = unwritten(pending, taken, bytesWritten);
  }
}

/** `writeAll` on the calling thread, to file descriptor `fd`. */
export function writeAllSync(fd: number, buffers: Buffer[], position: number): void {
  for (let pending = buffers, at = position; pending.length > 0;) {
    const taken = Math.min(pending.length, IOV_MAX);
    const bytesWritten = fs.writevSync(fd, pending.slice(0, taken), at);
    at += bytesWritten;
    pending = unwritten(pending, taken, bytesWritten);
  }
}

/**
 * What is left of `pending` after a writev of its first `taken` buffers wrote `written` bytes:
 * writev may write partially.
 */
function unwritten(pending: Buffer[], taken: number, written: number): Buffer[] {
  let consumed = 0;
  let left = written;
  while (consumed < taken && left >= pending[consumed].length) {
    left -= pending[consumed].length;
    consumed++;
  }
  return consumed < taken ? [pending[consumed].subarray(left), ...pending.slice(consumed + 1)] : pending.slice(taken);
}
