#!/usr/bin/env node
/** `edge-events`: the one binary of the package, with its subcommands. */
import { Command } from 'commander';
import { registerEventsCommand } from './client/events-command.js';
import { registerExportCommand } from './export/export-command.js';
import { registerMcpCommand } from './mcp/mcp-command.js';
import { registerSearchCommand } from './search/search-command.js';

const program = new Command('edge-events')
  .description('On-device event store for vision pipelines, and hosted image-search tools')
  .showHelpAfterError();

program
  .command('serve')
  .description('run the event store (settings from the environment; see README)')
  // The server's modules load only for `serve`, so the client commands start without them.
  .action(async () => (await import('./serve.js')).serveUntilStopped());

registerEventsCommand(program);
registerExportCommand(program);
registerSearchCommand(program);
registerMcpCommand(program);

await program.parseAsync(process.argv);
