/**
 * A preload that makes the store's log see an I/O error on demand, as a bad flash page gives one
 * (docs/STORAGE.md, "An I/O error in the log"): `node --import <this file> dist/src/cli.js serve`
 * with EDGE_EVENTS_EIO_TRIGGER set to a path. While a file exists at that path, the next writev
 * (fs.writevSync or FileHandle.writev: the segment log's appends) writes its first buffer alone,
 * a frame header with nothing after it, and fails with EIO; the trigger file is removed, and the
 * truncate that follows fails with EIO too, so the part-written frame stays in the file. One
 * failure per trigger.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';

const trigger = process.env.EDGE_EVENTS_EIO_TRIGGER;

function ioError(syscall: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`EIO: i/o error, ${syscall} (injected by eio-preload)`), { code: 'EIO', errno: -5, syscall });
}

/** Whether this call is to fail: the trigger file exists (and is taken). */
function triggered(): boolean {
  if (!trigger || !fs.existsSync(trigger)) return false;
  fs.rmSync(trigger, { force: true });
  truncateFails = true;
  return true;
}

let truncateFails = false;

const writevSync = fs.writevSync;
fs.writevSync = (fd: number, buffers: readonly NodeJS.ArrayBufferView[], position?: number): number => {
  if (!triggered()) return writevSync(fd, buffers, position);
  writevSync(fd, buffers.slice(0, 1), position);
  throw ioError('writev');
};

const probe = await fsp.open(process.execPath, 'r');
const FileHandle = Object.getPrototypeOf(probe) as fsp.FileHandle;
await probe.close();
const writev = FileHandle.writev;
FileHandle.writev = async function (this: fsp.FileHandle, buffers: NodeJS.ArrayBufferView[], position?: number) {
  if (!triggered()) return writev.call(this, buffers, position);
  await writev.call(this, buffers.slice(0, 1), position);
  throw ioError('writev');
} as typeof writev;
const truncate = FileHandle.truncate;
FileHandle.truncate = async function (this: fsp.FileHandle, length?: number) {
  if (truncateFails) {
    truncateFails = false;
    throw ioError('ftruncate');
  }
  return truncate.call(this, length);
};
