/**
 * `edge-events search "<query>"` (docs/SEARCH.md, the section of that name; exit codes in "The
 * hosted API"): one page of workspace search, or with `--export` a dataset export of the results.
 *
 * Output contract: in JSON mode, success writes `{results, total, cursor}` (export:
 * `{export: {id, location, zip, files}}`) to stdout; failure leaves stdout empty and writes
 * `{"error": {"message", "hint"}}` to stderr. In human mode, a table and the next `--cursor`
 * go to stdout, `error: ...` and `hint: ...` lines to stderr. Exit codes: `failure.ts`.
 * A malformed query exits 1 before anything is sent. What the hosted API sent is printed with its
 * control characters escaped (src/terminal-text.ts; docs/SECURITY.md, "A store or search server
 * the CLI talks to").
 */
import type { Command } from 'commander';
import { registerCommand, runCommand, type ExitCode, type Failure } from '../command-runner.js';
import { terminalJson, visibleControls } from '../terminal-text.js';
import { SearchClient } from './client.js';
import type { SearchClientOptions } from './client.js';
import { describeFailure } from './failure.js';
import type { ProgressStream } from './download-progress.js';
import { parseFieldList, validateQuery } from './request-validation.js';
import { renderResultTable } from './result-table.js';
import { resolveConnection, SearchUsageError } from './settings.js';
import { DEFAULT_PAGE_SIZE, WORKSPACE_SEARCH_FIELDS } from './types.js';
import type { SearchExportResult, WorkspaceSearchField, WorkspaceSearchResponse } from './types.js';

/** Where the command reads its environment and writes its output. */
export interface SearchCliIo {
  stdout: { write(text: string): unknown };
  /** When a TTY, an export draws its download progress bar here. */
  stderr: ProgressStream;
  env: Record<string, string | undefined>;
  /** Client overrides (tests: `fetch`, a recording `sleep`, fast `retry`). */
  client?: Pick<SearchClientOptions, 'fetch' | 'sleep' | 'retry'>;
}

/** Fields requested when `--fields` is absent, so the table has something to show. */
export const DEFAULT_CLI_FIELDS: WorkspaceSearchField[] = ['filename', 'width', 'height', 'tags', 'projects', 'split'];

/** Options as commander parses them; validated by `executeSearch`. */
interface SearchOptions {
  limit?: string;
  cursor?: string;
  fields?: string;
  json?: boolean;
  export?: boolean;
  format?: string;
  location?: string;
  dataset?: string;
  annotationGroup?: string;
  name?: string;
  extract: boolean;
  apiKey?: string;
  workspace?: string;
  baseUrl?: string;
}

const EXPORT_ONLY: [keyof SearchOptions, string][] = [
  ['format', '-f/--format'], ['location', '-l/--location'], ['dataset', '-d/--dataset'],
  ['annotationGroup', '-g/--annotation-group'], ['name', '--name'],
];
const LISTING_ONLY: [keyof SearchOptions, string][] = [['limit', '--limit'], ['cursor', '--cursor'], ['fields', '--fields']];

/**
 * Adds the `search` subcommand to `program`. Its action sets `process.exitCode`; `cli.ts` must
 * run the program with `await program.parseAsync(process.argv)`.
 */
export function registerSearchCommand(program: Command): void {
  registerCommand(program, addSearchCommand, { stdout: process.stdout, stderr: process.stderr, env: process.env });
}

/**
 * Runs `edge-events search` in-process, for tests and embedding.
 * @param argv the arguments after `search`, e.g. `['class:car', '--json', '--limit', '10']`
 * @returns the exit code (0, 1, 2 or 3)
 */
export function runSearchCli(argv: string[], io: SearchCliIo): Promise<ExitCode> {
  return runCommand('search', addSearchCommand, argv, io);
}

function addSearchCommand(program: Command, io: SearchCliIo, setExitCode: (code: ExitCode) => void): void {
  const command = program
    .command('search')
    .description('Search the images of the hosted workspace with the query language, or export the results as a dataset.')
    .argument('<query>', 'query, e.g. "class:car>=2 -split:test (tag:day OR tag:dusk)"; quote it for the shell')
    .option('--limit <n>', `results per page (default ${DEFAULT_PAGE_SIZE}; the hosted API sets the maximum)`)
    .option('--cursor <token>', 'continuation token printed by the previous page')
    .option('--fields <list>', `comma-separated fields: ${WORKSPACE_SEARCH_FIELDS.join(', ')} (default ${DEFAULT_CLI_FIELDS.join(',')})`)
    .option('--json', 'machine-readable output: {results,total,cursor} on stdout, {error:{message,hint}} on stderr')
    .option('--export', 'export the results as a dataset instead of listing them')
    .option('-f, --format <format>', 'export format, e.g. coco, yolo, voc (default coco)')
    .option('-l, --location <dir>', 'export directory (default ./search-export-<format>)')
    .option('-d, --dataset <project>', 'export only images of this project')
    .option('-g, --annotation-group <group>', 'export only this annotation group')
    .option('--name <name>', 'name of the export (and of its zip)')
    .option('--no-extract', 'keep the downloaded zip instead of extracting it')
    .option('-k, --api-key <key>', 'API key of the hosted API (env SEARCH_API_KEY)')
    .option('-w, --workspace <workspace>', 'workspace to search (env SEARCH_WORKSPACE)')
    .option('--base-url <url>', 'base URL of the hosted search API (env SEARCH_BASE_URL)')
    .action(async (query: string, options: SearchOptions) => {
      setExitCode(await executeSearch(query, options, io));
    });
  command.configureOutput({
    writeOut: (text) => io.stdout.write(text),
    writeErr: (text) => io.stderr.write(text),
    outputError: (text, write) => {
      const message = text.trim().replace(/^error: /, '');
      const failure: Failure = { exitCode: 1, message, hint: 'See edge-events search --help. Quote the query as one argument; put -- before a query that starts with "-".' };
      write(command.opts().json === true ? jsonFailure(failure) : humanFailure(failure));
    },
  });
}

/** Validates, runs and prints one search or export; returns the exit code. */
async function executeSearch(query: string, options: SearchOptions, io: SearchCliIo): Promise<ExitCode> {
  const json = options.json === true;
  try {
    validateQuery(query);
    checkModeOptions(options);
    const connection = resolveConnection(options, io.env);
    const client = new SearchClient({ ...connection, ...io.client });
    if (options.export) {
      const result = await client.searchExport({
        query, format: options.format, location: options.location, dataset: options.dataset,
        annotationGroup: options.annotationGroup, name: options.name, extract: options.extract, progress: io.stderr,
      });
      io.stdout.write(json ? `${terminalJson({ export: exportSummary(result) })}\n` : humanExport(result));
    } else {
      const page = await client.workspaceSearch({
        query, pageSize: pageSize(options.limit), continuationToken: options.cursor,
        fields: options.fields === undefined ? DEFAULT_CLI_FIELDS : parseFieldList(options.fields, WORKSPACE_SEARCH_FIELDS),
      });
      io.stdout.write(json ? `${terminalJson({ results: page.results, total: page.total, cursor: page.continuationToken ?? null })}\n` : humanPage(page));
    }
    return 0;
  } catch (error) {
    const failure = describeFailure(error);
    io.stderr.write(json ? jsonFailure(failure) : humanFailure(failure));
    return failure.exitCode;
  }
}

/** Export options without `--export`, or listing options with it, are usage errors. */
function checkModeOptions(options: SearchOptions): void {
  const misplaced = options.export
    ? LISTING_ONLY.filter(([key]) => options[key] !== undefined).map(([, flag]) => flag)
    : [...EXPORT_ONLY.filter(([key]) => options[key] !== undefined).map(([, flag]) => flag), ...(options.extract ? [] : ['--no-extract'])];
  if (misplaced.length > 0) {
    const mode = options.export ? 'with --export' : 'without --export';
    throw new SearchUsageError(`${misplaced.join(', ')} cannot be used ${mode}`, options.export
      ? 'An export covers every result; drop the paging options.'
      : 'Add --export to export the results as a dataset.');
  }
  if (options.dataset !== undefined && options.annotationGroup !== undefined) {
    throw new SearchUsageError('-d/--dataset and -g/--annotation-group cannot be combined', 'Pass one of them.');
  }
}

function pageSize(limit: string | undefined): number {
  if (limit === undefined) return DEFAULT_PAGE_SIZE;
  const value = Number(limit);
  if (!/^\d+$/.test(limit) || value < 1) {
    throw new SearchUsageError(`--limit must be an integer of 1 or more, got ${JSON.stringify(limit)}`, `Pass e.g. --limit ${DEFAULT_PAGE_SIZE}.`);
  }
  return value;
}

function humanPage(page: WorkspaceSearchResponse): string {
  if (page.results.length === 0) return `No results (total ${page.total}).\n`;
  const next = page.continuationToken ? `Next page: --cursor ${visibleControls(page.continuationToken)}\n` : 'No more results.\n';
  return `${renderResultTable(page.results)}\n${page.results.length} of ${page.total} results.\n${next}`;
}

function exportSummary(result: SearchExportResult): object {
  return { id: result.exportId, location: result.location, zip: result.zipPath, files: result.files };
}

function humanExport(result: SearchExportResult): string {
  return result.zipPath === null
    ? `Export ${visibleControls(result.exportId)}: ${result.files.length} files extracted to ${visibleControls(result.location)}\n`
    : `Export ${visibleControls(result.exportId)}: zip saved to ${visibleControls(result.zipPath)}\n`;
}

function jsonFailure(failure: Failure): string {
  return `${terminalJson({ error: { message: failure.message, hint: failure.hint } })}\n`;
}

function humanFailure(failure: Failure): string {
  return `error: ${visibleControls(failure.message, { lines: true })}\nhint: ${visibleControls(failure.hint, { lines: true })}\n`;
}
