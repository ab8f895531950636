/** The event store's routes (docs/API.md, "Routes"), as one table (see route-table.ts). */
import { AppError } from '../errors.js';
import { assertAttachable, attachUpload, finalize } from '../events/attach-file.js';
import { createEvent, type EventWriter } from '../events/create-event.js';
import { countStatsResponse, getEventBody, latestEventsBody, listEventsBody, type ListLimits } from '../events/read-events.js';
import type { FileKind } from '../store/lmdb-env.js';
import { sendFile } from './file-download.js';
import { receiveUpload } from './multipart-upload.js';
import type { BytesReply, Route, ServerContext } from './route-table.js';
import type { Exchange } from './exchange.js';

/** Sends file `ex.params[0]` when it exists and is of `kind` (docs/API.md, "Errors": E9). */
async function download(ex: Exchange, ctx: ServerContext, kind: FileKind): Promise<void> {
  const [fileId] = ex.params;
  const file = ctx.store.getFile(fileId);
  if (!file || file.kind !== kind) throw new AppError('file_not_found', `File ${fileId} not found`);
  await sendFile(ex, ctx.store.blobs, file, fileId);
}

/**
 * Streams a multipart upload into draft `ex.params[0]`, after checking its state and before
 * reading any of the body (docs/API.md, "Drafts and attachments", rule 1). Runs synchronously up
 * to the body read.
 */
function upload(ex: Exchange, ctx: ServerContext, kind: 'video' | 'local_only') {
  const [eventId] = ex.params;
  assertAttachable(ctx.store, eventId);
  const limit = kind === 'video' ? ctx.config.maxVideoUploadBytes : ctx.config.maxLocalOnlyFileUploadBytes;
  return receiveUpload(ex, ctx.store.stagingDir, limit)
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
    return { status: 200, body: { status: 'healthy', datastore: 'ok' } };
  } catch (err) {
    return { status: 503, body: { status: 'unhealthy', datastore: 'error', error: (err as Error).message } };
  }
}

/**
 * `POST /v2/events`: the JSON body read within MAX_RECORD_SIZE_BYTES, then createEvent storing
 * through `writerOf(ctx)`. The store's table passes its own store; any EventWriter serves, so the
 * create path can run over something other than LMDB (native-bench's no-storage ceiling does).
 */
export function createRoute(writerOf: (ctx: ServerContext) => EventWriter): Route {
  return {
    method: 'post',
    path: '/v2/events',
    body: 'json',
    gated: 'create',
    handler: async (_ex, ctx, body) => ({ status: 201, body: await createEvent(writerOf(ctx), ctx.config, body) }),
  };
}

export const storeRoutes: Route[] = [
  { method: 'get', path: '/health', public: true, handler: (_ex, ctx) => health(ctx) },
  createRoute((ctx) => ctx.store),
  { method: 'get', path: '/v2/events', gated: 'other', handler: (ex, ctx) => jsonBytes(listEventsBody(ctx.store, ex.searchParams(), listLimits(ctx))) },
  {
    method: 'get',
    path: '/v2/events/latest/query',
    gated: 'other',
    handler: (ex, ctx) => jsonBytes(latestEventsBody(ctx.store, ex.searchParams(), listLimits(ctx))),
  },
  { method: 'get', path: '/v2/events/:event_id', gated: 'other', handler: (ex, ctx) => jsonBytes(getEventBody(ctx.store, ex.params[0])) },
  { method: 'get', path: '/events/count/stats', gated: 'other', handler: (ex, ctx) => ({ status: 200, body: countStatsResponse(ctx.store, ex.searchParams()) }) },
  { method: 'post', path: '/v2/events/:event_id/videos', gated: 'other', handler: (ex, ctx) => upload(ex, ctx, 'video') },
  { method: 'post', path: '/v2/events/:event_id/local-only-files', gated: 'other', handler: (ex, ctx) => upload(ex, ctx, 'local_only') },
  {
    method: 'post',
    path: '/v2/events/:event_id/finalize',
    handler: async (ex, ctx) => ({ status: 200, body: await finalize(ctx.store, ex.params[0]) }),
  },
  { method: 'get', path: '/images/:image_id', gated: 'other', handler: (ex, ctx) => download(ex, ctx, 'image') },
  { method: 'get', path: '/videos/:video_id', gated: 'other', handler: (ex, ctx) => download(ex, ctx, 'video') },
  { method: 'get', path: '/local-only-files/:file_id', gated: 'other', handler: (ex, ctx) => download(ex, ctx, 'local_only') },
];
