/**
 * The search gateway's part of the OpenAPI document (docs/API.md, "Search gateway"): the hosted
 * paths the store forwards, answered only when SEARCH_BASE_URL and SEARCH_API_KEY are set (404
 * otherwise). Bodies and answers are the hosted API's own, so they are described, not typed.
 */
type Json = Record<string, unknown>;

const AVAILABLE = 'Forwarded to the hosted search API with the device\'s SEARCH_API_KEY; available when SEARCH_BASE_URL and '
  + 'SEARCH_API_KEY are set (404 otherwise). The hosted status, body, Content-Type, Retry-After and RateLimit-* are relayed.';

const hostedError = (description: string): Json => ({
  description,
  content: { 'application/json': { schema: { type: 'object', properties: { error: { type: 'string' } }, required: ['error'] } } },
});

const param = (name: string): Json => ({ name, in: 'path', required: true, schema: { type: 'string' } });

/** The store's key in either place a client can give it. */
const security = [{ ApiKey: [] }, { ApiKeyQuery: [] }];

function operation(summary: string, operationId: string, params: string[], body: boolean, extra = ''): Json {
  return {
    tags: ['search gateway'],
    summary,
    operationId,
    description: `${AVAILABLE}${extra}`,
    security,
    parameters: params.map(param),
    ...(body ? { requestBody: { required: true, content: { 'application/json': { schema: { type: 'object' } } } } } : {}),
    responses: {
      '200': { description: 'The hosted answer, relayed.' },
      ...(body ? { '400': hostedError('Body refused locally, as the hosted API would refuse it.'), '413': hostedError('Body over 64 KiB.') } : {}),
      '401': hostedError('Missing or invalid store key (X-API-Key or api_key).'),
      '404': hostedError('Gateway off (search settings unset).'),
      '502': hostedError('Hosted API unreachable.'),
    },
  };
}

/** Path items of the gateway, keyed by OpenAPI path. */
export const searchGatewayPaths: Json = {
  '/{workspace}/{project}/search': {
    post: operation('Project search', 'proxyProjectSearch', ['workspace', 'project'], true, ' limit 1..250 (default 50).'),
  },
  '/{workspace}/search/v1': {
    post: operation('Workspace search (query language)', 'proxyWorkspaceSearch', ['workspace'], true, ' query is required; pageSize default 50.'),
  },
  '/{workspace}/search/export': {
    post: operation('Start a search export', 'proxyStartExport', ['workspace'], true, ' Answers 202 {link: exportId}.'),
  },
  '/{workspace}/search/export/{export_id}': {
    get: operation('Poll a search export', 'proxyExportStatus', ['workspace', 'export_id'], false, ' Answers {ready, link}.'),
  },
  '/': { post: operation('Workspace of the key (SDK bootstrap)', 'proxyKeyWorkspace', [], false) },
  '/{workspace}': { get: operation('Workspace (SDK bootstrap)', 'proxyWorkspace', ['workspace'], false) },
  '/{workspace}/{project}': { get: operation('Project (SDK bootstrap)', 'proxyProject', ['workspace', 'project'], false) },
};

/** The `api_key` query parameter, as hosted clients send their key. */
export const apiKeyQueryScheme: Json = {
  type: 'apiKey',
  in: 'query',
  name: 'api_key',
  description: 'The store\'s key as hosted clients send it; accepted on the search gateway only.',
};
