/**
 * Versioned records (spec B, Versioning rule 2): a record written in the first release's layout
 * decodes and is returned by queries next to current records.
 */
import { Packr } from 'msgpackr';
import t from 'tap';
import { indexKeysOf } from '../src/store/index-keys.js';
import { openDatabases } from '../src/store/lmdb-env.js';
import { decodeRecord } from '../src/store/record-codec.js';
import { parseIsoMicros } from '../src/store/timestamps.js';
import { getJson, postJson, smallEvent } from './support/events.js';
import { startStore, tempDataDir } from './support/store-server.js';

/** A record exactly as layout 1 wrote it: a map with `v: 1` and created_at as ISO text. */
const layout1 = {
  v: 1,
  id: '7d1f2c3a-0000-4000-8000-000000000001',
  created_at: '2025-06-01T08:30:00.250000Z',
  solution: 'line-qa',
  workflow_id: 'wf-old',
  workflow_version: '1',
  inference_timestamp: '2025-06-01T08:29:59Z',
  device_id: 'cam-legacy',
  stream_id: null,
  event_schema: 'quality_check',
  event_data: { result: 'fail', external_id: 'lot-9' },
  custom_metadata: { line: 'C' },
  images: [{ file_id: null, label: 'top', object_detections: [{ class: 'scratch', x: 1, y: 2, width: 3, height: 4, confidence: 0.5 }] }],
};

t.test('a layout-1 record decodes with the fields later layouts added', async (t) => {
  const record = decodeRecord(new Packr({ useRecords: false }).pack(layout1));
  t.equal(record.created_at, parseIsoMicros(layout1.created_at));
  t.equal(record.draft, false);
  t.equal(record.finalized_at, record.created_at);
  t.same(record.videos, []);
  t.equal(record.images[0].object_detections[0].class, 'scratch');
  t.same(record.images[0].classifications, []);
  t.throws(() => decodeRecord(new Packr().pack([99, 'future'])), /unknown layout/);
});

t.test('a layout-1 record in LMDB is returned by queries beside new ones', async (t) => {
  const dataDir = tempDataDir();
  const dbs = openDatabases(dataDir);
  const record = decodeRecord(new Packr({ useRecords: false }).pack(layout1));
  await dbs.root.transaction(() => {
    dbs.events.putSync(record.created_at, new Packr({ useRecords: false }).pack(layout1));
    dbs.eventIds.putSync(layout1.id, record.created_at);
    for (const key of indexKeysOf(record, false)) dbs.index.putSync(key, Buffer.alloc(0));
  });
  await dbs.root.close();

  const store = await startStore({ DATA_DIR: dataDir, RETENTION_DAYS: '36500' }); // the record is from 2025
  t.teardown(store.stop);
  const fresh = await postJson(`${store.url}/v2/events`, smallEvent({ device_id: 'cam-legacy' }));
  const one = await getJson(`${store.url}/v2/events/${layout1.id}`);
  t.equal(one.status, 200);
  t.equal(one.body.created_at, '2025-06-01T08:30:00.250000Z');
  t.equal(one.body.api_version, 'v2');
  t.same(one.body.event_data, { result: 'fail', external_id: 'lot-9' });
  const list = await getJson(`${store.url}/v2/events?device_id=cam-legacy&sort_direction=asc`);
  t.same(list.body.events.map((e: { id: string }) => e.id), [layout1.id, fresh.body.id]);
  const byMetadata = await getJson(`${store.url}/v2/events?metadata_filter=line:C`);
  t.same(byMetadata.body.events.map((e: { id: string }) => e.id), [layout1.id]);
});
