/** Statistics, manual cleanup and the two-step reset (docs/API.md, "Statistics", "Cleanup and reset"). */
import { resetStore } from '../operations/reset.js';
import { storeStats } from '../operations/store-stats.js';
import type { Route } from './route-table.js';

export const adminRoutes: Route[] = [
  { method: 'get', path: '/stats', handler: (_ex, ctx) => ({ status: 200, body: { ...storeStats(ctx.store, ctx.config, ctx.lifecycle.gate), runtime: ctx.runtime } }) },
  { method: 'post', path: '/admin/cleanup', handler: async (_ex, ctx) => ({ status: 200, body: await ctx.lifecycle.cleanup() }) },
  { method: 'post', path: '/reset/request', handler: (_ex, ctx) => ({ status: 200, body: ctx.resetTokens.issue() }) },
  {
    method: 'post',
    path: '/reset/confirm',
    body: 'json',
    handler: async (_ex, ctx, body) => {
      ctx.resetTokens.consume((body as { reset_token?: unknown } | undefined)?.reset_token);
      return { status: 200, body: await resetStore(ctx.store, ctx.lifecycle) };
    },
  },
];
