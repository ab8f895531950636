/**
 * What the store's CLI commands and MCP tool tell the user when a request fails: the message, a
 * hint and the exit code, as `edge-events search` does (docs/SEARCH.md, "The hosted API"):
 * 1 bad input, no answer, any other failure; 2 missing or wrong API key; 3 not found.
 */
import { QuerySyntaxError } from '../query-language/query-syntax-error.js';
import type { ExitCode, Failure } from '../command-runner.js';
import { StoreCursorError, StoreNetworkError, StoreRequestError, StoreUsageError } from './store-client.js';

/** Describes `error` for the user; never throws. */
export function describeStoreFailure(error: unknown): Failure {
  const message = error instanceof Error ? error.message : String(error);
  const fail = (exitCode: ExitCode, hint: string): Failure => ({ exitCode, message, hint });
  if (error instanceof QuerySyntaxError) return fail(1, 'Fix the query at the caret. Quote values with spaces (device:"cam 1"); AND, OR, NOT are capitals.');
  if (error instanceof StoreUsageError) return fail(1, error.hint);
  if (error instanceof StoreCursorError) {
    return fail(1, 'A cursor is the next_cursor of the previous page of the same query, passed back as it was (edge-events events prints it as "Next page: --cursor <token>"); leave it out for the first page.');
  }
  if (error instanceof StoreNetworkError) return fail(1, 'Is the store running there? Check --store (or STORE_URL).');
  if (error instanceof StoreRequestError) {
    if (error.status === 401) return fail(2, 'Pass the store\'s key with -k/--api-key or set API_KEY.');
    if (error.status === 404) return fail(3, 'Check --store: it must be the event store\'s base URL.');
    if (error.status === 400) {
      // Only a query error carries a caret under its column (docs/API.md, "Event search").
      const hint = /\n *\^$/.test(error.detail) ? 'Fix the query at the caret; see docs/API.md, "Event search".' : 'Fix what the message names; see docs/API.md, "Event search".';
      return { exitCode: 1, message: error.detail, hint };
    }
    if (error.status === 529) return fail(1, 'The store is over its capacity limits and waiting for uploads; retry later.');
    return fail(1, 'The store refused the request; check the arguments.');
  }
  return fail(1, 'Retry; if it persists, report it with the message above.');
}
