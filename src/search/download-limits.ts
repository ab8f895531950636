/**
 * How much of what a server sends the CLIs write to disk (docs/SECURITY.md, "A store or search
 * server the CLI talks to"): `edge-events export` and `edge-events search --export` save a zip a
 * server streams, and extract it. A server that does not stop, or a zip bomb, must not fill the
 * disk. A download stops, and fails, past the length its answer declared (`Content-Length`, when
 * given) and before it would leave the target's file system with less than a reserve free
 * (`usableSpace`): 1/20 of the file system's size, at most 64 MiB. The caller removes the partial
 * file. Zip entries are bounded in zip-extract.ts by the same free space and by their compression
 * ratio.
 */
import { statfs } from 'node:fs/promises';
import { Transform } from 'node:stream';
import { formatBytes } from './download-progress.js';
import { SearchError } from './errors.js';

const MiB = 1024 * 1024;
/** The most a download or an extraction leaves free on its file system, whatever its size. */
export const MAX_RESERVE_BYTES = 64 * MiB;

/**
 * What a server sent is larger than the CLI takes: past its declared length, past the free space
 * of the target's file system, or a zip whose entries inflate past what a dataset's do. Nothing
 * of it is left on disk. Exit code 1; `hint` says what to do.
 */
export class OversizeError extends SearchError {
  constructor(message: string, readonly hint: string) {
    super(message);
  }
}

/** The space a download or an extraction may use on the file system holding `directory`, in bytes. */
export interface UsableSpace {
  /** Free to an unprivileged user now (statfs `bavail` × `bsize`). */
  freeBytes: number;
  /** Kept free: 1/20 of the file system's size, at most MAX_RESERVE_BYTES. */
  reserveBytes: number;
  /** `freeBytes` less `reserveBytes`, at least 0. */
  usableBytes: number;
}

/**
 * The space the CLIs may fill on the file system of `directory` (fs.statfs, Node's `fs` reference).
 * @throws the statfs error (ENOENT when `directory` is absent)
 */
export async function usableSpace(directory: string): Promise<UsableSpace> {
  const stats = await statfs(directory);
  const freeBytes = stats.bavail * stats.bsize;
  const reserveBytes = Math.min(MAX_RESERVE_BYTES, Math.floor((stats.blocks * stats.bsize) / 20));
  return { freeBytes, reserveBytes, usableBytes: Math.max(0, freeBytes - reserveBytes) };
}

/** The `Content-Length` of an answer's `headers`, or undefined when absent or not a whole number of bytes. */
export function declaredLength(headers: Headers): number | undefined {
  const value = headers.get('content-length');
  return value !== null && /^\d+$/.test(value.trim()) ? Number(value.trim()) : undefined;
}

/** What `boundedDownload` is told of one download. */
export interface DownloadBounds {
  /** The folder the file is written in: its file system's free space bounds the download. */
  directory: string;
  /** The answer's `Content-Length`, if it gave one. */
  declared: number | undefined;
  /** Who sends it, for messages: `The store`, `The hosted search API`. */
  sender: string;
  /** What to do when the server sends more than it declared. */
  senderHint: string;
}

/**
 * A pass-through stream for a download's bytes, to put between the answer's body and the file:
 * it fails (OversizeError) before passing on a byte past the declared length or past the usable
 * space of `bounds.directory`, so neither is ever written.
 * @throws OversizeError at once when the declared length already exceeds the usable space;
 *   the statfs error when `bounds.directory` cannot be asked
 */
export async function boundedDownload(bounds: DownloadBounds): Promise<Transform> {
  const space = await usableSpace(bounds.directory);
  const spaceHint = `Free space in ${bounds.directory}, or save the zip on a file system with more room (the download keeps ${formatBytes(space.reserveBytes)} free); nothing was kept.`;
  if (bounds.declared !== undefined && bounds.declared > space.usableBytes) {
    throw new OversizeError(`${bounds.sender} declared ${formatBytes(bounds.declared)}, but ${bounds.directory} has ${formatBytes(space.freeBytes)} free`, spaceHint);
  }
  let received = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      received += chunk.length;
      if (bounds.declared !== undefined && received > bounds.declared) {
        callback(new OversizeError(`${bounds.sender} sent more than the ${bounds.declared} bytes its Content-Length declared; stopped`, bounds.senderHint));
      } else if (received > space.usableBytes) {
        callback(new OversizeError(`${bounds.sender} sent more than fits in ${bounds.directory}: stopped at ${formatBytes(received - chunk.length)}, `
          + `${formatBytes(space.freeBytes)} having been free, before the disk would fill`, spaceHint));
      } else {
        callback(null, chunk);
      }
    },
  });
}
