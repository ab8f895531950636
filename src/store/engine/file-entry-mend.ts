/**
 * Mends a file entry of the index from the log (docs/STORAGE.md, "A damaged index"): an entry
 * whose bytes do not match its CRC may be whole bytes under a damaged entry, not damaged bytes.
 * A blob frame's header names its file and holds its length and CRC32C, so the frame of the
 * file in the entry's segment tells the two apart: whole, the entry is written again from it;
 * missing or failing its own CRC, the file is damaged, and the consistency pass drops it.
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import { segmentFileName } from '../log/segment-files.js';
import { blobCrcMatches, FRAME_HEADER_BYTES, scanFrames, type ScannedFrame } from '../log/segment-frames.js';
import type { FileEntry, FileKind } from '../log/log-entries.js';
import { storeHandles, type StoreView } from '../read/store-view.js';

const FILE_KINDS: ReadonlySet<string> = new Set<FileKind>(['image', 'video', 'local_only']);

/**
 * The whole blob frame of file `fileId` in segment `segment`, or undefined: the frame at the
 * entry's offset when its header names the file, else the first of the segment's frames that
 * does (a damaged offset), its data matching its CRC.
 * @param offset where the entry places the file's first data byte (bytes)
 * @throws the fs error of a failed read (a missing segment file gives undefined)
 */
async function wholeBlobFrame(blobsDir: string, segment: number, fileId: string, offset: number): Promise<ScannedFrame | undefined> {
  const handle = await fsp.open(path.join(blobsDir, segmentFileName(segment)), 'r').catch(() => undefined);
  if (!handle) return undefined;
  try {
    const isFile = (frame: ScannedFrame) => frame.id === fileId && FILE_KINDS.has(frame.kind);
    let found: ScannedFrame | undefined;
    for await (const frame of scanFrames(handle, Math.max(0, offset - FRAME_HEADER_BYTES), segment)) {
      found = isFile(frame) ? frame : undefined;
      break;
    }
    if (!found) {
      for await (const frame of scanFrames(handle, 0, segment)) {
        if (isFile(frame)) {
          found = frame;
          break;
        }
      }
    }
    return found && await blobCrcMatches(handle, found) ? found : undefined;
  } finally {
    await handle.close();
  }
}

function sameEntry(a: FileEntry, b: FileEntry): boolean {
  return a.segment === b.segment && a.offset === b.offset && a.length === b.length && a.crc === b.crc
    && a.kind === b.kind && a.contentType === b.contentType && a.event === b.event;
}

/**
 * Mends the entries of `fileIds` (entries whose bytes failed their CRC) whose blob frame is
 * whole in their segment: offset, length, CRC and kind from the frame, the rest as it was. An
 * entry changed meanwhile (the file deleted) is left alone.
 * @returns the file ids mended; the others' files are damaged
 * @throws the fs error of a failed read, the lmdb error of a failed commit
 */
export async function mendFileEntries(store: StoreView, fileIds: readonly string[]): Promise<Set<string>> {
  const { dbs, blobsDir } = store[storeHandles];
  const mends = new Map<string, { was: FileEntry; mended: FileEntry }>();
  for (const fileId of fileIds) {
    const was = dbs.files.get(fileId);
    if (!was) continue;
    const frame = await wholeBlobFrame(blobsDir, was.segment, fileId, was.offset);
    if (!frame) continue;
    const mended = { ...was, offset: frame.offset, length: frame.length, crc: frame.crc, kind: frame.kind as FileKind };
    mends.set(fileId, { was, mended });
  }
  if (mends.size === 0) return new Set();
  const done = new Set<string>();
  await dbs.root.transaction(() => {
    for (const [fileId, { was, mended }] of mends) {
      const now = dbs.files.get(fileId);
      if (!now || !sameEntry(now, was)) continue;
      dbs.files.putSync(fileId, mended);
      done.add(fileId);
    }
  });
  return done;
}
