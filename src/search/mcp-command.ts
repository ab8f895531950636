/**
 * The `mcp` subcommand (docs/SEARCH.md, "MCP server: `edge-events mcp`"). The MCP SDK and zod load
 * only when it runs: importing them costs the store's start-up about half a second.
 */
import type { Command } from 'commander';
import type { ConnectionFlags } from './settings.js';

/** Adds `mcp` to `program`: the stdio MCP server of mcp-server.ts. */
export function registerMcpCommand(program: Command): void {
  program
    .command('mcp')
    .description('Run the MCP server (stdio) with the tools images_search and images_workspace_search.')
    .option('-k, --api-key <key>', 'API key of the hosted API (env SEARCH_API_KEY)')
    .option('-w, --workspace <workspace>', 'workspace to search (env SEARCH_WORKSPACE)')
    .option('--base-url <url>', 'base URL of the hosted search API (env SEARCH_BASE_URL)')
    .action(async (flags: ConnectionFlags) => {
      const { runMcpServer } = await import('./mcp-server.js');
      await runMcpServer(flags);
    });
}
