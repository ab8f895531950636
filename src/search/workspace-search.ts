/**
 * Workspace search, `POST /:workspace/search/v1` (docs/SEARCH.md, "The hosted API"): one page, and
 * an async generator that follows `continuationToken`.
 */
import { SearchResponseError } from './errors.js';
import { validateWorkspaceSearchBody } from './request-validation.js';
import type { HostedTransport } from './transport.js';
import type { WorkspaceSearchImage, WorkspaceSearchParams, WorkspaceSearchResponse } from './types.js';

/**
 * Fetches one page of workspace search. The query is parsed locally first.
 * @throws QuerySyntaxError for a malformed query and SearchArgumentError for other invalid
 *   parameters (nothing sent); the transport's errors for hosted failures;
 *   SearchResponseError when the answer lacks `results` or `total`
 */
export async function searchWorkspace(transport: HostedTransport, workspace: string, params: WorkspaceSearchParams): Promise<WorkspaceSearchResponse> {
  const body = Object.fromEntries(Object.entries(params).filter(([, value]) => value !== undefined));
  validateWorkspaceSearchBody(body);
  const path = `/${encodeURIComponent(workspace)}/search/v1`;
  const answer = (await transport.json('POST', path, body)) as Partial<WorkspaceSearchResponse> | null;
  if (!Array.isArray(answer?.results) || typeof answer.total !== 'number') {
    throw new SearchResponseError(`Workspace search answer lacks results or total (POST ${path})`);
  }
  const token = typeof answer.continuationToken === 'string' && answer.continuationToken !== '' ? answer.continuationToken : null;
  return { results: answer.results, total: answer.total, continuationToken: token };
}

/**
 * Yields every page of a workspace search, starting at `params.continuationToken` if given,
 * and following `continuationToken` until an answer has none or brings no results.
 * @throws as `searchWorkspace`
 */
export async function* searchWorkspaceAll(transport: HostedTransport, workspace: string, params: WorkspaceSearchParams): AsyncGenerator<WorkspaceSearchImage[]> {
  let token = params.continuationToken;
  for (;;) {
    const page = await searchWorkspace(transport, workspace, { ...params, continuationToken: token });
    if (page.results.length === 0) return;
    yield page.results;
    if (!page.continuationToken) return;
    token = page.continuationToken;
  }
}
