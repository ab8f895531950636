/** The event store's routes (docs/API.md, "Routes"), as one table (see route-table.ts); the stored files' routes are file-routes.ts's. */
import { assertAttachable, attachUpload, finalize, newStagingFile } from '../events/attach-file.js';
import { errorRegistry } from '../errors.js';
import { storeCreate, type EventWriter } from '../events/create-event.js';
import { ignoredKeyPath } from '../events/unknown-keys.js';
import { countStatsResponse, getEventBody, latestEventsBody, listEventsBody, searchEventsBody, type ListLimits } from '../events/read-events.js';
import { EVENT_SCHEMAS } from '../events/types.js';
import { fileRoutes } from './file-routes.js';
import { receiveUpload } from './multipart-upload.js';
import { schemaComponentName } from './openapi.js';
import { jsonRequest, jsonResponse, type OpenApiObject, type RouteDoc } from './route-docs.js';
import type { BytesReply, Route, ServerContext } from './route-table.js';
import type { Exchange } from './exchange.js';
import { readParamDocs } from './read-param-docs.js';

/**
 * Streams a multipart upload into draft `ex.params[0]`, after checking its state and before
 * reading any of the body (docs/API.md, "Drafts and attachments", rule 1). Runs synchronously up
 * to the body read.
 */
function upload(ex: Exchange, ctx: ServerContext, kind: 'video' | 'local_only') {
  const [eventId] = ex.params;
  assertAttachable(ctx.store, eventId);
  const limit = kind === 'video' ? ctx.config.maxVideoUploadBytes : ctx.config.maxLocalOnlyFileUploadBytes;
  return receiveUpload(ex, () => newStagingFile(ctx.store), limit)
    .then((parts) => attachUpload(ctx.store, eventId, parts, kind))
    .then((body) => ({ status: 201, body }));
}

/** The list bounds of the settings (MAX_LIST_RESPONSE_BYTES, MAX_LIST_SCAN_RECORDS). */
function listLimits(ctx: ServerContext): ListLimits {
  return { maxResponseBytes: ctx.config.maxListResponseBytes, maxScanRecords: ctx.config.maxListScanRecords };
}

/** A 200 with a JSON body already in bytes: a list page or a stored event, never built as one string. */
function jsonBytes(body: Buffer): BytesReply {
  return { status: 200, bytes: body, headers: { 'Content-Type': 'application/json' } };
}

function health(ctx: ServerContext) {
  try {
    ctx.store.counters();
    // Reads met a damaged index page: the store serves what it can, and says what to run (docs/API.md, "Health").
    if (ctx.store.indexDamage.readsFailed > 0) return { status: 200, body: { status: 'degraded', datastore: 'index_damaged', error: errorRegistry.index_damaged.message } };
    return { status: 200, body: { status: 'healthy', datastore: 'ok' } };
  } catch (err) {
    return { status: 503, body: { status: 'unhealthy', datastore: 'error', error: (err as Error).message } };
  }
}

/**
 * The header of a 201 create that carries warnings: how many (docs/API.md, "Create an event"), so
 * that a client checking only the status and headers (`raise_for_status()`) can see them.
 */
export const WARNINGS_HEADER = 'X-Edge-Events-Warnings';

// ---------------------------------------------------------------------------------------------
// What /openapi.json says of each route (route-docs.ts); rules and parameters are docs/API.md's.

const createDoc: RouteDoc = {
  tag: 'events',
  summary: 'Create an event',
  operationId: 'createEvent',
  description: 'draft true keeps the event open for attachments until finalized; omitted or false finalizes it on creation. '
    + `event_data must conform to the schema named by event_schema (components ${EVENT_SCHEMAS.map((schema) => schemaComponentName(`event-data/${schema}.json`)).join(', ')}).`,
  // One spelling only: built from the schema, Swagger UI filled both snake_case and camelCase
  // names, and a create with both spellings of a field answers 422 (docs/API.md, "Create an event").
  requestBody: jsonRequest('CreateEvent', {
    inference_timestamp: '2026-11-22T01:00:00Z',
    event_schema: 'quality_check',
    event_data: { result: 'pass', external_id: 'lot-1' },
    device_id: 'cam-1',
    workflow_id: 'wf-inspect',
    custom_metadata: { line: 'A' },
    images: [],
  }),
  responses: {
    201: {
      ...jsonResponse('CreateResponse', 'Created; durable before the answer. With warnings (ignored keys, non-image payloads stored), the body lists them and X-Edge-Events-Warnings counts them.'),
      headers: { [WARNINGS_HEADER]: { description: 'How many entries the body\'s warnings holds; absent when it holds none (docs/API.md, "Create an event").', schema: { type: 'integer', minimum: 1 } } },
    },
  },
  errors: {
    solution_required: 'solution required.',
    event_data_invalid: 'event_data does not conform to its schema; detail, a string, names the schema and every problem, and errors lists them as {loc, msg, type}.',
    image_decode_failed: 'An image failed to decode from base64.',
    unknown_event_schema: 'Unknown event_schema.',
    validation_failed: 'Request validation failed, an image over MAX_PREDICTIONS_PER_IMAGE, an event over MAX_PREDICTIONS_PER_EVENT or MAX_POINTS_PER_EVENT, or malformed JSON; detail is a list of {loc, msg, type}.',
    store_failure: 'Store failure.',
    disk_full: 'Disk full.',
  },
};

/** An attachment route's doc (docs/API.md, "Drafts and attachments"). */
function attachDoc(kind: 'video' | 'local-only file', operationId: string, fields: OpenApiObject, errors: RouteDoc['errors']): RouteDoc {
  return {
    tag: 'attachments',
    summary: `Attach a ${kind} to a draft event`,
    operationId,
    description: 'The event must be a draft (checked before the body is read). The body is streamed and the size limit enforced per chunk.',
    pathParams: { event_id: 'Id of the draft event.' },
    requestBody: {
      required: true,
      content: {
        'multipart/form-data': {
          schema: {
            type: 'object',
            required: ['file'],
            properties: { file: { type: 'string', format: 'binary', description: 'Exactly one file part.' }, ...fields },
          },
        },
      },
    },
    responses: { 201: jsonResponse('AttachResponse', 'Stored and listed on the event.') },
    errors: {
      malformed_multipart: 'Malformed multipart body, or missing, empty or duplicate file part.',
      event_not_found: 'Event not found.',
      event_finalized: 'Event is finalized; nothing stored.',
      upload_too_large: 'Upload exceeds its size limit.',
      ...errors,
      store_failure: 'Store failure; nothing stored.',
      disk_full: 'Disk full.',
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The routes

/**
 * `POST /v2/events`: the JSON body read within MAX_RECORD_SIZE_BYTES, prepared (off the HTTP
 * thread when heavy: create-preparer.ts), then stored through `writerOf(ctx)`. The store's table
 * passes its own store; any EventWriter serves, so the create path can run over something other
 * than LMDB (native-bench's no-storage ceiling does).
 */
export function createRoute(writerOf: (ctx: ServerContext) => EventWriter): Route {
  return {
    method: 'post',
    path: '/v2/events',
    body: 'json',
    gated: 'create',
    stores: 'event',
    doc: createDoc,
    handler: async (_ex, ctx, body) => {
      const { event, ignored, warnings } = await ctx.creates.prepare(body!.text, body!.weight);
      const answer = await storeCreate(writerOf(ctx), event, warnings);
      if (ignored.length > 0) ctx.metrics?.countIgnoredKeys(ignored.map(ignoredKeyPath));
      return { status: 201, body: answer, headers: warnings.length > 0 ? { [WARNINGS_HEADER]: String(warnings.length) } : undefined };
    },
  };
}

export const storeRoutes: Route[] = [
  {
    method: 'get',
    path: '/health',
    public: true,
    head: true,
    doc: {
      tag: 'admin',
      summary: 'Health',
      operationId: 'health',
      responses: { 200: jsonResponse('Health', 'Healthy.'), 503: jsonResponse('Health', 'Unhealthy; error says why.') },
    },
    handler: (_ex, ctx) => health(ctx),
  },
  createRoute((ctx) => ctx.store),
  {
    method: 'get',
    path: '/v2/events',
    gated: 'other',
    doc: {
      tag: 'events',
      summary: 'Query events',
      operationId: 'listEvents',
      description:
        'Filters combine with AND. Paging: pass the returned next_timestamp as end_time of the next request when sort_direction is desc '
        + '(as start_time when asc), keeping the other parameters; next_timestamp is null when nothing follows. created_at values are unique, '
        + 'so pages neither skip nor repeat an event. A page may hold fewer events than limit, even none, while next_timestamp is set: '
        + 'it stops before its body passes MAX_LIST_RESPONSE_BYTES (holding at least one event), and a filter no index covers '
        + '(metadata_filter ops other than eq) reads at most MAX_LIST_SCAN_RECORDS records per request. Page until next_timestamp is null.',
      parameters: readParamDocs('list'),
      responses: { 200: jsonResponse('EventList', 'Matching events.') },
      errors: {
        invalid_query: 'Invalid filter: a parameter the route does not take, an unknown event_schema, a malformed timestamp, a bad sort_direction, an unparseable metadata_filter.',
        validation_failed: 'limit out of range or other invalid parameter.',
      },
    },
    handler: async (ex, ctx) => jsonBytes(await listEventsBody(ctx.store, ex.searchParams(), listLimits(ctx))),
  },
  {
    method: 'get',
    path: '/v2/events/search',
    gated: 'other',
    doc: {
      tag: 'events',
      summary: 'Search events with the query language',
      operationId: 'searchEvents',
      description:
        'Filters class:C, class:C>=N, min-confidence:X, device:, stream:, schema:, workflow:, solution:, external-id:, meta.KEY:V, '
        + 'meta.KEY>N, date:YYYY-MM-DD (and date>= date<...), min-annotations:, max-annotations:, has:image|video|file, draft:true|false, '
        + 'combined with AND, OR, NOT, a leading minus and parentheses (docs/API.md, "Event search"). Newest first. Paging: pass '
        + 'next_cursor back as cursor with the same q and limit until it is null. Pages are bounded as GET /v2/events: one may hold '
        + 'fewer events than limit, even none, while next_cursor is set.',
      parameters: readParamDocs('search'),
      responses: { 200: jsonResponse('EventSearchPage', 'Matching events, newest first.') },
      errors: {
        invalid_search_query: 'The query does not parse, or holds free text (semantic search needs the hosted API); the detail gives the column and the reason.',
        invalid_query: 'A cursor that no page gave.',
        validation_failed: 'q missing, or limit out of range.',
      },
    },
    handler: async (ex, ctx) => jsonBytes(await searchEventsBody(ctx.store, ex.searchParams(), listLimits(ctx))),
  },
  {
    method: 'get',
    path: '/v2/events/latest/query',
    gated: 'other',
    doc: {
      tag: 'events',
      summary: 'Most recent events',
      operationId: 'latestEvents',
      description: 'Bounded as GET /v2/events. When next_timestamp is set, continue with GET /v2/events?end_time=<next_timestamp> '
        + 'and the same limit and include_drafts.',
      parameters: readParamDocs('latest'),
      responses: { 200: jsonResponse('EventList', 'Events, most recent first.') },
      errors: { validation_failed: 'limit out of range.' },
    },
    handler: async (ex, ctx) => jsonBytes(await latestEventsBody(ctx.store, ex.searchParams(), listLimits(ctx))),
  },
  {
    method: 'get',
    path: '/v2/events/:event_id',
    gated: 'other',
    doc: {
      tag: 'events',
      summary: 'Get one event',
      operationId: 'getEvent',
      pathParams: { event_id: 'Event id (uuid).' },
      responses: { 200: jsonResponse('StoredEvent', 'The event.') },
      errors: { event_not_found: 'Event not found.' },
    },
    handler: (ex, ctx) => jsonBytes(getEventBody(ctx.store, ex.params[0])),
  },
  {
    method: 'get',
    path: '/events/count/stats',
    gated: 'other',
    doc: {
      tag: 'events',
      summary: 'Count events',
      operationId: 'countEvents',
      parameters: readParamDocs('count'),
      responses: { 200: jsonResponse('CountStats', 'Counts.') },
    },
    handler: async (ex, ctx) => ({ status: 200, body: await countStatsResponse(ctx.store, ex.searchParams()) }),
  },
  {
    method: 'post',
    path: '/v2/events/:event_id/videos',
    gated: 'other',
    stores: 'file',
    doc: attachDoc('video', 'attachVideo', { label: { type: 'string', default: 'video' } }, {
      unsupported_video: 'Content is not a supported video format (detected from the bytes).',
      validation_failed: 'Invalid label.',
    }),
    handler: (ex, ctx) => upload(ex, ctx, 'video'),
  },
  {
    method: 'post',
    path: '/v2/events/:event_id/local-only-files',
    gated: 'other',
    stores: 'file',
    doc: attachDoc(
      'local-only file',
      'attachLocalOnlyFile',
      { label: { type: 'string', default: 'file' }, content_type: { type: 'string', description: 'MIME type; sniffed when omitted.' } },
      { validation_failed: 'Invalid label or content_type.' },
    ),
    handler: (ex, ctx) => upload(ex, ctx, 'local_only'),
  },
  {
    method: 'post',
    path: '/v2/events/:event_id/finalize',
    doc: {
      tag: 'events',
      summary: 'Finalize a draft',
      operationId: 'finalizeEvent',
      description: 'Idempotent: a repeat call answers already_finalized true. Available even when the store is capacity-blocked.',
      pathParams: { event_id: 'Event id (uuid).' },
      responses: { 200: jsonResponse('FinalizeResponse', 'Finalized.') },
      errors: { event_not_found: 'Event not found.', store_failure: 'Store failure.', disk_full: 'Disk full.' },
    },
    handler: async (ex, ctx) => ({ status: 200, body: await finalize(ctx.store, ex.params[0]) }),
  },
  ...fileRoutes,
];
