/**
 * MCP server `edge-events mcp` (docs/SEARCH.md, "MCP server: `edge-events mcp`"): a stdio server
 * with `images_search` (project search) and `images_workspace_search` (workspace search in the
 * query language) on the hosted API, and `events_search` (the query language over a store's own
 * events, docs/API.md "Event search"), all read-only and idempotent. A failure comes back as a tool error (`isError`)
 * whose text carries the hosted message and a hint.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import pino from 'pino';
import { z } from 'zod';
import { loadConfig } from '../config.js';
import { SearchClient } from '../search/client.js';
import type { SearchClientOptions } from '../search/client.js';
import { StoreClient, type StoreFlags } from '../client/store-client.js';
import { describeStoreFailure } from '../client/store-failure.js';
import { eventSearchConditions } from '../events/search-conditions.js';
import type { Failure } from '../command-runner.js';
import { describeFailure } from '../search/failure.js';
import { resolveConnection } from '../search/settings.js';
import type { ConnectionFlags } from '../search/settings.js';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, MEDIA_TYPES, PROJECT_SEARCH_FIELDS, WORKSPACE_SEARCH_FIELDS } from '../search/types.js';

export interface SearchMcpOptions {
  /** `--base-url`, `-k/--api-key`, `-w/--workspace`; each wins over its environment variable. */
  flags: ConnectionFlags;
  /** `--store` and `--store-api-key` of `events_search`; each wins over STORE_URL and API_KEY. */
  store?: StoreFlags;
  /** SEARCH_BASE_URL, SEARCH_API_KEY, SEARCH_WORKSPACE are read from here at each call. */
  env: Record<string, string | undefined>;
  /** Client overrides (tests: a recording `sleep`, fast `retry`; the command: a stderr logger). */
  client?: Pick<SearchClientOptions, 'fetch' | 'sleep' | 'retry' | 'logger'>;
}

/** Both tools only read, and a repeated call has no further effect. */
const READ_ONLY = { readOnlyHint: true, idempotentHint: true, destructiveHint: false, openWorldHint: true };

const mediaTypes = z.array(z.enum(MEDIA_TYPES)).min(1).optional().describe('Media to return: image, video or both (default image)');

/**
 * Builds the MCP server with its three tools; connect it to a transport to serve. Settings are
 * resolved at each call, so a missing key or workspace is reported as a tool error rather than
 * keeping the server from starting. Arguments are strict: an unknown one is a tool error naming
 * it (dropping it would answer an unfiltered page as if it had been applied).
 */
export function createSearchMcpServer(options: SearchMcpOptions): McpServer {
  // Informational only: MCP clients show it next to the server name.
  const server = new McpServer({ name: 'edge-events-search', version: '0.1.0' });
  registerImagesSearch(server, options);
  registerWorkspaceSearch(server, options);
  registerEventsSearch(server, options);
  return server;
}

/**
 * A hosted search client with the settings resolved now, each flag over its environment variable.
 * @param workspace overrides the configured one (the `workspace/` of a `workspace/slug` project id)
 * @throws SearchUsageError for an invalid or missing base URL; SearchCredentialsError for a
 *   missing key or workspace (resolveConnection): toolResult answers either as a tool error
 */
function searchClientFor(options: SearchMcpOptions, workspace?: string): SearchClient {
  const flags = workspace === undefined ? options.flags : { ...options.flags, workspace };
  return new SearchClient({ ...resolveConnection(flags, options.env), ...options.client });
}

/** `images_search`: project search on the hosted API (docs/SEARCH.md, "MCP server: `edge-events mcp`"). */
function registerImagesSearch(server: McpServer, options: SearchMcpOptions): void {
  server.registerTool('images_search', {
    title: 'Search images in a project',
    description: 'Searches the images of one hosted project. Modes combine: semantic text (query), similarity to an image (like_image), '
      + 'tag, class, dataset membership, batch and annotation-job filters. Pages with offset/limit; answers {offset, total, results}.',
    inputSchema: z.strictObject({
      project_id: z.string().min(1).describe('Project slug in the configured workspace, or workspace/slug'),
      prompt: z.string().min(1).optional().describe('Semantic text search; results sorted by similarity'),
      limit: z.number().int().min(1).max(MAX_PAGE_SIZE).default(DEFAULT_PAGE_SIZE).describe(`Results per page, 1 to ${MAX_PAGE_SIZE}`),
      offset: z.number().int().min(0).default(0).describe('Results to skip'),
      like_image: z.string().min(1).optional().describe('Image id; results sorted by similarity to it'),
      tag: z.string().min(1).optional().describe('Only images with this tag'),
      class_name: z.string().min(1).optional().describe('Only images with this class'),
      in_dataset: z.boolean().optional().describe('true: only images in the project dataset (not batch or annotation-job staging)'),
      batch: z.boolean().optional().describe('true: only images in any batch'),
      batch_id: z.string().min(1).optional().describe('Only images in this batch'),
      annotation_job: z.boolean().optional().describe('true: only images in any annotation job'),
      annotation_job_id: z.string().min(1).optional().describe('Only images in this annotation job'),
      mediaTypes,
      fields: z.array(z.enum(PROJECT_SEARCH_FIELDS)).min(1).optional().describe('Result fields (default id, created)'),
    }),
    annotations: { title: 'Search images in a project', ...READ_ONLY },
  }, async (args) => toolResult(async () => {
    const workspace = /^([^/]+)\//.exec(args.project_id)?.[1];
    return searchClientFor(options, workspace).search(args.project_id, {
      prompt: args.prompt, limit: args.limit, offset: args.offset, likeImage: args.like_image, tag: args.tag,
      className: args.class_name, inDataset: args.in_dataset, batch: args.batch, batchId: args.batch_id,
      annotationJob: args.annotation_job, annotationJobId: args.annotation_job_id, mediaTypes: args.mediaTypes, fields: args.fields,
    });
  }));
}

/** `images_workspace_search`: workspace search in the query language on the hosted API (docs/SEARCH.md, "MCP server: `edge-events mcp`", "Query language"). */
function registerWorkspaceSearch(server: McpServer, options: SearchMcpOptions): void {
  server.registerTool('images_workspace_search', {
    title: 'Search images across the workspace',
    description: 'Searches every image of the hosted workspace with the query language: free text (semantic), like-image:ID, tag:, '
      + 'filename: (* for partial), split:train|test|valid, job:, min-/max-width:, min-/max-height:, min-/max-annotations:, class:NAME, '
      + 'class:NAME>=N, date:YYYY-MM-DD, date>=DAY, project:, dataset:, combined with AND, OR, NOT, parentheses and a leading minus. '
      + 'Answers {total, results, continuation_token}; pass continuation_token back for the next page.',
    inputSchema: z.strictObject({
      query: z.string().trim().min(1).describe('Query in the search language (required, non-empty)'),
      page_size: z.number().int().min(1).default(DEFAULT_PAGE_SIZE).describe('Results per page (default 50; the hosted API sets the maximum)'),
      continuation_token: z.string().min(1).optional().describe('continuation_token of the previous page of the same query'),
      mediaTypes,
      fields: z.array(z.enum(WORKSPACE_SEARCH_FIELDS)).min(1).optional().describe('Result fields'),
    }),
    annotations: { title: 'Search images across the workspace', ...READ_ONLY },
  }, async (args) => toolResult(async () => {
    const page = await searchClientFor(options).workspaceSearch({
      query: args.query, pageSize: args.page_size, continuationToken: args.continuation_token, mediaTypes: args.mediaTypes, fields: args.fields,
    });
    return { total: page.total, results: page.results, continuation_token: page.continuationToken ?? null };
  }));
}

/** `events_search`: the query language over a store's own events (docs/API.md, "Event search"). */
function registerEventsSearch(server: McpServer, options: SearchMcpOptions): void {
  server.registerTool('events_search', {
    title: 'Search the events of an edge event store',
    description: 'Searches the inference events stored on a device with the query language: class:NAME, class:NAME>=N, '
      + 'min-confidence:X, device:, stream:, schema:, workflow:, solution:, external-id:, meta.KEY:V, meta.KEY>N, date:YYYY-MM-DD, '
      + 'date>=DAY, min-/max-annotations:, has:image|video|file, draft:true|false, combined with AND, OR, NOT, parentheses and a '
      + 'leading minus (no free text). Newest first. Answers {events, count, next_cursor}; pass next_cursor back as cursor for the next page.',
    inputSchema: z.strictObject({
      query: z.string().trim().min(1).describe('Query in the search language, e.g. class:person>=2 device:cam-1'),
      limit: z.number().int().min(1).max(1000).default(100).describe('Events per page, 1 to 1000'),
      cursor: z.string().min(1).optional().describe('next_cursor of the previous page of the same query'),
    }),
    annotations: { title: 'Search the events of an edge event store', ...READ_ONLY, openWorldHint: false },
  }, async (args) => toolResult(async () => {
    eventSearchConditions(args.query);
    return new StoreClient(options.store ?? {}, options.env).searchEvents(args.query, { limit: args.limit, cursor: args.cursor });
  }, describeStoreFailure));
}

/** Runs `call` and answers its result as JSON text, or its failure (as `describe` words it) as a tool error. */
async function toolResult(call: () => Promise<object>, describe: (error: unknown) => Failure = describeFailure): Promise<CallToolResult> {
  try {
    return { content: [{ type: 'text', text: JSON.stringify(await call()) }] };
  } catch (error) {
    const failure = describe(error);
    return { isError: true, content: [{ type: 'text', text: `${failure.message}\nHint: ${failure.hint}` }] };
  }
}

/**
 * Serves the three tools over stdio until stdin closes (`edge-events mcp`, see mcp-command.ts).
 * Logs (retries, at LOG_LEVEL, default info) go to stderr, as stdout carries the protocol.
 */
export async function runMcpServer(flags: ConnectionFlags, store: StoreFlags = {}): Promise<void> {
  const { logLevel } = loadConfig({ LOG_LEVEL: process.env.LOG_LEVEL });
  const logger = pino({ name: 'edge-events-mcp', level: logLevel }, pino.destination(2));
  const server = createSearchMcpServer({ flags, store, env: process.env, client: { logger } });
  await server.connect(new StdioServerTransport());
}
