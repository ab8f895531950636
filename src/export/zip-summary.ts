/**
 * What a downloaded export holds, read from its zip's central directory with yauzl (docs/API.md,
 * "Dataset export", "CLI"). Reading it also proves the download complete: a truncated zip has no
 * central directory.
 */
import { stat } from 'node:fs/promises';
import yauzl from 'yauzl';

export interface ZipSummary {
  /** Entries in the zip. */
  entries: number;
  /** Entries under `images/`. */
  images: number;
  /** Size of the zip file, bytes. */
  bytes: number;
}

/**
 * Counts the entries of the zip at `zipPath`.
 * @throws yauzl's error when the file is not a complete zip
 */
export async function zipSummary(zipPath: string): Promise<ZipSummary> {
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) => {
    yauzl.open(zipPath, { lazyEntries: false, autoClose: true }, (err, opened) => (err ? reject(err) : resolve(opened)));
  });
  let entries = 0;
  let images = 0;
  await new Promise<void>((resolve, reject) => {
    zip.on('entry', (entry: yauzl.Entry) => {
      entries += 1;
      if (entry.fileName.startsWith('images/') && !entry.fileName.endsWith('/')) images += 1;
    });
    zip.on('end', () => resolve());
    zip.on('error', reject);
  });
  return { entries, images, bytes: (await stat(zipPath)).size };
}
