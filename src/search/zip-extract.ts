/**
 * Extraction of a downloaded export zip with yauzl, streaming each entry to disk. All or nothing:
 * entries are written into a fresh temporary directory beside the target, never into the target
 * itself, and moved into place only once the whole archive has been read and every entry passed.
 * A refused or corrupt archive leaves the target as it was, and no entry can overwrite the
 * archive while it is being read. Entries whose path would leave the target (absolute paths,
 * `..`) are refused. So is a zip bomb, before any entry is written (docs/SECURITY.md, "A store
 * or search server the CLI talks to"): an entry past 1 MiB that inflates more than 200 times its
 * compressed size, a whole archive that does, or entries that together would not fit in the free
 * space beside the target (less a reserve, download-limits.ts). The sizes are those the zip's
 * central directory declares, which yauzl holds each entry to (`validateEntrySizes`, on by default:
 * an entry inflating past its declared size fails).
 */
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import yauzl from 'yauzl';
import { OversizeError, usableSpace } from './download-limits.js';
import { formatBytes } from './download-progress.js';
import { SearchResponseError } from './errors.js';

export interface ExtractOptions {
  /**
   * Delete the archive once every entry has been extracted, before they are moved into place,
   * so an entry named like the archive takes its place (the export flow keeps only the files).
   * Without it, an entry that would replace the archive refuses the whole archive.
   */
  removeArchive?: boolean;
  /** The folder messages name (default `directory`): the one the user asked for, when `directory` is a staging folder inside it. */
  shownAs?: string;
}

/**
 * Extracts every entry of `zipPath` into `directory` (created as needed), all or nothing.
 * Files already in `directory` under an entry's name are replaced; others are left alone.
 * @returns the extracted files, relative to `directory` with `/` separators, sorted
 * @throws SearchResponseError (its `cause` the underlying error) when the zip is corrupt, an
 *   entry would escape `directory` or replace the archive, or writing fails; OversizeError for a
 *   zip bomb or entries that do not fit (see above); `directory` is then as before and the
 *   temporary directory is removed
 */
export async function extractZip(zipPath: string, directory: string, options: ExtractOptions = {}): Promise<string[]> {
  const root = path.resolve(directory);
  const archive = path.resolve(zipPath);
  const staging = await makeStaging(root);
  const aside = `${staging}.archive`;
  let archiveAside = false;
  try {
    const files = await extractInto(archive, staging, options.shownAs ?? directory);
    const targets = files.map((file) => path.join(root, ...file.split('/')));
    if (!options.removeArchive && targets.includes(archive)) {
      throw new SearchResponseError(`Export zip entry ${JSON.stringify(path.relative(root, archive))} would replace the archive itself`);
    }
    await assertPlaceable(root, targets.filter((target) => !(options.removeArchive && target === archive)));
    if (options.removeArchive) {
      await rename(archive, aside);
      archiveAside = true;
    }
    await moveInto(staging, root, files);
    if (archiveAside) await rm(aside, { force: true });
    return files;
  } catch (error) {
    if (archiveAside) await rename(aside, archive).catch(() => undefined);
    throw error instanceof SearchResponseError || error instanceof OversizeError ? error : new SearchResponseError(`Export zip could not be extracted: ${(error as Error).message}`, { cause: error });
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

/**
 * A fresh directory beside `root` (`.<name>.extract-XXXXXX`, on the same file system, so each
 * entry moves into place with one rename); inside `root` when its parent is not writable (e.g.
 * extracting into a home directory).
 */
async function makeStaging(root: string): Promise<string> {
  await mkdir(path.dirname(root), { recursive: true });
  try {
    return await mkdtemp(path.join(path.dirname(root), `.${path.basename(root)}.extract-`));
  } catch (error) {
    if (!['EACCES', 'EPERM', 'EROFS'].includes((error as NodeJS.ErrnoException).code ?? '')) throw error;
    await mkdir(root, { recursive: true });
    return mkdtemp(path.join(root, '.extract-'));
  }
}

/** An entry may inflate to this many times its compressed size, past `RATIO_GRACE_BYTES` (docs/SECURITY.md). */
export const MAX_COMPRESSION_RATIO = 200;
/** Entries (and archives) up to this size inflated are not held to the ratio: too small to harm. */
const RATIO_GRACE_BYTES = 1024 * 1024;

/** Whether `uncompressed` bytes from `compressed` pass the ratio a dataset's zip never comes near. */
const absurdRatio = (uncompressed: number, compressed: number): boolean =>
  uncompressed > RATIO_GRACE_BYTES && uncompressed > compressed * MAX_COMPRESSION_RATIO;

const ratioOf = (uncompressed: number, compressed: number): string => (compressed === 0 ? 'from nothing' : `${Math.round(uncompressed / compressed)} times`);

/**
 * Refuses a zip bomb before anything is written: an entry or the whole archive inflating past
 * MAX_COMPRESSION_RATIO times its compressed size, or entries that together need more than the
 * usable space of `staging`'s file system (download-limits.ts).
 * @throws OversizeError naming the entry, its sizes and the limit
 */
async function checkSizes(entries: yauzl.Entry[], staging: string, shownAs: string): Promise<void> {
  const hint = 'The zip is not a dataset export\'s (a zip bomb, or damaged); nothing was extracted.';
  for (const entry of entries) {
    if (absurdRatio(entry.uncompressedSize, entry.compressedSize)) {
      throw new OversizeError(`Export zip entry ${JSON.stringify(entry.fileName)} inflates ${ratioOf(entry.uncompressedSize, entry.compressedSize)} `
        + `(${formatBytes(entry.compressedSize)} to ${formatBytes(entry.uncompressedSize)}), past the ${MAX_COMPRESSION_RATIO} times allowed`, hint);
    }
  }
  const inflated = entries.reduce((sum, entry) => sum + entry.uncompressedSize, 0);
  const compressed = entries.reduce((sum, entry) => sum + entry.compressedSize, 0);
  if (absurdRatio(inflated, compressed)) {
    throw new OversizeError(`Export zip inflates ${ratioOf(inflated, compressed)} as a whole (${formatBytes(compressed)} to ${formatBytes(inflated)}), past the ${MAX_COMPRESSION_RATIO} times allowed`, hint);
  }
  const space = await usableSpace(staging);
  if (inflated > space.usableBytes) {
    throw new OversizeError(`Export zip needs ${formatBytes(inflated)} extracted, but only ${formatBytes(space.freeBytes)} is free where ${shownAs} goes`,
      `Free space there or extract elsewhere (extraction keeps ${formatBytes(space.reserveBytes)} free); nothing was extracted, the zip is kept.`);
  }
}

/** Every entry of `zip`, from its central directory. */
async function allEntries(zip: yauzl.ZipFile): Promise<yauzl.Entry[]> {
  const entries: yauzl.Entry[] = [];
  for (let entry = await nextEntry(zip); entry !== null; entry = await nextEntry(zip)) entries.push(entry);
  return entries;
}

/**
 * Reads the whole archive into `staging` once its sizes pass (`checkSizes`, its messages naming
 * `shownAs`); returns its files, relative with `/`, sorted.
 */
async function extractInto(zipPath: string, staging: string, shownAs: string): Promise<string[]> {
  const zip = await openZip(zipPath);
  const files = new Set<string>();
  try {
    const entries = await allEntries(zip);
    await checkSizes(entries, staging, shownAs);
    for (const entry of entries) {
      const target = path.resolve(staging, entry.fileName);
      if (target === staging || !target.startsWith(staging + path.sep)) {
        if (target === staging && entry.fileName.endsWith('/')) continue;
        throw new SearchResponseError(`Export zip entry ${JSON.stringify(entry.fileName)} would be written outside the target directory`);
      }
      if (entry.fileName.endsWith('/')) {
        await mkdir(target, { recursive: true });
        continue;
      }
      await mkdir(path.dirname(target), { recursive: true });
      await pipeline(await openEntry(zip, entry), createWriteStream(target));
      files.add(path.relative(staging, target).split(path.sep).join('/'));
    }
  } finally {
    zip.close();
  }
  return [...files].sort();
}

/**
 * Moves the staged tree into `root`: the whole directory with one rename when `root` does not
 * exist yet, else file by file (each rename replaces a file of the same name).
 */
async function moveInto(staging: string, root: string, files: string[]): Promise<void> {
  const exists = await stat(root).then(() => true, (error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return false;
    throw error;
  });
  if (!exists) {
    await rename(staging, root);
    return;
  }
  for (const file of files) {
    const target = path.join(root, ...file.split('/'));
    await mkdir(path.dirname(target), { recursive: true });
    await rename(path.join(staging, ...file.split('/')), target);
  }
  await copyEmptyDirectories(staging, root);
}

/**
 * Checks before anything moves that every target can take its file: no directory stands where a
 * file goes, and no file where a directory must be made.
 * @throws SearchResponseError naming the first conflict
 */
async function assertPlaceable(root: string, targets: string[]): Promise<void> {
  const kindOf = (where: string) => stat(where).then((found) => (found.isDirectory() ? 'directory' : 'file'), () => 'absent');
  const checked = new Set<string>();
  for (const target of targets) {
    if ((await kindOf(target)) === 'directory') throw new SearchResponseError(`Export zip entry ${JSON.stringify(path.relative(root, target))} would replace a directory`);
    for (let parent = path.dirname(target); parent !== root && !checked.has(parent); parent = path.dirname(parent)) {
      checked.add(parent);
      if ((await kindOf(parent)) === 'file') throw new SearchResponseError(`Export zip entry ${JSON.stringify(path.relative(root, target))} needs a directory where ${JSON.stringify(path.relative(root, parent))} is a file`);
    }
  }
}

/** Creates in `root` the directories of the staged tree that hold no file (directory entries). */
async function copyEmptyDirectories(staging: string, root: string): Promise<void> {
  for (const entry of await readdir(staging, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    await mkdir(path.join(root, entry.name), { recursive: true });
    await copyEmptyDirectories(path.join(staging, entry.name), path.join(root, entry.name));
  }
}

function openZip(zipPath: string): Promise<yauzl.ZipFile> {
  return new Promise((resolve, reject) => {
    yauzl.open(zipPath, { lazyEntries: true, autoClose: false }, (error, zip) => {
      if (error) reject(new SearchResponseError(`Export zip could not be opened: ${error.message}`, { cause: error }));
      else resolve(zip);
    });
  });
}

/** The next entry, or null after the last one. */
function nextEntry(zip: yauzl.ZipFile): Promise<yauzl.Entry | null> {
  return new Promise((resolve, reject) => {
    const cleanup = (): void => {
      zip.off('entry', onEntry);
      zip.off('end', onEnd);
      zip.off('error', onError);
    };
    const onEntry = (entry: yauzl.Entry): void => { cleanup(); resolve(entry); };
    const onEnd = (): void => { cleanup(); resolve(null); };
    const onError = (error: Error): void => { cleanup(); reject(error); };
    zip.on('entry', onEntry);
    zip.on('end', onEnd);
    zip.on('error', onError);
    zip.readEntry();
  });
}

function openEntry(zip: yauzl.ZipFile, entry: yauzl.Entry): Promise<NodeJS.ReadableStream> {
  return new Promise((resolve, reject) => {
    zip.openReadStream(entry, (error, stream) => (error ? reject(error) : resolve(stream)));
  });
}
