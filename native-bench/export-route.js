#!/usr/bin/env node
/**
 * The dataset export through `GET /v2/export` (docs/API.md, "Dataset export"), end to end: a
 * store filled with `events` events (default 10,000) of one ~50 KB JPEG each (rocket.jpg padded
 * with a comment segment, as native-bench/export.js) and four predictions, served by
 * `node dist/src/cli.js serve` in its own process; this process downloads each format's zip,
 * counting its bytes, while it samples the store's RSS (/proc/<pid>/status VmRSS) every 20 ms.
 * Each format is exported twice: the first on a store that has not exported yet, the second
 * warm. Prints MB/s of zip received and the store's peak RSS growth over its RSS before that
 * export.
 *
 *   npm run build && node native-bench/export-route.js [events=10000]
 *
 * A minute or two: state the load with the figures (printed).
 */
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import { fillStore, loadAverage, openBenchStore } from './lib/in-process-store.js';
import { StoreProcess } from './lib/store-process.js';

const events = Number(process.argv[2] ?? 10_000);
const IMAGE_BYTES = 50_000;

/** rocket.jpg with a COM segment after SOI, so the file is IMAGE_BYTES long. */
function paddedJpeg() {
  const jpeg = fs.readFileSync(new URL('../test/fixtures/rocket.jpg', import.meta.url));
  const pad = IMAGE_BYTES - jpeg.length - 4;
  const segment = Buffer.alloc(4 + pad, 0x20);
  segment.writeUInt16BE(0xfffe, 0);
  segment.writeUInt16BE(pad + 2, 2);
  return Buffer.concat([jpeg.subarray(0, 2), segment, jpeg.subarray(2)]);
}

function imageEvent(base64, i) {
  const box = (cls, dx) => ({ class: cls, x: 100 + dx, y: 80, width: 40, height: 30, confidence: 0.9 });
  return {
    workflow_id: 'wf-1',
    workflow_version: '3',
    inference_timestamp: new Date(Date.UTC(2026, 10, 1) + i * 40).toISOString(),
    device_id: `cam-${i % 8}`,
    event_schema: 'custom',
    event_data: { value: 'frame' },
    images: [{
      base64_image: base64,
      object_detections: [box('car', 0), box('person', 50)],
      classifications: [{ class: 'day', confidence: 0.8 }],
      instance_segmentations: [{ ...box('car', 0), points: [[80, 65], [120, 65], [120, 95], [80, 95]] }],
    }],
  };
}

/** Resident bytes of process `pid`: anonymous (heap, buffers) and file-backed (LMDB's map, code). */
function rss(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (name) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)[1]) * 1024;
  return { total: kib('VmRSS'), anon: kib('RssAnon'), file: kib('RssFile') };
}

const bench = await openBenchStore('export-route');
const { dataDir } = bench;
try {
  const base64 = paddedJpeg().toString('base64');
  const fillSeconds = await fillStore(bench, events, (i) => imageEvent(base64, i), 100);
  await bench.store.close();
  console.log(`${events} events of one ${IMAGE_BYTES}-byte JPEG stored in ${fillSeconds.toFixed(1)} s; node ${process.version}; load average ${loadAverage()}`);

  const server = await StoreProcess.start(dataDir);
  try {
    console.log('\n| Format | Run | Zip | Seconds | MB/s | Store RSS before | Peak growth |\n|---|---|---|---|---|---|---|');
    for (const format of ['coco', 'yolo', 'labelstudio']) {
      for (const run of ['first', 'warm']) {
        const before = rss(server.pid);
        const peak = { ...before };
        const sample = () => {
          const now = rss(server.pid);
          for (const key of Object.keys(peak)) peak[key] = Math.max(peak[key], now[key]);
        };
        const sampler = setInterval(sample, 20);
        const started = performance.now();
        const response = await fetch(`${server.url}/v2/export?${new URLSearchParams({ q: '*', format })}`);
        if (response.status !== 200) throw new Error(`${format}: ${response.status} ${await response.text()}`);
        let bytes = 0;
        for await (const chunk of response.body) bytes += chunk.length;
        const seconds = (performance.now() - started) / 1000;
        clearInterval(sampler);
        sample();
        const mib = (bytes) => (bytes / 1048576).toFixed(1);
        console.log(`| ${format} | ${run} | ${(bytes / 1e6).toFixed(0)} MB | ${seconds.toFixed(2)} | ${(bytes / seconds / 1e6).toFixed(0)} | ${mib(before.total)} MiB | ${mib(peak.total - before.total)} MiB (anonymous ${mib(peak.anon - before.anon)}, file-backed ${mib(peak.file - before.file)}) |`);
      }
    }
    console.log(`\nload average after: ${loadAverage()}; store peak RSS over its life ${(server.usage().peakRssBytes / 1048576).toFixed(0)} MiB`);
  } finally {
    await server.stop();
  }
} finally {
  fs.rmSync(dataDir, { recursive: true, force: true });
}
