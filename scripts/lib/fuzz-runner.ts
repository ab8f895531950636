/** Runs one fuzz property with fast-check and lets its last runs finish before the next property. */
import fc from 'fast-check';
import type { FuzzProperty } from './fuzz-properties.js';
import { settleRuns, type FuzzContext } from './fuzz-target.js';

/** Checks `property` on `ctx` with fast-check `parameters`; resolves once no run of it is left going. */
export async function checkProperty(property: FuzzProperty, ctx: FuzzContext, parameters: fc.Parameters<unknown>): Promise<fc.RunDetails<unknown>> {
  try {
    return await fc.check(property.build(ctx), parameters);
  } finally {
    await settleRuns(ctx);
  }
}
