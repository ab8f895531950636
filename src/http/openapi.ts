/**
 * The OpenAPI 3.1 document of the event store (docs/API.md: "Routes", statuses from "Errors"),
 * served at /openapi.json and rendered by /docs.
 *
 * Body and response schemas are the files under `schemas/` that ajv compiles
 * (`src/events/validate.ts`): each file becomes a component, each `$defs` entry a component of
 * its own, and every `$ref` is rewritten to `#/components/schemas/...`. Both use JSON Schema
 * draft 2020-12, the dialect of OpenAPI 3.1, so nothing else is translated.
 */
import fs from 'node:fs';
import path from 'node:path';
import { loadSchemaFiles } from '../events/validate.js';
import { EVENT_SCHEMAS } from '../events/types.js';
import { packageRoot } from '../paths.js';
import { apiKeyQueryScheme, searchGatewayPaths } from './openapi-search-gateway.js';

type Json = Record<string, unknown>;

// ---------------------------------------------------------------------------------------------
// Schema files -> components

const pascal = (s: string): string =>
  s
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join('');

/** 'responses/stored-event.json' -> 'StoredEvent'; 'event-data/quality_check.json' -> 'EventDataQualityCheck'. */
function fileComponentName(file: string): string {
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
    if (Object.keys(schema).some((k) => !ANNOTATION_ONLY.has(k))) add(id, fileComponentName(file));
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
// Building blocks of operations

const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });
const jsonBody = (schema: string, description: string): Json => ({
  description,
  content: { 'application/json': { schema: ref(schema) } },
});
/** An error response: FastAPI-shaped body (`detail` string, or a list of issues on 422). */
const error = (description: string, headers?: Json): Json => ({ ...jsonBody('Error', description), ...(headers ? { headers } : {}) });

const E401 = error('Missing or invalid X-API-Key (only when API_KEY is set).');
const E500 = error('Store failure.');
const E507 = error('Disk full.');
const E529 = error('Store over its capacity limits, waiting for uploads to drain (E10); nothing was written.');

const pathParam = (name: string, description: string): Json => ({ name, in: 'path', required: true, description, schema: { type: 'string' } });
const query = (name: string, schema: Json, description: string): Json => ({ name, in: 'query', required: false, description, schema });
const str = { type: 'string' };

const limitParam = query('limit', { type: 'integer', minimum: 1, maximum: 1000, default: 100 }, 'Events per page, 1..1000; out of range answers 422 (E6).');
const includeDraftsParam = query('include_drafts', { type: 'boolean', default: true }, 'false returns only finalized events.');

const listParams: Json[] = [
  limitParam,
  query('device_id', str, 'Exact match.'),
  query('event_schema', str, `Exact match: one of ${EVENT_SCHEMAS.join(', ')}.`),
  query('workflow_id', str, 'Exact match.'),
  query('external_id', str, 'Exact match on event_data.external_id.'),
  query('related_event_id', str, 'Exact match on event_data.related_event_id (operator_feedback events rating that event).'),
  query('device_ids', str, 'Comma-separated device ids (any of).'),
  query('event_schemas', str, 'Comma-separated event_schema values (any of).'),
  query('workflow_ids', str, 'Comma-separated workflow ids (any of).'),
  query('external_ids', str, 'Comma-separated external ids (any of).'),
  query('start_time', { type: 'string', format: 'date-time' }, 'ISO 8601; lower bound on created_at. Malformed answers 400 (E5).'),
  query('end_time', { type: 'string', format: 'date-time' }, 'ISO 8601; upper bound on created_at. Malformed answers 400 (E5).'),
  includeDraftsParam,
  query('sort_direction', { type: 'string', enum: ['asc', 'desc'], default: 'desc' }, 'Order by created_at; anything else answers 400 (E5).'),
  {
    ...query('metadata_filter', { type: 'array', items: str }, 'custom_metadata filter, repeatable (AND): key:value or key:op:value, op one of eq, ne, gt, lt, gte, lte. Numbers compare numerically; a filter matches only events carrying the key (ne included). Unparseable answers 400 (E5).'),
    style: 'form',
    explode: true,
  },
];

/** GET of a stored file with HTTP Range (docs/API.md, "Downloads"; E9). */
function download(idName: string, what: string, notFound: string): Json {
  const bytes = { '*/*': { schema: { type: 'string', format: 'binary' } } };
  return {
    get: {
      tags: ['files'],
      summary: `Download ${what}`,
      operationId: `download${pascal(what)}`,
      description: 'Range accepts bytes=start-end, bytes=start- and bytes=-suffix. File ids are ephemeral: cleanup may remove a file at any time, so handle 404.',
      parameters: [
        pathParam(idName, `Id of the ${what}.`),
        { name: 'Range', in: 'header', required: false, schema: str, description: 'e.g. bytes=0-1023' },
      ],
      responses: {
        '200': { description: 'The whole content.', headers: { 'Accept-Ranges': { schema: str } }, content: bytes },
        '206': { description: 'The requested range.', headers: { 'Content-Range': { schema: str, description: 'bytes start-end/total' } }, content: bytes },
        '401': E401,
        '404': error(notFound),
        '416': error('Range not satisfiable.', { 'Content-Range': { schema: str, description: 'bytes */total' } }),
        '529': E529,
      },
    },
  };
}

/** POST of a multipart attachment to a draft (docs/API.md, "Drafts and attachments"). */
function attach(kind: 'video' | 'local-only file', extra: Json, extraErrors: Json): Json {
  return {
    post: {
      tags: ['attachments'],
      summary: `Attach a ${kind} to a draft event`,
      operationId: `attach${pascal(kind)}`,
      description: 'The event must be a draft (checked before the body is read). The body is streamed and the size limit enforced per chunk.',
      parameters: [pathParam('event_id', 'Id of the draft event.')],
      requestBody: {
        required: true,
        content: {
          'multipart/form-data': {
            schema: {
              type: 'object',
              required: ['file'],
              properties: { file: { type: 'string', format: 'binary', description: 'Exactly one file part.' }, ...extra },
            },
          },
        },
      },
      responses: {
        '201': jsonBody('AttachResponse', 'Stored and listed on the event.'),
        '400': error('Malformed multipart body, or missing, empty or duplicate file part.'),
        '401': E401,
        '404': error('Event not found.'),
        '409': error('Event is finalized (E8); nothing stored.'),
        '413': error('Upload exceeds its size limit.'),
        ...extraErrors,
        '507': E507,
        '529': E529,
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The document

function build(): Json {
  const { version } = JSON.parse(fs.readFileSync(path.join(packageRoot, 'package.json'), 'utf8')) as { version: string };
  const eventId = pathParam('event_id', 'Event id (uuid).');
  return {
    openapi: '3.1.0',
    info: {
      title: 'edge-event-store',
      version,
      description:
        'On-device event store for vision pipelines. Input accepts camelCase or snake_case names; responses use snake_case. ' +
        'Errors are FastAPI-shaped: {"detail": "..."}, or for 422 {"detail": [{"loc", "msg", "type"}]}.',
    },
    servers: [{ url: '/' }],
    security: [{ ApiKey: [] }],
    tags: [
      { name: 'events' },
      { name: 'attachments' },
      { name: 'files' },
      { name: 'admin' },
      { name: 'search gateway', description: 'The hosted search API through the device (docs/API.md, "Search gateway").' },
    ],
    paths: {
      '/v2/events': {
        post: {
          tags: ['events'],
          summary: 'Create an event', operationId: 'createEvent',
          description: 'draft true keeps the event open for attachments until finalized; omitted or false finalizes it on creation. ' +
            `event_data must conform to the schema named by event_schema (components ${EVENT_SCHEMAS.map((s) => `EventData${pascal(s)}`).join(', ')}).`,
          requestBody: { required: true, content: { 'application/json': { schema: ref('CreateEvent') } } },
          responses: {
            '201': jsonBody('CreateResponse', 'Created; durable before the answer.'),
            '400': error('solution required (E1), event_data does not conform to its schema (E2, detail names the schema), or an image failed to decode (E3).'),
            '401': E401,
            '413': error('Record exceeds MAX_RECORD_SIZE_BYTES.'),
            '422': error('Request validation failed (E7), unknown event_schema (E4), an image over MAX_PREDICTIONS_PER_IMAGE, or malformed JSON; detail is a list of {loc, msg, type}.'),
            '500': E500,
            '507': E507,
            '529': E529,
          },
        },
        get: {
          tags: ['events'],
          summary: 'Query events', operationId: 'listEvents',
          description:
            'Filters combine with AND. Paging: pass the returned next_timestamp as end_time of the next request when sort_direction is desc ' +
            '(as start_time when asc), keeping the other parameters; next_timestamp is null when nothing follows. created_at values are unique, ' +
            'so pages neither skip nor repeat an event. A page may hold fewer events than limit, even none, while next_timestamp is set: ' +
            'it stops before its body passes MAX_LIST_RESPONSE_BYTES (holding at least one event), and a filter no index covers ' +
            '(metadata_filter ops other than eq) reads at most MAX_LIST_SCAN_RECORDS records per request. Page until next_timestamp is null.',
          parameters: listParams,
          responses: {
            '200': jsonBody('EventList', 'Matching events.'),
            '400': error('Invalid filter (E5): malformed timestamp, bad sort_direction, unparseable metadata_filter.'),
            '401': E401,
            '422': error('limit out of range (E6) or other invalid parameter.'),
            '529': E529,
          },
        },
      },
      '/v2/events/latest/query': {
        get: {
          tags: ['events'],
          summary: 'Most recent events', operationId: 'latestEvents',
          description:
            'Bounded as GET /v2/events. When next_timestamp is set, continue with GET /v2/events?end_time=<next_timestamp> ' +
            'and the same limit and include_drafts.',
          parameters: [limitParam, includeDraftsParam],
          responses: { '200': jsonBody('EventList', 'Events, most recent first.'), '401': E401, '422': error('limit out of range (E6).'), '529': E529 },
        },
      },
      '/v2/events/{event_id}': {
        get: {
          tags: ['events'],
          summary: 'Get one event', operationId: 'getEvent',
          parameters: [eventId],
          responses: { '200': jsonBody('StoredEvent', 'The event.'), '401': E401, '404': error('Event not found.'), '529': E529 },
        },
      },
      '/v2/events/{event_id}/videos': attach(
        'video',
        { label: { type: 'string', default: 'video' } },
        { '415': error('Content is not a supported video format (detected from the bytes).'), '422': error('Invalid label.') },
      ),
      '/v2/events/{event_id}/local-only-files': attach(
        'local-only file',
        { label: { type: 'string', default: 'file' }, content_type: { type: 'string', description: 'MIME type; sniffed when omitted.' } },
        { '422': error('Invalid label or content_type.') },
      ),
      '/v2/events/{event_id}/finalize': {
        post: {
          tags: ['events'],
          summary: 'Finalize a draft', operationId: 'finalizeEvent',
          description: 'Idempotent: a repeat call answers already_finalized true. Available even when the store is capacity-blocked.',
          parameters: [eventId],
          responses: { '200': jsonBody('FinalizeResponse', 'Finalized.'), '401': E401, '404': error('Event not found.'), '500': E500 },
        },
      },
      '/events/count/stats': {
        get: {
          tags: ['events'],
          summary: 'Count events', operationId: 'countEvents',
          parameters: [query('device_id', str, 'Exact match.'), query('event_schema', str, 'Exact match.'), query('workflow_id', str, 'Exact match.')],
          responses: { '200': jsonBody('CountStats', 'Counts.'), '401': E401, '529': E529 },
        },
      },
      '/images/{image_id}': download('image_id', 'image', 'No such image.'),
      '/videos/{video_id}': download('video_id', 'video', 'No such file, or the file is not a video.'),
      '/local-only-files/{file_id}': download('file_id', 'local-only file', 'No such file, or the file is not a local-only file.'),
      '/stats': {
        get: { tags: ['admin'], summary: 'Storage statistics', operationId: 'getStats', responses: { '200': jsonBody('Stats', 'Statistics.'), '401': E401, '500': E500 } },
      },
      '/health': {
        get: {
          tags: ['admin'],
          summary: 'Health', operationId: 'health',
          security: [],
          responses: { '200': jsonBody('Health', 'Healthy.'), '503': jsonBody('Health', 'Unhealthy; error says why.') },
        },
      },
      '/admin/cleanup': {
        post: {
          tags: ['admin'],
          summary: 'Run cleanup now', operationId: 'runCleanup',
          description: 'Deletes records past retention_days, the oldest records over max_records and the oldest files over max_storage_bytes.',
          responses: { '200': jsonBody('CleanupResult', 'What was deleted.'), '401': E401, '500': E500 },
        },
      },
      '/reset/request': {
        post: {
          tags: ['admin'],
          summary: 'Request a reset token', operationId: 'requestReset',
          responses: { '200': jsonBody('ResetToken', 'A single-use token valid 60 seconds.'), '401': E401, '500': E500 },
        },
      },
      '/reset/confirm': {
        post: {
          tags: ['admin'],
          summary: 'Delete every event and file', operationId: 'confirmReset',
          description: 'Permanent; cannot be undone.',
          requestBody: { required: true, content: { 'application/json': { schema: ref('ResetConfirmRequest') } } },
          responses: {
            '200': jsonBody('ResetConfirm', 'Everything deleted.'),
            '400': error('Missing, invalid, expired or used reset token.'),
            '401': E401,
            '422': error('Malformed body.'),
            '500': E500,
          },
        },
      },
      ...searchGatewayPaths,
    },
    components: {
      securitySchemes: {
        ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'Required on every route but /health, /docs and /openapi.json when the service has API_KEY set; authentication is off otherwise.' },
        ApiKeyQuery: apiKeyQueryScheme,
      },
      schemas: schemaComponents(),
    },
  };
}

let cached: Json | undefined;
let cachedJson: string | undefined;

/** The OpenAPI 3.1 document (built on first call, then cached; do not mutate it). */
export function buildOpenApiDocument(): Json {
  return (cached ??= build());
}

/** `buildOpenApiDocument()` serialised once, for GET /openapi.json. */
export function openApiJson(): string {
  return (cachedJson ??= JSON.stringify(buildOpenApiDocument()));
}
