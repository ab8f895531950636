/**
 * The index entries a checkpoint puts in key order (src/store/index/index-key-order.ts; docs/STORAGE.md,
 * "Checkpoint commits"): the entries of records of every key shape the index has, gathered create
 * by create in created_at order, come back every one, in lmdb's key order (`compareKeys`).
 */
import t from 'tap';
import { compareKeys, type Key } from 'lmdb';
import type { EventRecord } from '../src/store/record/event-record.js';
import { IndexKeyOrder } from '../src/store/index/index-key-order.js';
import { indexKeysOf } from '../src/store/index/index-keys.js';

const DEVICES = ['cam-b', 'cam-a', 'cam-c', 'Cam-A'];
const CLASSES = ['cap', 'bottle', 'label', 'ok'];

/** A record of the n-th create at `createdAt` (µs): devices, metadata of each type, classes, drafts and files varying with n. */
function recordOf(n: number, createdAt: number): EventRecord {
  const fileId = (k: number) => `01a2${String(n).padStart(4, '0')}-0000-7000-8000-00000000000${k}`;
  return {
    id: `01a2${String(n).padStart(4, '0')}-0000-7000-8000-000000000000`,
    created_at: createdAt,
    solution: n % 2 === 0 ? 'line-qa' : null,
    workflow_id: `wf-${n % 3}`,
    workflow_version: '3',
    inference_timestamp: '2026-11-29T07:00:00Z',
    device_id: DEVICES[n % DEVICES.length],
    stream_id: n % 5 === 0 ? null : `rtsp-${n % 2}`,
    image_id: null,
    event_schema: n % 4 === 0 ? 'quality_check' : 'custom',
    event_data: {},
    custom_metadata: { line: `L${n % 3}`, batch: n % 7, ok: n % 2 === 0, temperature_c: 20 + (n % 4) / 2 },
    images: [{
      file_id: fileId(1), input_file_id: null, label: 'front',
      object_detections: [{ class: CLASSES[n % CLASSES.length], x: 1, y: 2, width: 3, height: 4, confidence: 0.9 }],
      classifications: [{ class: CLASSES[(n + 1) % CLASSES.length], confidence: 0.99 }], instance_segmentations: [], keypoints: [], metadata: {},
    }],
    videos: n % 3 === 0 ? [{ file_id: fileId(2), label: 'clip', content_type: 'video/mp4', size_bytes: 10 }] : [],
    local_only_files: [],
    display_image_position: 0,
    original_file_count: 1,
    current_file_count: 1,
    draft: n % 4 === 1,
    finalized_at: null,
    auto_finalized_at: null,
  };
}

/** Keys as sorted JSON texts: the take builds its keys afresh, so they compare by value. */
const asText = (keys: Key[][]): string[] => keys.map((key) => JSON.stringify(key)).sort();

t.test('every entry comes back once, in key order, and the order starts over after a take', async (t) => {
  const order = new IndexKeyOrder();
  for (const round of [0, 1]) {
    const added: Key[][] = [];
    for (let n = 0; n < 300; n++) {
      const createdAt = 1_795_000_000_000_000 + round * 1_000_000 + n * 997;
      for (const key of indexKeysOf(recordOf(n, createdAt))) {
        order.add(key, createdAt);
        added.push(key);
      }
    }
    const taken = [...order.take()];
    t.same([...order.take()], [], `round ${round}: empty after the take`);
    t.same(asText(taken), asText(added), `round ${round}: the same entries`);
    t.equal(taken.length, added.length, `round ${round}: each once`);
    const outOfOrder = taken.findIndex((key, i) => i > 0 && compareKeys(taken[i - 1], key) > 0);
    t.equal(outOfOrder, -1, `round ${round}: in key order (first out of order at ${outOfOrder})`);
    t.equal(new Set(taken.map((key) => key[0])).size > 8, true, `round ${round}: entries of many key shapes`);
  }
});

t.test('a key part equal to its created_at keeps the entry, in a group of its own', async (t) => {
  const order = new IndexKeyOrder();
  const createdAt = 1_795_000_000_000_000;
  const odd = ['m', 'frame', createdAt, createdAt];
  order.add(['d', 'cam-a', createdAt], createdAt);
  order.add(odd, createdAt);
  const taken = [...order.take()];
  t.equal(taken.length, 2);
  t.equal(taken.includes(odd), true, 'the entry is kept');
});
