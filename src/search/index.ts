/**
 * Public API of the hosted search package: the query-language parser (src/query-language), the typed client, its errors
 * and request/response types, and the local validators the proxy reuses.
 */
export { SearchClient } from './client.js';
export type { SearchClientOptions } from './client.js';
export type { SearchLogger } from './transport.js';
export type { RetryOptions } from './retry.js';
export type { ProgressStream } from './download-progress.js';
export { redact } from '../redact.js';
export { parseQuery } from '../query-language/query-parser.js';
export type * from '../query-language/query-ast.js';
export { FILTER_KEYS, SPLITS } from '../query-language/query-ast.js';
export { QuerySyntaxError } from '../query-language/query-syntax-error.js';
export {
  SearchError, SearchArgumentError, SearchCredentialsError, SearchApiError,
  SearchAuthError, SearchForbiddenError, SearchNotFoundError, SearchRateLimitError, SearchServerError,
  SearchNetworkError, SearchResponseError, SearchExportTimeoutError,
} from './errors.js';
export { OversizeError } from './download-limits.js';
export {
  validateProjectSearchBody, validateWorkspaceSearchBody, validateQuery, parseFieldList,
} from './request-validation.js';
export { resolveProjectRef, toProjectSearchBody } from './project-search.js';
export type { ProjectRef } from './project-search.js';
export * from './types.js';
