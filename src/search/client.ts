/**
 * The typed hosted search client: project search, workspace search and search export against
 * `SEARCH_BASE_URL`, authenticated by `api_key`.
 */
import { SearchArgumentError, SearchCredentialsError } from './errors.js';
import { resolveProjectRef, searchProject, searchProjectAll } from './project-search.js';
import { searchExport } from './search-export.js';
import { HostedTransport } from './transport.js';
import type { SearchLogger } from './transport.js';
import type { RetryOptions } from './retry.js';
import type {
  ProjectSearchParams, ProjectSearchResponse, ProjectSearchResult, SearchExportParams, SearchExportResult,
  WorkspaceSearchImage, WorkspaceSearchParams, WorkspaceSearchResponse,
} from './types.js';
import { searchWorkspace, searchWorkspaceAll } from './workspace-search.js';

export interface SearchClientOptions {
  /** http(s) base URL of the hosted API (SEARCH_BASE_URL); a trailing slash is ignored. */
  baseUrl: string;
  /** API key (SEARCH_API_KEY), sent as the `api_key` query parameter only. */
  apiKey: string;
  /** Default workspace (SEARCH_WORKSPACE): required by workspace search, export, and project
   * references without a `workspace/` prefix. */
  workspace?: string;
  /** Default: the global `fetch`. */
  fetch?: typeof fetch;
  retry?: RetryOptions;
  /** Waits between retries and export polls (default: a real timer). */
  sleep?: (ms: number) => Promise<void>;
  /** Receives one debug line per request and one warn line per retry; never the key. */
  logger?: SearchLogger;
  /** Per-request timeout in ms (default 30000). */
  timeoutMs?: number;
}

export class SearchClient {
  private readonly transport: HostedTransport;
  readonly workspace: string | undefined;

  /**
   * @throws SearchArgumentError when `baseUrl` is not an http(s) URL;
   *   SearchCredentialsError when `apiKey` is empty
   */
  constructor(options: SearchClientOptions) {
    if (!isHttpUrl(options.baseUrl)) {
      throw new SearchArgumentError(`Search base URL must be an http(s) URL, got ${JSON.stringify(options.baseUrl)}`);
    }
    if (!options.apiKey) throw new SearchCredentialsError('apiKey', 'No API key for the hosted search API');
    this.transport = new HostedTransport(options);
    this.workspace = options.workspace || undefined;
  }

  /**
   * One page of project search.
   * @param project a slug in the default workspace, or `workspace/slug`
   * @throws SearchArgumentError (nothing sent) or the errors of `errors.ts` for hosted failures
   */
  search(project: string, params: ProjectSearchParams = {}): Promise<ProjectSearchResponse> {
    return searchProject(this.transport, resolveProjectRef(project, this.workspace), params);
  }

  /**
   * Every page of project search, offset-paged from `params.offset`, with ids already yielded
   * dropped; see `searchProjectAll`.
   */
  searchAll(project: string, params: ProjectSearchParams = {}): AsyncGenerator<ProjectSearchResult[]> {
    return searchProjectAll(this.transport, resolveProjectRef(project, this.workspace), params);
  }

  /**
   * One page of workspace search in the default workspace.
   * @throws SearchCredentialsError without a workspace; QuerySyntaxError for a malformed query
   */
  workspaceSearch(params: WorkspaceSearchParams): Promise<WorkspaceSearchResponse> {
    return searchWorkspace(this.transport, this.requireWorkspace(), params);
  }

  /** Every page of workspace search, following `continuationToken`; see `searchWorkspaceAll`. */
  workspaceSearchAll(params: WorkspaceSearchParams): AsyncGenerator<WorkspaceSearchImage[]> {
    return searchWorkspaceAll(this.transport, this.requireWorkspace(), params);
  }

  /**
   * Exports the results of a query as a dataset in the default workspace; see `searchExport`.
   * @throws SearchCredentialsError without a workspace
   */
  searchExport(params: SearchExportParams): Promise<SearchExportResult> {
    return searchExport(this.transport, this.requireWorkspace(), params);
  }

  private requireWorkspace(): string {
    if (this.workspace === undefined) throw new SearchCredentialsError('workspace', 'No workspace selected for the hosted search API');
    return this.workspace;
  }
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}
