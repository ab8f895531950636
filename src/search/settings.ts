/**
 * Where the search CLI and MCP server get their connection settings: a flag wins over the
 * environment (SEARCH_BASE_URL, SEARCH_API_KEY, SEARCH_WORKSPACE, read and validated by
 * `loadConfig` of `src/config.ts`). SEARCH_BASE_URL has no default.
 */
import { loadConfig } from '../config.js';
import { SearchArgumentError, SearchCredentialsError } from './errors.js';

/** Flags that override the environment (`--base-url`, `-k/--api-key`, `-w/--workspace`). */
export interface ConnectionFlags {
  baseUrl?: string;
  apiKey?: string;
  workspace?: string;
}

export interface ConnectionSettings {
  baseUrl: string;
  apiKey: string;
  workspace: string;
}

/** A usage mistake of the CLI, with the hint printed next to it (exit code 1). */
export class SearchUsageError extends SearchArgumentError {
  constructor(message: string, readonly hint: string) {
    super(message);
  }
}

/**
 * Resolves the connection settings, each from its flag or else its environment variable.
 * Only the three search settings are read, so an unrelated bad setting (e.g. PORT) does not
 * break a search from a laptop.
 * @throws SearchUsageError for an invalid or missing base URL (exit 1);
 *   SearchCredentialsError for a missing key or workspace (exit 2)
 */
export function resolveConnection(flags: ConnectionFlags, env: Record<string, string | undefined>): ConnectionSettings {
  let config;
  try {
    config = loadConfig({
      SEARCH_BASE_URL: flags.baseUrl ?? env.SEARCH_BASE_URL,
      SEARCH_API_KEY: flags.apiKey ?? env.SEARCH_API_KEY,
      SEARCH_WORKSPACE: flags.workspace ?? env.SEARCH_WORKSPACE,
    });
  } catch {
    // loadConfig's only check on these three settings is SEARCH_BASE_URL being an http(s) URL.
    const source = flags.baseUrl !== undefined ? '--base-url' : 'SEARCH_BASE_URL';
    throw new SearchUsageError(`${source} must be an http(s) URL, got ${JSON.stringify(flags.baseUrl ?? env.SEARCH_BASE_URL)}`, 'Pass the base URL of the hosted search API, e.g. --base-url https://api.example.com');
  }
  if (config.searchBaseUrl === undefined) {
    throw new SearchUsageError('No base URL for the hosted search API', 'Pass --base-url or set SEARCH_BASE_URL.');
  }
  if (config.searchApiKey === undefined) throw new SearchCredentialsError('apiKey', 'No API key for the hosted search API');
  if (config.searchWorkspace === undefined) throw new SearchCredentialsError('workspace', 'No workspace selected for the hosted search API');
  return { baseUrl: config.searchBaseUrl, apiKey: config.searchApiKey, workspace: config.searchWorkspace };
}
