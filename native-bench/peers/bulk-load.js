/**
 * Fills a peer's database (peers/schema.sql) with `count` small events directly, in
 * transactions of 10,000 rows: the filtered-list workload measures the peer's queries over
 * 1,000,000 events, and loading them through the peer's HTTP API would take most of an hour.
 * The events are the bench's own small events (lib/payloads.js, same seed as the request file),
 * stored exactly as the peers' POST /v2/events stores them.
 *
 *   node peers/bulk-load.js <dataDir> <count>
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { seeded, smallEvent } from '../lib/payloads.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const BATCH = 10_000;

/**
 * Creates `dataDir/events.db` with `count` events (created_at 1 ms apart, ending now).
 * @returns {{ count: number, seconds: number }}
 */
export function bulkLoad(dataDir, count) {
  const started = performance.now();
  fs.mkdirSync(path.join(dataDir, 'images'), { recursive: true });
  const db = new Database(path.join(dataDir, 'events.db'));
  db.exec(fs.readFileSync(path.join(here, 'schema.sql'), 'utf8'));
  db.pragma('synchronous = OFF'); // a bulk load, synced once at the end
  const insertEvent = db.prepare('INSERT INTO events (id, created_at, device_id, event_schema, workflow_id, body) VALUES (?, ?, ?, ?, ?, ?)');
  const insertMetadata = db.prepare('INSERT INTO event_metadata (key, value, event_id) VALUES (?, ?, ?)');
  const insertBatch = db.transaction((rows) => {
    for (const { id, createdAt, event, body } of rows) {
      insertEvent.run(id, createdAt, event.device_id, event.event_schema, event.workflow_id, body);
      for (const [key, value] of Object.entries(event.custom_metadata)) insertMetadata.run(key, String(value), id);
    }
  });
  const random = seeded(1);
  const firstCreatedAt = Date.now() - count;
  for (let start = 0; start < count; start += BATCH) {
    const rows = [];
    for (let i = start; i < Math.min(count, start + BATCH); i++) {
      const event = smallEvent(random, i);
      const id = randomUUID();
      const createdAt = firstCreatedAt + i;
      rows.push({ id, createdAt, event, body: JSON.stringify({ id, created_at: new Date(createdAt).toISOString(), ...event }) });
    }
    insertBatch(rows);
  }
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  return { count, seconds: (performance.now() - started) / 1000 };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [dataDir, count] = process.argv.slice(2);
  const loaded = bulkLoad(dataDir, Number(count));
  console.log(`loaded ${loaded.count} events into ${dataDir} in ${loaded.seconds.toFixed(1)} s`);
}
