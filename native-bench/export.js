#!/usr/bin/env node
/**
 * Micro-measurement of the dataset export (docs/API.md, "Dataset export"), in process (no HTTP):
 * `writeDataset` over N events of one ~50 KB JPEG each (test/fixtures/rocket.jpg, padded to
 * 50,000 bytes with a JPEG comment segment: still a real photo whose header image-size reads),
 * read from memory, into a counting sink that takes 1 MiB and then asks the writer to wait a
 * tick (a fast client). Prints MB/s of zip and the peak RSS growth (process.memoryUsage().rss
 * sampled every 50 ms) per format. Seconds, not minutes: state the load with the figures.
 *
 *   npm run build && node native-bench/export.js [events=10000] [formats=coco,yolo,labelstudio]
 *
 * STORE_DIST=<dir> measures another build (its `dist/src`). The same through `GET /v2/export`
 * against a filled store: export-route.js.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { loadModule } from './lib/in-process-store.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const { writeDataset } = await loadModule('export/dataset-writer.js');

const events = Number(process.argv[2] ?? 10_000);
const formats = (process.argv[3] ?? 'coco,yolo,labelstudio').split(',');
const IMAGE_BYTES = 50_000;

/** rocket.jpg with a COM segment after SOI, so the file is IMAGE_BYTES long. */
function paddedJpeg() {
  const jpeg = fs.readFileSync(path.join(here, '..', 'test', 'fixtures', 'rocket.jpg'));
  const pad = IMAGE_BYTES - jpeg.length - 4;
  if (pad < 0 || pad > 0xfffd) return jpeg;
  const segment = Buffer.alloc(4 + pad, 0x20);
  segment.writeUInt16BE(0xfffe, 0);
  segment.writeUInt16BE(pad + 2, 2);
  return Buffer.concat([jpeg.subarray(0, 2), segment, jpeg.subarray(2)]);
}
const image = paddedJpeg();

function eventAt(i) {
  const box = (cls, dx) => ({ class: cls, x: 100 + dx, y: 80, width: 40, height: 30, confidence: 0.9 });
  return {
    event: { id: `ev-${i}`, workflow_id: 'wf-1', workflow_version: '3', device_id: `cam-${i % 8}`, event_schema: 'custom', inference_timestamp: new Date(1_700_000_000_000 + i).toISOString() },
    images: [{
      fileId: `file-${i}`, contentType: 'image/jpeg',
      results: {
        label: null, metadata: {}, classifications: [{ class: 'day', confidence: 0.8 }],
        object_detections: [box('car', 0), box('person', 50)],
        instance_segmentations: [{ ...box('car', 0), points: [[80, 65], [120, 65], [120, 95], [80, 95]] }],
        keypoints: [{ ...box('person', 50), keypoints: [{ id: 0, x: 150, y: 70, occluded: false }, { id: 1, x: 155, y: 90, occluded: true }] }],
      },
    }],
  };
}

async function* source() {
  for (let i = 0; i < events; i++) yield eventAt(i);
}

/** Counts bytes; says "wait" after each MiB, and is writable again on the next tick. */
function countingSink() {
  let pending = 0;
  return {
    bytes: 0,
    write(chunk) {
      this.bytes += chunk.length;
      pending += chunk.length;
      return pending < 1 << 20;
    },
    writable: () => new Promise((resolve) => setImmediate(() => {
      pending = 0;
      resolve();
    })),
    end() {},
  };
}

// Each format runs in a process of its own, so one's heap does not hide the next one's growth.
if (formats.length > 1) {
  console.log(`${events} events x one ${image.length}-byte JPEG; node ${process.version}; load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  for (const format of formats) spawnSync(process.execPath, [fileURLToPath(import.meta.url), String(events), format], { stdio: 'inherit' });
  console.log(`load average after: ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  process.exit(0);
}
for (const format of formats) {
  const base = process.memoryUsage().rss;
  let peak = base;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 50);
  const sink = countingSink();
  const started = performance.now();
  const summary = await writeDataset(format, source(), async () => image, sink);
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().rss);
  console.log(`${format}: ${(sink.bytes / seconds / 1e6).toFixed(0)} MB/s (${(sink.bytes / 1e6).toFixed(0)} MB in ${seconds.toFixed(2)} s), peak RSS growth ${((peak - base) / 1048576).toFixed(1)} MiB; ${summary.images} images, ${summary.annotations} annotations`);
}
