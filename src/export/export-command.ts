/**
 * `edge-events export "<query>" -f coco|yolo|labelstudio -o dataset.zip` (docs/API.md, "Dataset
 * export", "CLI"): downloads a dataset export from a store (`GET /v2/export`) into a zip,
 * optionally extracts it, and prints what it holds.
 *
 * Output: a progress line on stderr when it is a TTY (bytes and rate: the size is not known
 * ahead), then one summary line on stdout; failures print `error: ...` (a refused query: the
 * store's detail, with a caret under the bad column) and `hint: ...` on stderr. Exit codes, as
 * `edge-events search`'s: 0 success, 2 API key refused (401), 1 anything else.
 */
import { Command, CommanderError, Option } from 'commander';
import type { ProgressStream } from '../search/download-progress.js';
import { formatBytes } from '../search/download-progress.js';
import { extractZip } from '../search/zip-extract.js';
import { ExportCliError } from './export-cli-error.js';
import { downloadExport } from './export-download.js';
import { EXPORT_FORMATS } from './export-types.js';
import type { ExportFormat } from './export-types.js';

/** Where the command reads its environment and writes its output. */
export interface ExportCliIo {
  stdout: { write(text: string): unknown };
  /** When a TTY, the download's progress line is drawn here. */
  stderr: ProgressStream;
  env: Record<string, string | undefined>;
}

export type ExportExitCode = 0 | 1 | 2;

interface ExportOptions {
  format: ExportFormat;
  output: string;
  store?: string;
  apiKey?: string;
  extract?: string;
}

/** The store asked when neither --store nor STORE_URL is given. */
export const DEFAULT_STORE_URL = 'http://localhost:8001';

/**
 * Adds the `export` subcommand to `program`. Its action sets `process.exitCode`; `cli.ts` must
 * run the program with `await program.parseAsync(process.argv)`.
 */
export function registerExportCommand(program: Command): void {
  addExportCommand(program, { stdout: process.stdout, stderr: process.stderr, env: process.env }, (code) => {
    process.exitCode = code;
  });
}

/**
 * Runs `edge-events export` in-process, for tests and embedding.
 * @param argv the arguments after `export`, e.g. `['device_id:cam-1', '-f', 'yolo', '-o', 'd.zip']`
 * @returns the exit code (0, 1 or 2)
 */
export async function runExportCli(argv: string[], io: ExportCliIo): Promise<ExportExitCode> {
  const program = new Command('edge-events').exitOverride();
  let exitCode: ExportExitCode = 0;
  addExportCommand(program, io, (code) => {
    exitCode = code;
  });
  try {
    await program.parseAsync(['export', ...argv], { from: 'user' });
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
    return error.exitCode === 0 ? 0 : 1;
  }
  return exitCode;
}

function addExportCommand(program: Command, io: ExportCliIo, setExitCode: (code: ExportExitCode) => void): void {
  const command = program
    .command('export')
    .description('Export the events a query matches from a store, as a dataset zip of their images and annotations.')
    .argument('<query>', 'the store\'s query; quote it for the shell')
    .addOption(new Option('-f, --format <format>', 'dataset format').choices([...EXPORT_FORMATS]).default('coco'))
    .option('-o, --output <file>', 'the zip to write (replaced only when the download is complete)', './dataset.zip')
    .option('--store <url>', `base URL of the store (env STORE_URL; default ${DEFAULT_STORE_URL})`)
    .option('-k, --api-key <key>', 'the store\'s API key, sent as X-API-Key (env API_KEY)')
    .option('--extract <dir>', 'also extract the zip into this directory (all or nothing)')
    .action(async (query: string, options: ExportOptions) => {
      setExitCode(await executeExport(query, options, io));
    });
  command.configureOutput({
    writeOut: (text) => io.stdout.write(text),
    writeErr: (text) => io.stderr.write(text),
    outputError: (text, write) => {
      write(`error: ${text.trim().replace(/^error: /, '')}\nhint: See edge-events export --help. Quote the query as one argument.\n`);
    },
  });
}

async function executeExport(query: string, options: ExportOptions, io: ExportCliIo): Promise<ExportExitCode> {
  try {
    const { zipPath, summary } = await downloadExport({
      storeUrl: options.store ?? io.env.STORE_URL ?? DEFAULT_STORE_URL,
      query,
      format: options.format,
      apiKey: options.apiKey ?? io.env.API_KEY,
      output: options.output,
      progress: io.stderr,
    });
    io.stdout.write(`Saved ${zipPath} (${options.format}): ${summary.entries} entries, ${summary.images} images, ${formatBytes(summary.bytes)}\n`);
    if (options.extract !== undefined) {
      const files = await extractZip(zipPath, options.extract).catch((err: Error) => {
        throw new ExportCliError(err.message, 1, 'The zip is kept; extract it again, or into another directory.', { cause: err });
      });
      io.stdout.write(`Extracted ${files.length} files to ${options.extract}\n`);
    }
    return 0;
  } catch (error) {
    const failure = error instanceof ExportCliError
      ? error
      : new ExportCliError(error instanceof Error ? error.message : String(error), 1, 'Retry; if it persists, report it with the message above.');
    io.stderr.write(`error: ${failure.message}\nhint: ${failure.hint}\n`);
    return failure.exitCode;
  }
}
