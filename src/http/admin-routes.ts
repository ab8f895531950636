/** Statistics, manual cleanup and the two-step reset (docs/API.md, "Statistics", "Cleanup and reset"). */
import { resetStore } from '../operations/reset.js';
import { storeStats } from '../operations/store-stats.js';
import { parseJsonText } from '../json-text.js';
import { jsonRequest, jsonResponse } from './route-docs.js';
import type { Route } from './route-table.js';

export const adminRoutes: Route[] = [
  {
    method: 'get',
    path: '/metrics',
    // Prometheus sends no custom header: its scrape config passes the key as a parameter.
    keyInQuery: true,
    doc: {
      tag: 'admin',
      summary: 'Prometheus metrics',
      operationId: 'getMetrics',
      description: 'The text exposition format, every name prefixed edge_events_ (docs/OPERATIONS.md, "Metrics").',
      responses: { 200: { description: 'The metrics.', content: { 'text/plain': { schema: { type: 'string' } } } } },
    },
    handler: async (_ex, ctx) => {
      const { text, contentType } = await ctx.metrics!.scrape();
      return { status: 200, bytes: text, headers: { 'Content-Type': contentType } };
    },
  },
  {
    method: 'get',
    path: '/stats',
    doc: {
      tag: 'admin',
      summary: 'Storage statistics',
      operationId: 'getStats',
      responses: { 200: jsonResponse('Stats', 'Statistics.') },
      errors: { store_failure: 'Store failure.' },
    },
    handler: async (_ex, ctx) => {
      const live = {
        gate: ctx.lifecycle.gate, lastCleanup: ctx.lifecycle.lastCleanup, mqtt: ctx.mqtt?.status(), sinkProgress: ctx.lifecycle.sinkProgress,
        searchIndex: { ready: ctx.store.searchIndexReady, backfill: ctx.store.searchIndexBackfill }, scrub: ctx.lifecycle.scrubStatus,
      };
      return { status: 200, body: { ...await storeStats(ctx.store, ctx.config, live), disk_writes: ctx.diskWrites?.report() ?? null, hub: ctx.hub?.status() ?? null, runtime: ctx.runtime } };
    },
  },
  {
    method: 'post',
    path: '/admin/cleanup',
    doc: {
      tag: 'admin',
      summary: 'Run cleanup now',
      operationId: 'runCleanup',
      description: 'Deletes records past retention_days, the oldest records over max_records and the oldest files over max_storage_bytes.',
      responses: { 200: jsonResponse('CleanupResult', 'What was deleted.') },
      errors: { store_failure: 'Cleanup failed, or the lifecycle worker is restarting.' },
    },
    handler: async (_ex, ctx) => ({ status: 200, body: await ctx.lifecycle.cleanup() }),
  },
  {
    method: 'post',
    path: '/reset/request',
    doc: {
      tag: 'admin',
      summary: 'Request a reset token',
      operationId: 'requestReset',
      responses: { 200: jsonResponse('ResetToken', 'A single-use token valid 60 seconds.') },
      errors: { store_failure: 'Store failure.' },
    },
    handler: (_ex, ctx) => ({ status: 200, body: ctx.resetTokens.issue() }),
  },
  {
    method: 'post',
    path: '/reset/confirm',
    body: 'json',
    // `{"reset_token": "..."}`: a body of records' size would only be parsed on the HTTP thread.
    bodyLimit: 4096,
    doc: {
      tag: 'admin',
      summary: 'Delete every event and file',
      operationId: 'confirmReset',
      description: 'Permanent; cannot be undone.',
      requestBody: jsonRequest('ResetConfirmRequest'),
      responses: { 200: jsonResponse('ResetConfirm', 'Everything deleted.') },
      errors: {
        reset_token_invalid: 'Missing, invalid, expired or used reset token.',
        validation_failed: 'Malformed body.',
        store_failure: 'Store failure.',
      },
    },
    handler: async (_ex, ctx, body) => {
      ctx.resetTokens.consume((parseJsonText(body!.text) as { reset_token?: unknown } | undefined)?.reset_token);
      return { status: 200, body: await resetStore(ctx.store, ctx.lifecycle) };
    },
  },
];
