/**
 * The OpenAPI 3.1 document of the event store (docs/API.md: "Routes", statuses from "Errors"),
 * served at /openapi.json and rendered by /docs, built from the route table: one operation per
 * route, from the route's `doc` (route-docs.ts) and what its own fields say (public, gated, JSON
 * body, error shape, path parameters). Error statuses come from the registry (src/errors.ts).
 *
 * Body and response schemas are the files under `schemas/` that ajv compiles
 * (`src/events/validate.ts`): each file becomes a component, each `$defs` entry a component of
 * its own, and every `$ref` is rewritten to `#/components/schemas/...`. Both use JSON Schema
 * draft 2020-12, the dialect of OpenAPI 3.1, so nothing else is translated.
 */
import { errorRegistry, type ErrorCode } from '../errors.js';
import { loadSchemaFiles } from '../events/schema-files.js';
import { packageVersion } from '../paths.js';
import { schemaRef, STRING, type ErrorDoc, type OpenApiObject } from './route-docs.js';
import type { Route } from './route-table.js';

type Json = Record<string, unknown>;

// ---------------------------------------------------------------------------------------------
// Schema files -> components

const pascal = (s: string): string =>
  s
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join('');

/**
 * The component a schema file becomes, by its path under `schemas/`:
 * 'responses/stored-event.json' -> 'StoredEvent'; 'event-data/quality_check.json' -> 'EventDataQualityCheck'.
 */
export function schemaComponentName(file: string): string {
  return pascal(file.replace(/^responses\//, '').replace(/\.json$/, ''));
}

const ANNOTATION_ONLY = new Set(['$schema', '$id', '$defs', 'title', 'description']);

/**
 * Components from every schema file, refs rewritten. A file holding only `$defs` (shapes.json)
 * contributes its definitions but no component of its own.
 */
function schemaComponents(): Json {
  const files = loadSchemaFiles();
  const targets = new Map<string, string>(); // absolute URI (file, or file#/$defs/x) -> component
  const add = (uri: string, name: string): void => {
    /* c8 ignore next */
    if ([...targets.values()].includes(name)) throw new Error(`OpenAPI component name clash: ${name}`);
    targets.set(uri, name);
  };
  for (const [file, schema] of files) {
    const id = String(schema.$id);
    if (Object.keys(schema).some((k) => !ANNOTATION_ONLY.has(k))) add(id, schemaComponentName(file));
    for (const def of Object.keys(schema.$defs ?? {})) add(`${id}#/$defs/${def}`, pascal(def));
  }

  /** `#/components/schemas/...` for a ref written inside the file whose $id is `base`. */
  const rewriteRef = (ref: string, base: string): string => {
    const url = new URL(ref, base);
    const hash = decodeURIComponent(url.hash);
    url.hash = '';
    const file = url.href;
    const def = /^#\/\$defs\/([^/]+)(.*)$/.exec(hash);
    const [target, rest] = def ? [targets.get(`${file}#/$defs/${def[1]}`), def[2]] : [targets.get(file), hash.slice(1)];
    /* c8 ignore next */
    if (!target) throw new Error(`unresolvable $ref ${ref} in ${base}`);
    return `#/components/schemas/${target}${rest}`;
  };
  const rewrite = (node: unknown, base: string): unknown => {
    if (Array.isArray(node)) return node.map((n) => rewrite(n, base));
    if (node === null || typeof node !== 'object') return node;
    const out: Json = {};
    for (const [key, value] of Object.entries(node)) {
      if (key === '$schema' || key === '$id' || key === '$defs') continue;
      out[key] = key === '$ref' && typeof value === 'string' ? rewriteRef(value, base) : rewrite(value, base);
    }
    return out;
  };

  const components: Json = {};
  for (const schema of files.values()) {
    const id = String(schema.$id);
    const own = targets.get(id);
    if (own) components[own] = rewrite(schema, id);
    for (const [def, sub] of Object.entries((schema.$defs ?? {}) as Json)) {
      components[targets.get(`${id}#/$defs/${def}`)!] = rewrite(sub, id);
    }
  }
  return components;
}

// ---------------------------------------------------------------------------------------------
// Operations from routes

/** The error body of the search gateway's routes, the hosted API's own shape. */
const HOSTED_ERROR = { type: 'object', properties: { error: { type: 'string' } }, required: ['error'] };

/** The store's key as hosted clients send it: the `api_key` query parameter (gateway routes only). */
const API_KEY_QUERY_SCHEME = {
  type: 'apiKey',
  in: 'query',
  name: 'api_key',
  description: 'The store\'s key as hosted clients send it; accepted on the search gateway only.',
};

/** The document's tags, in the order /docs lists them; every route's `doc.tag` is one of them. */
const TAGS = [
  { name: 'events' },
  { name: 'attachments' },
  { name: 'files' },
  { name: 'admin' },
  { name: 'docs' },
  { name: 'operator page', description: 'The page at / for an operator on the LAN (docs/USAGE.md, "The operator page").' },
  { name: 'search gateway', description: 'The hosted search API through the device (docs/API.md, "Search gateway").' },
];

/** `/v2/events/:event_id` -> `/v2/events/{event_id}`. */
export const openApiPath = (routePath: string): string => routePath.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

/** The names of a route pattern's parameters, in order. */
const pathParamNames = (routePath: string): string[] => [...routePath.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]);

/**
 * What the route table answers for `route` before its handler runs (route-table.ts), as errors
 * of the route's doc: 400 (no Host, or a malformed one), 401 (the key), 413, 415 and 503 (a JSON body it reads or requires, or holds
 * past MAX_INFLIGHT_BODY_BYTES), 421 (a page for browsers, or any route, under a DNS name not the store's), 529
 * (`capacity_blocked`).
 */
function routeTableErrors(route: Route): Partial<Record<ErrorCode, ErrorDoc>> {
  const errors: Partial<Record<ErrorCode, ErrorDoc>> = {};
  if (!route.public) {
    errors.unauthorized = route.keyInQuery ? 'Missing or invalid store key (X-API-Key or api_key).' : 'Missing or invalid X-API-Key (only when API_KEY is set).';
  }
  if (route.body === 'json') {
    errors.record_too_large = 'Record exceeds MAX_RECORD_SIZE_BYTES.';
    errors.body_budget_full = 'Request bodies held at once (their bytes and what parsing adds) would pass MAX_INFLIGHT_BODY_BYTES; retry after Retry-After (seconds); nothing was stored.';
  }
  if (route.body === 'json' || route.jsonBody) errors.unsupported_content_type = 'Content-Type is not application/json.';
  errors.malformed_host = 'No Host, or a Host that is not host[:port] (checked before the route is matched).';
  errors.misdirected_request = `Host is a DNS name not among the store's (localhost, its hostname, <hostname>.local, ALLOWED_HOSTS); add it to ALLOWED_HOSTS${route.errorShape === 'page' ? ' (an HTML page says so)' : ''}.`;
  if (route.gated) errors.capacity_blocked = 'Store over its capacity limits, waiting for uploads to drain; nothing was written.';
  return errors;
}

/**
 * The responses of `route`: its doc's answers, then one response per error status, the
 * descriptions of that status's codes joined.
 * @throws Error when an error status is also one of the doc's answers
 */
function responsesOf(route: Route): OpenApiObject {
  const responses: OpenApiObject = {};
  for (const [status, response] of Object.entries(route.doc.responses)) responses[status] = response;
  const byStatus = new Map<number, ErrorDoc[]>();
  for (const [code, doc] of Object.entries({ ...routeTableErrors(route), ...route.doc.errors }) as [ErrorCode, ErrorDoc][]) {
    const { status } = errorRegistry[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), doc]);
  }
  const content = route.errorShape === 'page'
    ? { 'text/html': { schema: STRING } }
    : { 'application/json': { schema: route.errorShape === 'hosted' ? HOSTED_ERROR : schemaRef('Error') } };
  for (const [status, docs] of byStatus) {
    /* c8 ignore next */
    if (status in responses) throw new Error(`${route.method} ${route.path}: ${status} is both an answer and an error`);
    const headers = Object.assign({}, ...docs.map((doc) => (typeof doc === 'string' ? {} : doc.headers))) as OpenApiObject;
    responses[status] = {
      description: docs.map((doc) => (typeof doc === 'string' ? doc : doc.description)).join(' '),
      content,
      ...(Object.keys(headers).length > 0 ? { headers } : {}),
    };
  }
  return responses;
}

/**
 * The OpenAPI Operation Object of `route`.
 * @throws Error when the doc describes a path parameter the pattern does not have
 */
function operationOf(route: Route): OpenApiObject {
  const { doc } = route;
  const names = pathParamNames(route.path);
  for (const name of Object.keys(doc.pathParams ?? {})) {
    /* c8 ignore next */
    if (!names.includes(name)) throw new Error(`${route.method} ${route.path}: no path parameter ${name}`);
  }
  const pathParams = names.map((name) => {
    const description = doc.pathParams?.[name];
    return { name, in: 'path', required: true, ...(description ? { description } : {}), schema: { type: 'string' } };
  });
  const parameters = [...pathParams, ...(doc.parameters ?? [])];
  const security = route.public ? [] : route.keyInQuery ? [{ ApiKey: [] }, { ApiKeyQuery: [] }] : undefined;
  return {
    tags: [doc.tag],
    summary: doc.summary,
    operationId: doc.operationId,
    ...(doc.description ? { description: doc.description } : {}),
    ...(security ? { security } : {}),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(doc.requestBody ? { requestBody: doc.requestBody } : {}),
    responses: responsesOf(route),
  };
}

/** Path items of `routes`, keyed by OpenAPI path, each with one operation per method. */
function pathsOf(routes: readonly Route[]): OpenApiObject {
  const paths: Record<string, OpenApiObject> = {};
  for (const route of routes) {
    const item = (paths[openApiPath(route.path)] ??= {});
    /* c8 ignore next */
    if (item[route.method]) throw new Error(`two routes for ${route.method} ${route.path}`);
    item[route.method] = operationOf(route);
  }
  return paths;
}

// ---------------------------------------------------------------------------------------------
// The document

function build(routes: readonly Route[]): Json {
  return {
    openapi: '3.1.0',
    info: {
      title: 'edge-event-store',
      version: packageVersion,
      description:
        'On-device event store for vision pipelines. Input accepts camelCase or snake_case names; responses use snake_case. ' +
        'Errors are FastAPI-shaped: {"detail": "..."}, or for 422 {"detail": [{"loc", "msg", "type"}]}. ' +
        'Any request first answers 400 without a Host or with one that is not host[:port], and 421 under a DNS name not the store\'s; ' +
        'then any path answers 404 when unknown, 405 with Allow for another method, 403 to a browser\'s request ' +
        'the store does not take (docs/API.md, "Browsers"), and 400 or 501 to ambiguous request framing.',
    },
    servers: [{ url: '/' }],
    security: [{ ApiKey: [] }],
    tags: TAGS,
    paths: pathsOf(routes),
    components: {
      securitySchemes: {
        ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'Required on every route but /health, /docs, /openapi.json and the operator page when the service has API_KEY set; authentication is off otherwise.' },
        ApiKeyQuery: API_KEY_QUERY_SCHEME,
      },
      schemas: schemaComponents(),
    },
  };
}

const documents = new WeakMap<readonly Route[], { document: Json; json?: string }>();

/**
 * The OpenAPI 3.1 document of `routes` (built on first call per route list, then cached; do
 * not mutate it).
 * @throws Error when a route's doc contradicts the route (see operationOf, responsesOf)
 */
export function buildOpenApiDocument(routes: readonly Route[]): Json {
  let built = documents.get(routes);
  if (!built) {
    built = { document: build(routes) };
    documents.set(routes, built);
  }
  return built.document;
}

/** `buildOpenApiDocument(routes)` serialised once, for GET /openapi.json. */
export function openApiJson(routes: readonly Route[]): string {
  buildOpenApiDocument(routes);
  const built = documents.get(routes)!;
  return (built.json ??= JSON.stringify(built.document));
}
