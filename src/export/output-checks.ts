/**
 * Checks of `edge-events export`'s output paths before any byte is downloaded (docs/USAGE.md,
 * "Exporting a dataset"): `-o` must name a file (not a folder) in an existing folder the user can
 * write in; `--extract DIR` must lie in such a folder. Each refusal names its cause (a folder, a
 * missing parent folder, no permission, a read-only file system) with a hint that fits it,
 * instead of an `EISDIR` after the whole download or an `ENOENT` on a hidden temporary file.
 */
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import path from 'node:path';
import { ExportCliError } from './export-cli-error.js';

/**
 * Checks `-o FILE`: not a folder, and its folder exists and is writable (the download goes to a
 * temporary file beside it, renamed over it at the end).
 * @param output the path as the user gave it
 * @throws ExportCliError (exit code 1) naming the cause
 */
export async function checkZipOutput(output: string): Promise<void> {
  const found = await stat(output).catch(() => null);
  if (found?.isDirectory()) {
    throw new ExportCliError(`-o ${output} is a folder, not a file`, 1, `Name the zip to write, e.g. -o ${path.join(output, 'dataset.zip')}.`);
  }
  await checkWritableFolder(`-o ${output}`, path.dirname(path.resolve(output)));
}

/**
 * Checks that `folder` exists, is a folder, and can be written in (by the process's user, as
 * access(2) with W_OK answers: permissions and a read-only mount).
 * @param subject how the message starts, e.g. `-o ./d.zip` or `--extract ./ds`
 * @throws ExportCliError (exit code 1) naming the cause
 */
export async function checkWritableFolder(subject: string, folder: string): Promise<void> {
  const found = await stat(folder).catch((error: NodeJS.ErrnoException) => error);
  if (found instanceof Error) {
    if (found.code === 'ENOENT') {
      throw new ExportCliError(`${subject}: the folder ${folder} does not exist`, 1, `Create it first (mkdir -p ${folder}), or choose another path.`, { cause: found });
    }
    if (found.code !== 'ENOTDIR') throw found;
  }
  if (found instanceof Error || !found.isDirectory()) {
    throw new ExportCliError(`${subject}: ${folder} is not a folder`, 1, 'Choose a path inside an existing folder.');
  }
  const denied = await access(folder, constants.W_OK).then(() => null, (error: NodeJS.ErrnoException) => error);
  if (denied === null) return;
  if (denied.code === 'EROFS') {
    throw new ExportCliError(`${subject}: ${folder} is on a read-only file system`, 1, 'Choose a folder on a writable disk.', { cause: denied });
  }
  if (denied.code === 'EACCES' || denied.code === 'EPERM') {
    throw new ExportCliError(`${subject}: no permission to write in ${folder}`, 1, 'Choose a folder you can write to, or ask its owner for write access.', { cause: denied });
  }
  throw denied;
}
