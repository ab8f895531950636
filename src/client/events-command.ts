/**
 * `edge-events events "<query>"` (docs/USAGE.md, "Asking the store from a shell"): one page of
 * the event search of a running store (docs/API.md, "Event search"), as a table or JSON.
 *
 * Output contract, as `edge-events search`: in JSON mode, success writes the page
 * `{events, count, next_cursor}` to stdout; failure leaves stdout empty and writes
 * `{"error": {"message", "hint"}}` to stderr. In human mode, a table and the next `--cursor` go to
 * stdout, `error: ...` and `hint: ...` to stderr. Exit codes: store-failure.ts. A malformed query
 * exits 1 before anything is sent. What the store sent is printed with its control characters
 * escaped (src/terminal-text.ts; docs/SECURITY.md, "A store or search server the CLI talks to").
 */
import type { Command } from 'commander';
import { registerCommand, runCommand, type ExitCode, type Failure } from '../command-runner.js';
import { eventSearchConditions } from '../events/search-conditions.js';
import { terminalJson, visibleControls } from '../terminal-text.js';
import { renderEventTable } from './event-table.js';
import { StoreClient, StoreUsageError, type EventSearchPage, type StoreFlags } from './store-client.js';
import { describeStoreFailure } from './store-failure.js';

/** Where the command reads its environment and writes its output. */
export interface StoreCliIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  env: Record<string, string | undefined>;
}

interface EventsOptions extends StoreFlags {
  limit?: string;
  cursor?: string;
  json?: boolean;
}

const MAX_LIMIT = 1000;

/** Adds `events` to `program`; its action sets `process.exitCode`. */
export function registerEventsCommand(program: Command): void {
  registerCommand(program, addEventsCommand, { stdout: process.stdout, stderr: process.stderr, env: process.env });
}

/**
 * Runs `edge-events events` in-process, for tests and embedding.
 * @param argv the arguments after `events`, e.g. `['class:person', '--json']`
 * @returns the exit code (0, 1, 2 or 3)
 */
export function runEventsCli(argv: string[], io: StoreCliIo): Promise<ExitCode> {
  return runCommand('events', addEventsCommand, argv, io);
}

function addEventsCommand(program: Command, io: StoreCliIo, setExitCode: (code: ExitCode) => void): void {
  const command = program
    .command('events')
    .description('Search the events of a running store with the query language (docs/API.md, "Event search").')
    .argument('<query>', 'query, e.g. "class:person>=2 device:cam-1 date>=2026-11-01"; quote it for the shell')
    .option('--store <url>', 'base URL of the store (env STORE_URL, default http://127.0.0.1:8001)')
    .option('-k, --api-key <key>', 'the store\'s API key (env API_KEY)')
    .option('--limit <n>', `events per page, 1..${MAX_LIMIT} (default 100)`)
    .option('--cursor <token>', 'next page: the cursor printed by the previous one')
    .option('--json', 'machine-readable output: {events,count,next_cursor} on stdout, {error:{message,hint}} on stderr')
    .action(async (query: string, options: EventsOptions) => {
      setExitCode(await executeEvents(query, options, io));
    });
  // The failure's hint points to --help: the usage after it would follow a --json failure's one
  // JSON line on stderr, and bury a plain one.
  command.showHelpAfterError(false);
  command.configureOutput({
    writeOut: (text) => io.stdout.write(text),
    writeErr: (text) => io.stderr.write(text),
    outputError: (text, write) => {
      const failure: Failure = { exitCode: 1, message: text.trim().replace(/^error: /, ''), hint: 'See edge-events events --help. Quote the query as one argument; put -- before a query that starts with "-".' };
      write(renderFailure(failure, command.opts().json === true));
    },
  });
}

async function executeEvents(query: string, options: EventsOptions, io: StoreCliIo): Promise<ExitCode> {
  const json = options.json === true;
  try {
    eventSearchConditions(query);
    const limit = parseLimit(options.limit);
    const page = await new StoreClient(options, io.env).searchEvents(query, { limit, cursor: options.cursor });
    io.stdout.write(json ? `${terminalJson(page)}\n` : humanPage(page));
    return 0;
  } catch (error) {
    const failure = describeStoreFailure(error);
    io.stderr.write(renderFailure(failure, json));
    return failure.exitCode;
  }
}

function parseLimit(limit: string | undefined): number | undefined {
  if (limit === undefined) return undefined;
  const value = Number(limit);
  if (!/^\d+$/.test(limit) || value < 1 || value > MAX_LIMIT) {
    throw new StoreUsageError(`--limit must be an integer from 1 to ${MAX_LIMIT}, got ${JSON.stringify(limit)}`, 'Pass e.g. --limit 100.');
  }
  return value;
}

function humanPage(page: EventSearchPage): string {
  if (page.events.length === 0 && page.next_cursor === null) return 'No events.\n';
  const next = page.next_cursor === null ? 'No more events.\n' : `Next page: --cursor ${visibleControls(page.next_cursor)}\n`;
  const table = page.events.length === 0 ? '' : renderEventTable(page.events);
  return `${table}${page.count} ${page.count === 1 ? 'event' : 'events'}.\n${next}`;
}

function renderFailure(failure: Failure, json: boolean): string {
  return json
    ? `${terminalJson({ error: { message: failure.message, hint: failure.hint } })}\n`
    : `error: ${visibleControls(failure.message, { lines: true })}\nhint: ${visibleControls(failure.hint, { lines: true })}\n`;
}
