/**
 * Extraction of a downloaded export zip with yauzl, streaming each entry to disk. Entries whose
 * path would leave the target directory (absolute paths, `..`) are refused.
 */
import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import yauzl from 'yauzl';
import { SearchResponseError } from './errors.js';

/**
 * Extracts every entry of `zipPath` into `directory` (created as needed).
 * @returns the extracted files, relative to `directory` with `/` separators, sorted
 * @throws SearchResponseError when the zip is corrupt or an entry would escape `directory`
 */
export async function extractZip(zipPath: string, directory: string): Promise<string[]> {
  const root = path.resolve(directory);
  const zip = await openZip(zipPath);
  const files: string[] = [];
  try {
    for (let entry = await nextEntry(zip); entry !== null; entry = await nextEntry(zip)) {
      const target = path.resolve(root, entry.fileName);
      if (target !== root && !target.startsWith(root + path.sep)) {
        throw new SearchResponseError(`Export zip entry ${JSON.stringify(entry.fileName)} would be written outside ${root}`);
      }
      if (entry.fileName.endsWith('/')) {
        await mkdir(target, { recursive: true });
        continue;
      }
      await mkdir(path.dirname(target), { recursive: true });
      await pipeline(await openEntry(zip, entry), createWriteStream(target));
      files.push(path.relative(root, target).split(path.sep).join('/'));
    }
  } catch (error) {
    throw error instanceof SearchResponseError ? error : new SearchResponseError(`Export zip could not be extracted: ${(error as Error).message}`, { cause: error });
  } finally {
    zip.close();
  }
  return files.sort();
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
