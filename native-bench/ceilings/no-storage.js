/**
 * The no-storage ceiling: the store's own create path on the HTTP thread with nothing stored. The
 * built store (../dist) serves POST /v2/events through its HTTP engine, route table
 * (registerRoutes: browser guard, key check, capacity gate, body read within
 * MAX_RECORD_SIZE_BYTES, JSON.parse) and create route (createRoute: ajv validation, the
 * predictions limit, base64 decode and content sniffing of images, the 201 body), over a stand-in
 * for EventStore.create that answers at once: no LMDB, no blob segment, no fdatasync. The store's
 * rate against this one is what its durable write costs.
 *
 *   PORT=18001 HTTP_ENGINE=uws node ceilings/no-storage.js
 *   PORT=18001 HTTP_ENGINE=node node ceilings/no-storage.js
 *
 * Settings come from the environment as the store reads them (loadConfig: HOST, API_KEY,
 * MAX_RECORD_SIZE_BYTES, ...; lib/ceilings.js passes the bench's store settings); DATA_DIR is
 * never opened. GET /health answers 200 once listening.
 */
import { randomUUID } from 'node:crypto';
import { loadConfig } from '../../dist/src/config.js';
import { CreatePreparer } from '../../dist/src/events/create-preparer.js';
import { BodyBudget } from '../../dist/src/http/body-budget.js';
import { createEngine } from '../../dist/src/http/engine-choice.js';
import { registerRoutes } from '../../dist/src/http/route-table.js';
import { createRoute } from '../../dist/src/http/store-routes.js';
import { CapacityGate } from '../../dist/src/lifecycle/capacity-gate.js';
import { createLogger } from '../../dist/src/logger.js';
import { nextUniqueMicros } from '../../dist/src/store/record/timestamps.js';

let created = 0;

/**
 * Stands in for EventStore.create: answers what the store would (an id, one id per image, a
 * unique created_at, the draft flag) and keeps nothing.
 * @type {import('../../dist/src/events/create-event.js').EventWriter}
 */
const writer = {
  async create(event) {
    created += 1;
    // A create the preparer's worker built (a body of 1 MiB or more) comes with its record.
    const built = 'encoded' in event;
    const images = built ? event.record.images.filter((image) => image.file_id !== null).length : event.images.filter((entry) => entry.image !== null).length;
    return {
      id: randomUUID(),
      image_ids: Array.from({ length: images }, () => randomUUID()),
      created_at: nextUniqueMicros(),
      draft: built ? event.record.draft : event.fields.draft,
    };
  },
};

const config = loadConfig();
const log = createLogger(config.logLevel, [config.apiKey]);
const engine = createEngine(config, log);
// The gate of a store without cloud upload: it looks at the store only while blocked, which a
// flag nobody sets never is (docs/API.md, "Capacity and 529").
const gate = new CapacityGate(new Int32Array(new SharedArrayBuffer(4)), { trackUploads: false }, config, log);
const health = { method: 'get', path: '/health', public: true, handler: () => ({ status: 200, body: { status: 'healthy', datastore: 'none' } }) };
// The create route's body budget and preparer, as the store's server has them (src/http/server.ts).
const ctx = { config, log, lifecycle: { gate }, runtime: engine.runtime, creates: new CreatePreparer(config), bodies: new BodyBudget(config.maxInflightBodyBytes) };
const inFlight = registerRoutes(engine, [health, createRoute(() => writer)], ctx);
try {
  await engine.listen(config.host, config.port);
} catch (err) {
  console.error(`no-storage: ${err.message}`);
  process.exit(1);
}

process.once('SIGTERM', async () => {
  engine.stopListening();
  await inFlight.drained(5_000);
  await ctx.creates.close();
  console.log(`no-storage (${engine.name}): answered ${created} creates`);
  process.exit(0);
});
