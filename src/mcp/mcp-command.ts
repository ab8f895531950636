/**
 * The `mcp` subcommand (docs/SEARCH.md, "MCP server: `edge-events mcp`"). The MCP SDK and zod load
 * only when it runs: importing them costs the store's start-up about half a second.
 */
import type { Command } from 'commander';
import type { ConnectionFlags } from '../search/settings.js';

/** Adds `mcp` to `program`: the stdio MCP server of mcp-server.ts. */
export function registerMcpCommand(program: Command): void {
  program
    .command('mcp')
    .description('Run the MCP server (stdio) with the tools images_search, images_workspace_search and events_search.')
    .option('-k, --api-key <key>', 'API key of the hosted API (env SEARCH_API_KEY)')
    .option('-w, --workspace <workspace>', 'workspace to search (env SEARCH_WORKSPACE)')
    .option('--base-url <url>', 'base URL of the hosted search API (env SEARCH_BASE_URL)')
    .option('--store <url>', 'base URL of the event store events_search asks (env STORE_URL, default http://127.0.0.1:8001)')
    .option('--store-api-key <key>', 'the event store\'s API key (env API_KEY)')
    .action(async (options: ConnectionFlags & { store?: string; storeApiKey?: string }) => {
      const { runMcpServer } = await import('./mcp-server.js');
      const { store, storeApiKey, ...flags } = options;
      await runMcpServer(flags, { store, apiKey: storeApiKey });
    });
}
