/**
 * `edge-events export "<query>" -f coco|yolo|labelstudio -o dataset.zip` (docs/API.md, "Dataset
 * export", "CLI"): downloads a dataset export from a store (`GET /v2/export`) into a zip,
 * optionally extracts it, and prints what it holds.
 *
 * Output: a progress line on stderr when it is a TTY (bytes and rate: the size is not known
 * ahead), then one summary line on stdout; failures print `error: ...` (a refused query: the
 * store's detail, with a caret under the bad column) and `hint: ...` on stderr. Exit codes, as
 * `edge-events events` (src/client/store-failure.ts): 0 success, 2 API key refused (401), 3 no
 * event store at --store, 1 anything else. A malformed query exits 1 before anything is sent.
 * The binary, interrupted by SIGINT or SIGTERM, removes its temporary files, restores the
 * terminal and exits 130 or 143 (docs/USAGE.md, "Exporting a dataset"). A failure's message,
 * which may carry the store's detail or a zip entry's name, is printed with its control characters
 * escaped (src/terminal-text.ts; docs/SECURITY.md, "A store or search server the CLI talks to").
 */
import { Option, type Command } from 'commander';
import { registerCommand, runCommand, type ExitCode } from '../command-runner.js';
import { DEFAULT_STORE_URL, StoreClient } from '../client/store-client.js';
import { describeStoreFailure } from '../client/store-failure.js';
import { eventSearchConditions } from '../events/search-conditions.js';
import { visibleControls } from '../terminal-text.js';
import type { ProgressStream } from '../search/download-progress.js';
import { formatBytes } from '../search/download-progress.js';
import { ExportCliError } from './export-cli-error.js';
import { downloadExport } from './export-download.js';
import { extractExport, planExtract } from './extract-target.js';
import { interruptCleanup } from './interrupt-cleanup.js';
import { checkZipOutput } from './output-checks.js';
import { EXPORT_FORMATS } from './export-types.js';
import type { ExportFormat } from './export-types.js';

/** Where the command reads its environment and writes its output. */
export interface ExportCliIo {
  stdout: { write(text: string): unknown };
  /** When a TTY, the download's progress line is drawn here. */
  stderr: ProgressStream;
  env: Record<string, string | undefined>;
  /**
   * True for the binary: SIGINT and SIGTERM during the export remove its temporary files,
   * restore the terminal and exit 130 or 143 (src/export/interrupt-cleanup.ts). In-process runs
   * leave signals to their host.
   */
  exitOnSignal?: boolean;
}

interface ExportOptions {
  format: ExportFormat;
  output: string;
  store?: string;
  apiKey?: string;
  extract?: string;
  force?: boolean;
}

/**
 * Adds the `export` subcommand to `program`. Its action sets `process.exitCode`; `cli.ts` must
 * run the program with `await program.parseAsync(process.argv)`.
 */
export function registerExportCommand(program: Command): void {
  registerCommand(program, addExportCommand, { stdout: process.stdout, stderr: process.stderr, env: process.env, exitOnSignal: true });
}

/**
 * Runs `edge-events export` in-process, for tests and embedding.
 * @param argv the arguments after `export`, e.g. `['device_id:cam-1', '-f', 'yolo', '-o', 'd.zip']`
 * @returns the exit code (0, 1, 2 or 3)
 */
export function runExportCli(argv: string[], io: ExportCliIo): Promise<ExitCode> {
  return runCommand('export', addExportCommand, argv, io);
}

function addExportCommand(program: Command, io: ExportCliIo, setExitCode: (code: ExitCode) => void): void {
  const command = program
    .command('export')
    .description('Export the events a query matches from a store, as a dataset zip of their images and annotations.')
    .argument('<query>', 'the store\'s query; quote it for the shell')
    .addOption(new Option('-f, --format <format>', 'dataset format').choices([...EXPORT_FORMATS]).default('coco'))
    .option('-o, --output <file>', 'the zip to write (replaced only when the download is complete)', './dataset.zip')
    .option('--store <url>', `base URL of the store (env STORE_URL; default ${DEFAULT_STORE_URL})`)
    .option('-k, --api-key <key>', 'the store\'s API key, sent as X-API-Key (env API_KEY)')
    .option('--extract <dir>', 'also extract the zip into this folder, all or nothing; it must be new or empty')
    .option('--force', 'with --extract: replace a non-empty folder whole with this export')
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

async function executeExport(query: string, options: ExportOptions, io: ExportCliIo): Promise<ExitCode> {
  const cleanup = interruptCleanup(io.exitOnSignal === true);
  try {
    eventSearchConditions(query);
    const client = new StoreClient(options, io.env);
    await checkZipOutput(options.output);
    if (options.extract !== undefined) await planExtract(options.extract, options.force === true, options.output);
    const { zipPath, summary } = await downloadExport(client, { query, format: options.format, output: options.output, progress: io.stderr, cleanup });
    io.stdout.write(`Saved ${zipPath} (${options.format}): ${summary.entries} ${summary.entries === 1 ? 'entry' : 'entries'}, ${summary.images} ${summary.images === 1 ? 'image' : 'images'}, ${formatBytes(summary.bytes)}\n`);
    if (options.extract !== undefined) {
      const { files, plan } = await extractExport(zipPath, options.extract, options.force === true, cleanup);
      io.stdout.write(`Extracted ${files.length} files to ${options.extract}${plan === 'replace' ? ' (replacing what it held)' : ''}\n`);
    }
    return 0;
  } catch (error) {
    const failure = error instanceof ExportCliError ? error : describeStoreFailure(error);
    io.stderr.write(`error: ${visibleControls(failure.message, { lines: true })}\nhint: ${visibleControls(failure.hint, { lines: true })}\n`);
    return failure.exitCode;
  } finally {
    cleanup.release();
  }
}
