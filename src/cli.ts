#!/usr/bin/env node
/** `edge-events`: the one binary of the package, with its subcommands. */
import { Command } from 'commander';
import { packageVersion } from './paths.js';

const program = new Command('edge-events')
  .description('On-device event store for vision pipelines, and hosted image-search tools')
  .version(packageVersion, '-V, --version', 'print the version of edge-event-store')
  .showHelpAfterError();

program
  .command('serve')
  .description('run the event store (settings from the environment; see docs/OPERATIONS.md, "Settings")')
  .option('--check-config', 'read and validate the settings of the environment, say what is wrong with them, and exit (0: the store would start with them, 1: it would not) without serving')
  // The server's modules load only for `serve`, so the client commands start without them.
  .action(async (options: { checkConfig?: boolean }) => {
    const serve = await import('./serve.js');
    if (options.checkConfig) process.exitCode = serve.checkSettings(process.env, process);
    else await serve.serveUntilStopped();
  });

// And `serve` starts without the client commands' modules: about 60 modules, cli-progress and
// yauzl among them, 100 ms of a 500 ms start (native-bench/PROFILE.md, "Small events, one sync
// per append", its start-up paragraph).
if (process.argv[2] !== 'serve') {
  const [events, exportCommand, search, mcp, check, bench] = await Promise.all([
    import('./client/events-command.js'),
    import('./export/export-command.js'),
    import('./search/search-command.js'),
    import('./mcp/mcp-command.js'),
    import('./check/check-command.js'),
    import('./bench/bench-command.js'),
  ]);
  events.registerEventsCommand(program);
  exportCommand.registerExportCommand(program);
  search.registerSearchCommand(program);
  mcp.registerMcpCommand(program);
  check.registerCheckCommand(program);
  bench.registerBenchCommand(program);
}

await program.parseAsync(process.argv);
