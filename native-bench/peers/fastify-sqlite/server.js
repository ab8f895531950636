/**
 * The conventional Node stack, as its users would write it for this job: Fastify 5 with a JSON
 * schema on the create route (Fastify compiles it with ajv), better-sqlite3 with prepared
 * statements over peers/schema.sql (WAL, synchronous=FULL), one file per image written and
 * fdatasynced before the transaction that names it, and @fastify/static for Range downloads.
 * No request logging. Contract: ../README.md.
 *
 *   PORT=8123 DATA_DIR=/tmp/peer node server.js
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import Database from 'better-sqlite3';
import Fastify from 'fastify';

const here = path.dirname(fileURLToPath(import.meta.url));
const dataDir = process.env.DATA_DIR ?? path.join(here, 'data');
const imagesDir = path.join(dataDir, 'images');
fs.mkdirSync(imagesDir, { recursive: true });

const db = new Database(path.join(dataDir, 'events.db'));
db.exec(fs.readFileSync(path.join(here, '..', 'schema.sql'), 'utf8'));

const insertEvent = db.prepare('INSERT INTO events (id, created_at, device_id, event_schema, workflow_id, body) VALUES (?, ?, ?, ?, ?, ?)');
const insertMetadata = db.prepare('INSERT INTO event_metadata (key, value, event_id) VALUES (?, ?, ?)');
const countEvents = db.prepare('SELECT count(*) AS n FROM events').pluck();
/** One transaction per event: the row and its metadata rows, fsynced on commit. */
const storeEvent = db.transaction((row, metadata) => {
  insertEvent.run(row.id, row.createdAt, row.deviceId, row.eventSchema, row.workflowId, row.body);
  for (const [key, value] of metadata) insertMetadata.run(key, value, row.id);
});

/** List statements, prepared once per shape (which filters are present). */
const listStatements = new Map();
function listStatement(hasDevice, metadataCount) {
  const shape = `${hasDevice}:${metadataCount}`;
  let statement = listStatements.get(shape);
  if (!statement) {
    const where = [];
    if (hasDevice) where.push('e.device_id = ?');
    for (let i = 0; i < metadataCount; i++) {
      // With a device the device index drives and metadata is probed; without one the
      // metadata index yields the candidate ids.
      where.push(hasDevice
        ? 'EXISTS (SELECT 1 FROM event_metadata m WHERE m.key = ? AND m.value = ? AND m.event_id = e.id)'
        : 'e.id IN (SELECT event_id FROM event_metadata WHERE key = ? AND value = ?)');
    }
    const sql = `SELECT body FROM events e ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY e.created_at DESC LIMIT ?`;
    statement = db.prepare(sql).pluck();
    listStatements.set(shape, statement);
  }
  return statement;
}

/** Writes `bytes` to a new file and fdatasyncs it, so it is on disk before the record names it. */
async function writeDurably(file, bytes) {
  const handle = await fs.promises.open(file, 'wx');
  try {
    await handle.writeFile(bytes);
    await handle.datasync();
  } finally {
    await handle.close();
  }
}

const metadataText = (value) => (typeof value === 'object' ? JSON.stringify(value) : String(value));

const app = Fastify({ logger: false, bodyLimit: 32 * 1024 * 1024 });
await app.register(fastifyStatic, { root: imagesDir, serve: false });

const createSchema = {
  body: {
    type: 'object',
    required: ['inference_timestamp', 'event_schema'],
    properties: {
      inference_timestamp: { type: 'string' },
      event_schema: { type: 'string' },
      device_id: { type: 'string' },
      workflow_id: { type: 'string' },
      custom_metadata: { type: 'object' },
      images: { type: 'array', items: { type: 'object' } },
    },
  },
};

// The store answers 422 for a body that fails validation (docs/API.md, "Errors": E7); Fastify's default is 400.
app.setErrorHandler((error, _request, reply) => {
  if (error.validation) return reply.code(422).send({ detail: error.message });
  return reply.send(error);
});

app.get('/health', async () => ({ status: 'ok' }));

app.post('/v2/events', { schema: createSchema }, async (request, reply) => {
  const event = request.body;
  const id = randomUUID();
  const createdAt = Date.now();
  const imageIds = [];
  for (const image of event.images ?? []) {
    if (typeof image.base64Image !== 'string') continue;
    const imageId = `${randomUUID()}.jpg`;
    await writeDurably(path.join(imagesDir, imageId), Buffer.from(image.base64Image, 'base64'));
    delete image.base64Image;
    image.image_id = imageId;
    imageIds.push(imageId);
  }
  const body = JSON.stringify({ id, created_at: new Date(createdAt).toISOString(), ...event });
  const metadata = Object.entries(event.custom_metadata ?? {}).map(([key, value]) => [key, metadataText(value)]);
  storeEvent({ id, createdAt, deviceId: event.device_id ?? null, eventSchema: event.event_schema, workflowId: event.workflow_id ?? null, body }, metadata);
  reply.code(201);
  return { id, image_ids: imageIds };
});

app.get('/v2/events', async (request, reply) => {
  const { device_id: deviceId, limit: rawLimit = '100' } = request.query;
  const limit = Number(rawLimit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) return reply.code(422).send({ detail: 'limit must be 1..1000' });
  const filters = [request.query.metadata_filter ?? []].flat();
  const params = deviceId === undefined ? [] : [deviceId];
  for (const filter of filters) {
    const colon = filter.indexOf(':');
    if (colon <= 0) return reply.code(400).send({ detail: `invalid metadata_filter '${filter}'` });
    params.push(filter.slice(0, colon), filter.slice(colon + 1));
  }
  const bodies = listStatement(deviceId !== undefined, filters.length).all(...params, limit);
  // The stored JSON is spliced in as it is rather than parsed and serialised again.
  reply.type('application/json');
  return `{"events":[${bodies.join(',')}],"count":${bodies.length}}`;
});

app.get('/events/count/stats', async () => ({ total_count: countEvents.get() }));

app.get('/images/:id', async (request, reply) => {
  const { id } = request.params;
  if (id.includes('/') || id.includes('..')) return reply.code(404).send({ detail: 'not found' });
  return reply.sendFile(id);
});

const port = Number(process.env.PORT ?? 8123);
await app.listen({ host: '127.0.0.1', port });

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, async () => {
    await app.close();
    db.close();
    process.exit(0);
  });
}
