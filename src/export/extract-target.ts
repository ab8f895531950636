/**
 * `edge-events export --extract DIR [--force]` (docs/USAGE.md, "Exporting a dataset"; docs/API.md,
 * "Dataset export", "CLI"): DIR ends up holding exactly one export, never a mix of two. A new or
 * empty DIR is filled; a non-empty one is refused before anything is downloaded, unless `--force`
 * asks to replace it whole. Every way is all or nothing: the zip is extracted into a fresh staging
 * folder first (`.<name>.extract-XXXXXX` beside DIR), and only a complete extraction is moved into
 * place; with `--force` the old DIR is moved aside, the new one renamed in, and the old one removed
 * only then.
 */
import { existsSync, renameSync, rmSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { OversizeError } from '../search/download-limits.js';
import { extractZip } from '../search/zip-extract.js';
import { ExportCliError } from './export-cli-error.js';
import type { CleanupSteps } from './interrupt-cleanup.js';
import { checkWritableFolder } from './output-checks.js';

/**
 * What extracting into a folder will do: `create` it (absent), `fill` it (an empty folder), or
 * `replace` it whole (non-empty, with `--force`).
 */
export type ExtractPlan = 'create' | 'fill' | 'replace';

/**
 * Decides how the export goes into `directory`, before anything is downloaded.
 * @param force `--force`: a non-empty `directory` is replaced whole instead of refused
 * @param zipPath the zip (`-o`); it must not lie inside `directory`, which it would turn
 *   non-empty (or, replaced, remove)
 * @throws ExportCliError (exit code 1) naming the folder when it is not empty and `force` is
 *   false, when `directory` is a file, or when it would hold the zip; naming the cause when the
 *   folder it goes into is missing, not a folder, or not writable (src/export/output-checks.ts;
 *   to replace a folder or create one, its parent must be writable; to fill one, itself)
 */
export async function planExtract(directory: string, force: boolean, zipPath?: string): Promise<ExtractPlan> {
  if (zipPath !== undefined && path.resolve(zipPath).startsWith(path.resolve(directory) + path.sep)) {
    throw new ExportCliError(`-o ${zipPath} lies inside --extract ${directory}, which must hold the export alone`, 1, `Write the zip beside the folder, e.g. -o ${path.resolve(directory)}.zip.`);
  }
  const subject = `--extract ${directory}`;
  const parent = path.dirname(path.resolve(directory));
  const found = await stat(directory).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT' || error.code === 'ENOTDIR') return null;
    throw error;
  });
  if (found === null) {
    await checkWritableFolder(subject, parent);
    return 'create';
  }
  if (!found.isDirectory()) {
    throw new ExportCliError(`${subject} is a file, not a folder`, 1, 'Name a new or empty folder to extract into.');
  }
  const entries = await readdir(directory);
  if (entries.length === 0) {
    await checkWritableFolder(subject, path.resolve(directory));
    return 'fill';
  }
  if (force) {
    await checkWritableFolder(subject, parent);
    return 'replace';
  }
  const shown = entries.sort().slice(0, 3).join(', ');
  throw new ExportCliError(
    `--extract ${directory} is not empty (${entries.length} ${entries.length === 1 ? 'entry' : 'entries'}: ${shown}${entries.length > 3 ? ', ...' : ''}); an export would mix with what it holds`,
    1,
    `Extract into a new or empty folder, or pass --force to replace ${directory} whole with this export.`,
  );
}

/**
 * Extracts the export zip at `zipPath` into `directory` as `planExtract` decides (it is asked
 * again here, so a folder filled meanwhile is still refused).
 * @param force `--force` (see planExtract)
 * @param cleanup where the staging folder's removal (and, mid-swap, the old folder's return) is
 *   registered while it exists, for an interruption (SIGINT, SIGTERM)
 * @returns the extracted files, relative to `directory` with `/` separators, sorted, and the plan
 *   followed
 * @throws ExportCliError (exit code 1) for a refused folder (see planExtract), a corrupt zip, a
 *   zip bomb (an entry or the archive inflating past 200 times its compressed size), entries that
 *   would not fit in the free space, or a failed write (its cause the underlying error; the sizes
 *   are checked before any entry is written, src/search/zip-extract.ts); `directory` is then as
 *   it was and the staging folder removed
 */
export async function extractExport(zipPath: string, directory: string, force: boolean, cleanup?: CleanupSteps): Promise<{ files: string[]; plan: ExtractPlan }> {
  const plan = await planExtract(directory, force);
  const target = path.resolve(directory);
  const staging = await makeStaging(target, plan);
  const extracted = path.join(staging, 'export');
  const previous = path.join(staging, 'previous');
  const unregister = cleanup?.add(() => {
    if (existsSync(previous) && !existsSync(target)) renameSync(previous, target);
    rmSync(staging, { recursive: true, force: true });
  });
  try {
    const files = await extractZip(zipPath, extracted, { shownAs: directory }).catch((error: Error) => {
      // A zip bomb, or entries past the free space: refused before any entry is written (zip-extract.ts).
      const hint = error instanceof OversizeError ? error.hint : 'The zip is kept; extract it again, or into another folder.';
      throw new ExportCliError(error.message, 1, hint, { cause: error });
    });
    await moveIntoPlace(extracted, target, previous, plan).catch((error: Error) => {
      throw new ExportCliError(`Could not move the extracted export into ${directory}: ${error.message}`, 1, 'The zip is kept; extract it again, or into another folder.', { cause: error });
    });
    return { files, plan };
  } finally {
    await rm(staging, { recursive: true, force: true });
    unregister?.();
  }
}

/**
 * A fresh staging folder beside `target`, on the same file system so the export moves into place
 * by rename; for `fill`, inside `target` when its parent is not writable (e.g. a mount point).
 */
async function makeStaging(target: string, plan: ExtractPlan): Promise<string> {
  try {
    return await mkdtemp(path.join(path.dirname(target), `.${path.basename(target)}.extract-`));
  } catch (error) {
    if (plan !== 'fill' || !['EACCES', 'EPERM', 'EROFS'].includes((error as NodeJS.ErrnoException).code ?? '')) throw error;
    return mkdtemp(path.join(target, '.extract-'));
  }
}

/**
 * Puts the complete extraction `extracted` at `target`: one rename when `target` is absent; its
 * top-level entries moved in when `target` is an empty folder (it stays the same folder, so a
 * mount point works); for `replace`, `target` moved aside to `previous`, then `extracted` renamed
 * in (on failure `previous` goes back).
 */
async function moveIntoPlace(extracted: string, target: string, previous: string, plan: ExtractPlan): Promise<void> {
  await mkdir(extracted, { recursive: true });
  if (plan === 'create') {
    await rename(extracted, target);
  } else if (plan === 'fill') {
    for (const entry of await readdir(extracted)) await rename(path.join(extracted, entry), path.join(target, entry));
  } else {
    await rename(target, previous);
    await rename(extracted, target).catch(async (error: unknown) => {
      await rename(previous, target);
      throw error;
    });
  }
}
