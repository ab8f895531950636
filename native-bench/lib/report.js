/** Renders the bench's measured figures as RESULTS.md. */

const int = (n) => Math.round(n).toLocaleString('en-US');
const ms = (n) => `${n.toFixed(2)} ms`;
const mib = (bytes) => `${(bytes / 1024 ** 2).toFixed(0)} MiB`;
const verdict = (met) => (met ? '**met**' : '**missed**');

function workloadRow(name, r) {
  const cores = r.serverCpuSeconds / r.seconds;
  const perRequestUs = (1e6 * r.serverCpuSeconds) / r.requests;
  return `| ${name} | ${r.connections} | ${int(r.requests)} | ${r.seconds.toFixed(1)} | ${int(r.rate)} | ${ms(r.p50Ms)} | `
    + `${ms(r.p90Ms)} | ${ms(r.p99Ms)} | ${ms(r.p999Ms)} | ${ms(r.maxMs)} | ${r.serverCpuSeconds.toFixed(1)} (${cores.toFixed(2)} cores) | `
    + `${r.mainThreadCpuSeconds.toFixed(1)} | ${int(perRequestUs)} µs | ${int(r.writtenBytes / r.requests)} B | ${r.peakRssBytes === undefined ? '' : mib(r.peakRssBytes)} | ${r.wrkCpuSeconds.toFixed(1)} | `
    + `${r.otherCpuSeconds.toFixed(1)} (${(r.otherCpuSeconds / r.seconds).toFixed(2)} cores) |`;
}

/**
 * RESULTS.md from the bench's results object (see bench.js `main`).
 * @returns {string} markdown
 */
export function renderResults(res) {
  const { machine, smallIngest: small, imageIngest: image, preloaded, queries, payloads } = res;
  const [deviceAndLine, batchOnly] = queries.runs;
  const preloadLabel = `${int(preloaded.stored)} events`;
  const imageMiBs = (image.rate * payloads.images.imageBytes) / 1024 ** 2;
  const runs = [small, image, preloaded, ...queries.runs];
  const otherCores = runs.reduce((n, r) => n + r.otherCpuSeconds, 0) / runs.reduce((n, r) => n + r.seconds, 0);
  const contention = otherCores < 0.25 ? [] : [
    `**The machine was not quiet:** other work used ${otherCores.toFixed(2)} of its 2 cores on average during the measured runs`,
    `(column "Other CPU"; the bench waits up to ${res.plan.quietWaitSeconds} s for a quiet machine before each workload, then measures anyway).`,
    'The store and wrk competed with it, so these figures understate what the store does on a quiet machine of this size.',
    '',
  ];
  const lines = [
    `# native-bench results${res.quick ? ' (quick run: shorter runs, smaller preload)' : ''}`,
    '',
    `Written by \`npm run ${res.quick ? 'bench:quick' : 'bench'}\` in native-bench/ on ${new Date().toISOString().slice(0, 10)} `
      + `(${res.minutes.toFixed(1)} min). Every figure below was measured in that run; none is edited by hand.`,
    `The store ran from the repository's dist/ (${machine.store}) with LOG_LEVEL=warn, MAX_RECORDS=5000000 (so`,
    'the cleanup never trims the preloaded store) and a fresh DATA_DIR per workload. wrk (C, one thread, 50 connections',
    'unless said) ran on the same 2 cores. Latencies are from wrk: time from',
    'sending a request to its complete response; an ingest request is answered only after its record (and image) is',
    'durable (fdatasync + LMDB commit flushed). "Other CPU" is what the rest of the machine used during the run',
    '(other work sharing the box); it competes with the store for the same 2 cores.',
    '',
    ...contention,
    '## Machine',
    '',
    '| | |',
    '|---|---|',
    `| CPU | ${machine.cpu} |`,
    `| Cores | ${machine.cores} |`,
    `| RAM | ${machine.ramGiB} GiB |`,
    `| Kernel | ${machine.kernel} |`,
    `| Node | ${machine.node} |`,
    `| Load generator | ${machine.wrk} |`,
    `| Disk (DATA_DIR) | ${machine.disk} |`,
    `| Disk sync latency | ${machine.fdatasync} |`,
    `| Disk synced write bandwidth | ${machine.syncedWrite} |`,
    '',
    '## Targets',
    '',
    '| Figure | Measured | Target | |',
    '|---|---|---|---|',
    `| Small events (~${int(payloads.small.meanBytes)} B JSON, no image), 50 connections: events/s | ${int(small.rate)} | >= 25,000 | ${verdict(small.rate >= 25000)} |`,
    `| Small events, 50 connections: p99 | ${ms(small.p99Ms)} | < 10 ms | ${verdict(small.p99Ms < 10)} |`,
    `| Events with one JPEG (${res.imageFixture}, ${int(payloads.images.imageBytes)} B), 50 connections: events/s | ${int(image.rate)} | >= 3,000 | ${verdict(image.rate >= 3000)} |`,
    `| \`${deviceAndLine.example}\` over ${preloadLabel}, 1 connection: p50 | ${ms(deviceAndLine.p50Ms)} | < 3 ms | ${verdict(deviceAndLine.p50Ms < 3)} |`,
    `| \`${batchOnly.example}\` over ${preloadLabel}, 1 connection: p50 | ${ms(batchOnly.p50Ms)} | < 3 ms | ${verdict(batchOnly.p50Ms < 3)} |`,
    '',
    'Where a target is missed, [PROFILE.md](PROFILE.md) says what bounds it, from CPU profiles of the store.',
    '',
    '"Store CPU" counts every thread of the store process (JavaScript main thread, libuv pool where lmdb-js applies and',
    'commits writes and where files are synced, V8 helpers); "Store writes" is what the store passed to write syscalls',
    '(`wchar` of /proc/<pid>/io: LMDB pages and blob segments) per request.',
    '',
    '## Workloads',
    '',
    '| Workload | Conns | Requests | Seconds | Per second | p50 | p90 | p99 | p99.9 | max | Store CPU s | of which main thread | Store CPU per request | Store writes per request | Store peak RSS | wrk CPU s | Other CPU s |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    workloadRow('Ingest, small events', small),
    workloadRow(`Ingest, events with ${res.imageFixture}`, image),
    workloadRow(`Preload to ${preloadLabel}`, preloaded),
    ...queries.runs.map((r, i) => workloadRow(`Query \`${r.example.replace('/v2/events?', '')}\``,
      { ...r, peakRssBytes: i === queries.runs.length - 1 ? queries.peakRssBytes : undefined })),
    '',
    `- Small events: bodies of ${int(payloads.small.meanBytes)} bytes on average (${int(payloads.small.count)} distinct, `
      + `quality_check with detections, classifications and 7 custom_metadata keys). ${int(small.stored)} events stored after the `
      + `warm-up and the measured run, at least one per acknowledgement. Store on disk: ${mib(small.diskBytes)}. `
      + `Graceful stop (SIGTERM, exit 0): ${int(small.stopMs)} ms.`,
    `- Events with an image: bodies of ${int(payloads.images.meanBytes)} bytes (the small event plus base64 of ${res.imageFixture}); `
      + `${imageMiBs.toFixed(0)} MiB/s of image bytes made durable. Graceful stop: ${int(image.stopMs)} ms.`,
    `- Preload: ${preloadLabel} through POST /v2/events at full speed, 50 connections, same bodies as the small-event run `
      + `(device_id among 20, line among 4, batch among 500, so \`device_id\`+\`line\` selects ~1/80 and \`batch\` ~1/500 `
      + `of the store). Store on disk: ${mib(preloaded.diskBytes)} (${int(preloaded.diskBytes / preloaded.stored)} bytes per event). `
      + `Graceful stop: ${int(preloaded.stopMs)} ms.`,
    `- Queries: the store restarted on the preloaded DATA_DIR; each query rotates over its filter values; the examples returned `
      + `pages of ${queries.runs.map((r) => r.pageSize).join(', ')} events, all matching their filters (checked before each run). \`temperature_c:gt:35\` is not an index lookup (only \`eq\` is): it is `
      + `checked on the records of the device's index range. Peak RSS of the query store over all four runs: ${mib(queries.peakRssBytes)}.`,
    '',
  ];
  return lines.join('\n');
}
