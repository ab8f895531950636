/**
 * Versioned records (docs/ARCHITECTURE.md, "How it stores data"): a record of any layout decodes, and layout 3
 * keeps each event's presented JSON beside it, byte-identical to presenting the decoded record
 * (docs/API.md, "Routes": stored event). Records of the first release's layout and of layout 2
 * are returned by queries next to current records.
 */
import fc from 'fast-check';
import { Packr } from 'msgpackr';
import t from 'tap';
import { presentEvent, presentEventJson } from '../src/events/present.js';
import type { EventRecord } from '../src/store/record/event-record.js';
import { indexKeysOf } from '../src/store/index/index-keys.js';
import { openDatabases } from '../src/store/index/lmdb-env.js';
import { decodeRecord, encodeRecord as encodeWith, encodeUnstamped, frameRecordBytes, recordByteLength, recordFromFrame, stampValue, storedJson as storedJsonWith } from '../src/store/index/record-codec.js';
import { parseIsoMicros } from '../src/store/record/timestamps.js';
import { getJson, postJson, smallEvent } from './support/events.js';
import { startStore, tempDataDir } from './support/store-server.js';

/** The codec as a store runs it: with the API's presenter (StoreOptions.present). */
const encodeRecord = (record: EventRecord): Buffer => encodeWith(record, presentEventJson);
const storedJson = (value: Buffer): Buffer => storedJsonWith(value, presentEventJson);

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

/** A draft with every kind of field set. */
function sampleRecord(overrides: Partial<EventRecord> = {}): EventRecord {
  return {
    id: '7d1f2c3a-0000-4000-8000-000000000002',
    created_at: 1_780_000_000_123_456,
    solution: 'line-qa',
    workflow_id: 'wf-2',
    workflow_version: '3',
    inference_timestamp: '2026-05-28T20:26:40Z',
    device_id: 'cam-layout2',
    stream_id: 'rtsp-main',
    image_id: 'frame-9',
    event_schema: 'quality_check',
    event_data: { result: 'pass', external_id: 'lot-12', nested: { list: [1, 2.5, 'x', null, true] } },
    custom_metadata: { line: 'B', batch: 7, ok: true, temperature_c: 21.5 },
    images: [{
      file_id: '7d1f2c3a-0000-4000-8000-00000000000f', input_file_id: null, label: 'front',
      object_detections: [{ class: 'cap', x: 1, y: 2, width: 3, height: 4, confidence: 0.91 }],
      classifications: [{ class: 'ok', confidence: 0.99 }], instance_segmentations: [], keypoints: [], metadata: { exposure: 3 },
    }],
    videos: [{ file_id: '7d1f2c3a-0000-4000-8000-00000000000e', label: 'clip', content_type: 'video/mp4', size_bytes: 1234 }],
    local_only_files: [],
    display_image_position: 0,
    original_file_count: 2,
    current_file_count: 2,
    draft: true,
    finalized_at: null,
    auto_finalized_at: null,
    ...overrides,
  };
}

/** A record as layout 2 wrote it: the positional msgpack array, before layout 3 existed. */
function layout2Value(r: EventRecord): Buffer {
  const attachment = (a: EventRecord['videos'][number]) => [a.file_id, a.label, a.content_type, a.size_bytes];
  return new Packr({ useRecords: false, mapsAsObjects: true, variableMapSize: true }).pack([
    2, r.id, r.created_at, r.solution, r.workflow_id, r.workflow_version, r.inference_timestamp, r.device_id,
    r.stream_id, r.image_id, r.event_schema, r.event_data, r.custom_metadata,
    r.images.map((i) => [i.file_id, i.input_file_id, i.label, i.object_detections, i.classifications, i.instance_segmentations, i.keypoints, i.metadata]),
    r.videos.map(attachment), r.local_only_files.map(attachment), r.display_image_position, r.original_file_count,
    r.current_file_count, r.draft, r.finalized_at, r.auto_finalized_at,
  ]);
}

/** What `GET /v2/events/{id}` answered before layout 3: the decoded record, presented. */
const presentedAfterDecode = (value: Buffer): string => JSON.stringify(presentEvent(decodeRecord(value)));

t.test('a layout-1 record decodes with the fields later layouts added', async (t) => {
  const record = decodeRecord(new Packr({ useRecords: false }).pack(layout1));
  t.equal(record.created_at, parseIsoMicros(layout1.created_at));
  t.equal(record.draft, false);
  t.equal(record.finalized_at, record.created_at);
  t.same(record.videos, []);
  t.same(record.images[0].object_detections, layout1.images[0].object_detections);
  t.same(record.images[0].classifications, []);
  t.throws(() => decodeRecord(new Packr().pack([99, 'future'])), /unknown layout/);
});

t.test('layout 3 round trip: the record, and its presented JSON after it', async (t) => {
  const record = sampleRecord();
  const value = encodeRecord(record);
  t.equal(value[0], 3, 'layout byte');
  t.same(decodeRecord(value), record, 'decodes to the record it was made from');
  const json = storedJson(value);
  t.equal(json.toString(), JSON.stringify(presentEvent(record)), 'the stored JSON is the presented record');
  t.equal(json.buffer, value.buffer, 'a view into the stored value, not a copy');
  t.equal(recordByteLength(value), value.length - 5 - json.length, 'record part: the value less header and JSON');
  t.same(JSON.parse(json.toString()), presentEvent(record));
  // The change a finalize makes is in both parts once re-encoded.
  const finalized = decodeRecord(value);
  finalized.draft = false;
  finalized.finalized_at = record.created_at + 5;
  const rewritten = encodeRecord(finalized);
  t.same(JSON.parse(storedJson(rewritten).toString()).finalized_at, '2026-05-28T20:26:40.123461Z');
  t.equal(decodeRecord(rewritten).draft, false);
  t.throws(() => decodeRecord(Buffer.from([3, 200, 0, 0, 0, 0x90])), /longer than its stored value/, 'a truncated value is an error');
});

t.test('a record frame keeps the record without its JSON, and a replay makes the same stored value from it', async (t) => {
  const record = sampleRecord();
  const value = encodeRecord(record);
  const bytes = frameRecordBytes(value);
  t.equal(bytes.length, recordByteLength(value), 'the record part alone');
  t.equal(bytes.buffer, value.buffer, 'a view, not a copy');
  const replayed = recordFromFrame(Buffer.from(bytes), presentEventJson);
  t.same(replayed.record, record, 'decodes to the record');
  t.same(replayed.value, value, 'and makes the value encodeRecord made, byte for byte');
  const older = recordFromFrame(value, presentEventJson);
  t.equal(older.value, value, 'a whole layout-3 value (frames written before) is kept as it is');
  t.same(older.record, record);
  t.throws(() => frameRecordBytes(Buffer.from([0x90])), /not a layout-3 record/, 'only a layout-3 value has a record part');
});

t.test('layouts 1 and 2 keep decoding, and present their JSON on demand', async (t) => {
  const record = sampleRecord();
  const value2 = layout2Value(record);
  t.same(decodeRecord(value2), record, 'layout 2 decodes');
  t.equal(storedJson(value2).toString(), JSON.stringify(presentEvent(record)), 'layout 2 presented');
  t.equal(recordByteLength(value2), value2.length);
  const value1 = new Packr({ useRecords: false }).pack(layout1);
  t.equal(storedJson(value1).toString(), presentedAfterDecode(value1), 'layout 1 presented');
  t.equal(JSON.parse(storedJson(value1).toString()).created_at, layout1.created_at);
  t.same(decodeRecord(encodeRecord(decodeRecord(value1))), decodeRecord(value1), 'a layout-1 record rewritten as layout 3 keeps its fields');
});

/**
 * Runs 300 generated records through encodeRecord and checks that each one's stored JSON equals
 * presenting its decoded record. `text` makes the device id, the image label and every key;
 * `data` event_data's values; `metadata` custom_metadata's values.
 * @returns fast-check's report of the first record that fails, or undefined
 */
function firstRecordNotStoredAsDecoded(text: fc.Arbitrary<string>, data: fc.Arbitrary<unknown>, metadata: fc.Arbitrary<string | number | boolean>): string | undefined {
  const details = fc.check(fc.property(
    fc.record({ device: fc.option(text), data: fc.dictionary(text, data), metadata: fc.dictionary(text, metadata), label: fc.option(text) }),
    ({ device, data, metadata, label }) => {
      const record = sampleRecord({ device_id: device, event_data: data, custom_metadata: metadata });
      record.images[0].label = label;
      const stored = encodeRecord(record);
      return storedJson(stored).toString() === presentedAfterDecode(stored);
    },
  ), { numRuns: 300 });
  return details.failed ? (fc.defaultReportMessage(details) ?? 'a generated record failed') : undefined;
}

t.test('the stored JSON is byte-identical to presenting the decoded record, whatever the values', async (t) => {
  // msgpack stores a lone surrogate as U+FFFD characters and reads a `__proto__` key back as `__proto_`: the
  // stored JSON says what the record decodes to, as GET answered before layout 3.
  const awkward = sampleRecord({
    device_id: 'cam-\ud800-lone',
    event_data: JSON.parse('{"__proto__": {"polluted": true}, "text": "a\\udc00b", "emoji": "\u{1F600}", "big": 9007199254740993, "tiny": 5e-324, "neg": -0}'),
    custom_metadata: { 'ключ': 'значение', 'x\u2028y': 'line\u2029sep', n: -1.5e300 },
  });
  const value = encodeRecord(awkward);
  t.equal(storedJson(value).toString(), presentedAfterDecode(value));
  t.notOk(Object.hasOwn(decodeRecord(value).event_data, '__proto__'), 'as msgpack reads it back');

  const lone = fc.integer({ min: 0xd800, max: 0xdfff }).map((code) => String.fromCharCode(code));
  const text = fc.string({ unit: fc.oneof(fc.constant('a'), lone, fc.string({ unit: 'binary', minLength: 1, maxLength: 1 })), maxLength: 12 });
  t.equal(firstRecordNotStoredAsDecoded(text, fc.jsonValue(), fc.oneof(text, fc.double(), fc.integer(), fc.boolean())), undefined, '300 generated records');
});

t.test('each value msgpack would change is presented as it decodes, wherever it sits', async (t) => {
  // encodeRecord presents a record as it is unless msgpack would give it back changed; each case
  // below has one such value alone, so each guard of that check is needed for it to pass.
  const cases: Record<string, Partial<EventRecord>> = {
    'a __proto__ key deep in event_data': { event_data: JSON.parse('{"a": [{"__proto__": {"x": 1}}]}') },
    'a lone surrogate in a key': { custom_metadata: { 'k\udfff': 'v' } },
    'a lone surrogate in a nested string': { event_data: { notes: ['fine', { text: 'x\ud800' }] } },
    'a lone surrogate in a top-level field': { stream_id: '\udbff' },
  };
  for (const [name, fields] of Object.entries(cases)) {
    const record = sampleRecord(fields);
    const value = encodeRecord(record);
    t.equal(storedJson(value).toString(), presentedAfterDecode(value), name);
    t.not(storedJson(value).toString(), presentEventJson(record), `${name}: msgpack changes it`);
  }
});

t.test('a record msgpack gives back unchanged is stored with the same JSON, for any well-formed values', async (t) => {
  const text = fc.string({ unit: 'binary', maxLength: 16 });
  const number = fc.oneof(fc.double(), fc.integer(), fc.maxSafeInteger(), fc.constant(2 ** 64), fc.constant(-0));
  t.equal(firstRecordNotStoredAsDecoded(text, fc.jsonValue({ stringUnit: 'binary' }), fc.oneof(text, number, fc.boolean())), undefined, '300 generated records');
});

t.test('a value encoded before its created_at and stamped at commit is byte for byte the stamped record encoded', async (t) => {
  // The producer's own fields may hold the JSON text of a created_at or finalized_at: the stamp must land only on the record's.
  const decoy = { created_at: '2001-09-09T01:46:40.000000Z', note: '"created_at":"2001-09-09T01:46:40.000000Z","finalized_at":"' };
  const text = fc.string({ unit: 'binary', maxLength: 16 });
  const failure = fc.check(fc.property(
    fc.record({
      id: fc.oneof(fc.uuid(), fc.string({ minLength: 1, maxLength: 300 })),
      draft: fc.boolean(),
      device_id: fc.option(text),
      event_data: fc.oneof(fc.constant(decoy), fc.dictionary(text, fc.jsonValue({ stringUnit: 'binary' }), { maxKeys: 4 })),
      custom_metadata: fc.oneof(fc.constant({ '"created_at":"': 'x' }), fc.dictionary(text, fc.oneof(text, fc.double(), fc.boolean()), { maxKeys: 4 })),
    }),
    fc.integer({ min: 0, max: 2 ** 31 - 1 }).map((n) => 1e15 + n * 4_000_000 + (n % 1000)), // 2001 to 2273, any µs
    (fields, createdAt) => {
      const unstampedRecord = sampleRecord({ ...fields, created_at: 0, finalized_at: null });
      const unstamped = encodeUnstamped(unstampedRecord, presentEventJson);
      if (!unstamped) return false;
      const stamped = sampleRecord({ ...fields, created_at: createdAt, finalized_at: fields.draft ? null : createdAt });
      return stampValue(unstamped, createdAt, presentEventJson).equals(encodeRecord(stamped));
    },
  ), { numRuns: 300 });
  t.equal(failure.failed ? fc.defaultReportMessage(failure) : undefined, undefined, '300 generated records');

  const early = 4_000_000_000; // 1970-01-01T01:06:40Z: msgpack writes it narrower than the placeholder (before 2^32 µs)
  const unstamped = encodeUnstamped(sampleRecord({ draft: false }), presentEventJson)!;
  t.ok(stampValue(unstamped, early, presentEventJson).equals(encodeRecord(sampleRecord({ draft: false, created_at: early, finalized_at: early }))), 'a time msgpack writes narrower is encoded again whole');
});

t.test('records of layouts 1, 2 and 3 in one store are returned by queries side by side', async (t) => {
  const dataDir = tempDataDir();
  const dbs = openDatabases(dataDir);
  const record1 = decodeRecord(new Packr({ useRecords: false }).pack(layout1));
  const record2 = sampleRecord({ created_at: record1.created_at + 1, videos: [], images: [], original_file_count: 0, current_file_count: 0, draft: false, finalized_at: record1.created_at + 1, custom_metadata: { line: 'C' } });
  await dbs.root.transaction(() => {
    dbs.events.putSync(record1.created_at, new Packr({ useRecords: false }).pack(layout1));
    dbs.events.putSync(record2.created_at, layout2Value(record2));
    for (const record of [record1, record2]) {
      dbs.eventIds.putSync(record.id, record.created_at);
      for (const key of indexKeysOf(record)) dbs.index.putSync(key, Buffer.alloc(0));
    }
  });
  await dbs.root.close();

  const store = await startStore({ DATA_DIR: dataDir, RETENTION_DAYS: '36500' }); // the records are from 2025 and 2026
  t.teardown(store.stop);
  const fresh = await postJson(`${store.url}/v2/events`, smallEvent({ device_id: 'cam-legacy', custom_metadata: { line: 'C' } }));
  const one = await getJson(`${store.url}/v2/events/${layout1.id}`);
  t.equal(one.status, 200);
  t.equal(one.body.created_at, '2025-06-01T08:30:00.250000Z');
  t.equal(one.body.api_version, 'v2');
  t.same(one.body.event_data, { result: 'fail', external_id: 'lot-9' });
  t.same((await getJson(`${store.url}/v2/events/${record2.id}`)).body, presentEvent(record2), 'a layout-2 record, as it was presented');
  const list = await getJson(`${store.url}/v2/events?device_id=cam-legacy&sort_direction=asc`);
  t.same(list.body.events.map((e: { id: string }) => e.id), [layout1.id, fresh.body.id]);
  const byMetadata = await fetch(`${store.url}/v2/events?metadata_filter=line:C&sort_direction=asc`);
  const text = await byMetadata.text();
  const events = await Promise.all([layout1.id, record2.id, fresh.body.id].map(async (id) => (await fetch(`${store.url}/v2/events/${id}`)).text()));
  t.equal(text, `{"events":[${events.join(',')}],"count":3,"next_timestamp":null}`, 'the list is the three bodies of GET, concatenated');
});
