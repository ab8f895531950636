/**
 * Maps any failure of a search to what the CLI and the MCP server tell the user: the message, a
 * hint, and the CLI exit code (docs/SEARCH.md, "The hosted API"): 0 success; 1 bad input, network
 * failure, unexpected answer, quota, rate limit, server error, a download or zip larger than the
 * CLI takes (download-limits.ts); 2 missing or invalid key, no
 * workspace; 3 not found or not visible to the key. A 403 (key valid, no access to the workspace or
 * resource) is "not visible to the key", so 3.
 */
import {
  SearchApiError, SearchArgumentError, SearchAuthError, SearchCredentialsError,
  SearchForbiddenError, SearchNetworkError, SearchNotFoundError, SearchRateLimitError,
  SearchResponseError, SearchServerError,
} from './errors.js';
import { QuerySyntaxError } from '../query-language/query-syntax-error.js';
import { OversizeError } from './download-limits.js';
import { SearchUsageError } from './settings.js';
import type { ExitCode, Failure } from '../command-runner.js';

/** Describes `error` for the user; never throws. Messages are already free of the API key. */
export function describeFailure(error: unknown): Failure {
  const message = error instanceof Error ? error.message : String(error);
  const fail = (exitCode: ExitCode, hint: string): Failure => ({ exitCode, message, hint });
  if (error instanceof SearchUsageError) return fail(1, error.hint);
  if (error instanceof QuerySyntaxError) {
    return fail(1, 'Fix the query at the caret. Quote values with spaces (tag:"night shift"); AND, OR, NOT are capitals.');
  }
  if (error instanceof SearchArgumentError) return fail(1, 'Check the arguments; see edge-events search --help.');
  if (error instanceof SearchCredentialsError) {
    return error.missing === 'apiKey'
      ? fail(2, 'Pass -k/--api-key or set SEARCH_API_KEY.')
      : fail(2, 'Pass -w/--workspace or set SEARCH_WORKSPACE.');
  }
  if (error instanceof SearchApiError) return fail(apiExitCode(error), error.hostedHint ?? apiHint(error));
  if (error instanceof OversizeError) return fail(1, error.hint);
  if (error instanceof SearchNetworkError) return fail(1, 'Check the base URL (--base-url or SEARCH_BASE_URL) and the network, then retry.');
  if (error instanceof SearchResponseError) return fail(1, 'The answer was not the hosted search API\'s; check that the base URL points at it.');
  return fail(1, 'Retry; if it persists, report it with the message above.');
}

function apiExitCode(error: SearchApiError): ExitCode {
  if (error instanceof SearchAuthError) return 2;
  if (error instanceof SearchNotFoundError || error instanceof SearchForbiddenError) return 3;
  return 1;
}

function apiHint(error: SearchApiError): string {
  if (error instanceof SearchAuthError) return 'Check the API key (-k/--api-key or SEARCH_API_KEY) and its scopes.';
  if (error instanceof SearchForbiddenError) return 'The key has no access to this workspace or resource; check -w/--workspace or use a key of that workspace.';
  if (error instanceof SearchNotFoundError) return 'Check the workspace (-w/--workspace), the project and, for a cursor, that it came from this query.';
  if (error instanceof SearchRateLimitError) {
    return error.retryAfterSeconds === undefined ? 'Rate limited; wait and retry.' : `Rate limited; retry after ${error.retryAfterSeconds} s.`;
  }
  if (error instanceof SearchServerError) return 'The hosted search API failed; retry later.';
  if (error.status === 402) return 'The plan does not allow this, or its quota is used up.';
  return 'The hosted search API rejected the request; check the arguments.';
}
