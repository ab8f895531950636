/** Renders the side-by-side bench's figures (bench.js `main`) as RESULTS.md. */

const int = (n) => Math.round(n).toLocaleString('en-US');
const ms = (n) => `${n.toFixed(2)} ms`;
const mib = (bytes) => `${(bytes / 1024 ** 2).toFixed(0)} MiB`;
const pct = (share) => `${(100 * share).toFixed(0)}%`;
const times = (ratio) => `${ratio.toFixed(2)}x`;
const verdict = (met) => (met ? '**met**' : '**missed**');

/**
 * The workloads every system ran: a label, how to read the figure off a system's results, and
 * whether more is better (rates) or less (start-up time).
 */
function workloads(res) {
  const [first] = res.systems;
  const listRun = (i) => (s) => s.list.runs[i];
  const lists = first.list.runs.map((run, i) => ({
    label: `Filtered list \`${run.example.replace('/v2/events?', '')}\` over ${int(first.list.stored)} events, ${run.connections} conn.`,
    unit: 'queries/s',
    value: (s) => listRun(i)(s).rate,
    run: listRun(i),
    higherIsBetter: true,
    key: i === 0 ? 'list' : undefined,
  }));
  return [
    { label: `Ingest, small events (~${int(res.payloads.small.meanBytes)} B)`, unit: 'events/s', value: (s) => s.small.rate, run: (s) => s.small, higherIsBetter: true, key: 'small' },
    {
      label: `Ingest, small events with varied keys (${int(res.payloads.varied.devices)} devices, unique external ids)`,
      unit: 'events/s',
      value: (s) => s.varied.rate,
      run: (s) => s.varied,
      higherIsBetter: true,
      key: 'varied',
    },
    { label: `Ingest, events with one JPEG (${int(res.payloads.images.imageBytes)} B)`, unit: 'events/s', value: (s) => s.image.rate, run: (s) => s.image, higherIsBetter: true, key: 'image' },
    ...lists,
    { label: `Range GETs of 1 MiB into a ${int(res.videoBytes / 1e6)} MB video, ${res.connections.range} conn.`, unit: 'MB/s', value: (s) => s.range.mbPerSecond, run: (s) => s.range, higherIsBetter: true },
    { label: `Start-up to /health with ${int(first.list.stored)} events stored (median of ${first.list.starts})`, unit: 'ms', value: (s) => s.list.startMs, higherIsBetter: false },
    {
      label: `Restart to /health after kill -9 during small-event ingest, ${res.connections.ingest} conn. (median of ${first.crash.restarts.length})`,
      unit: 'ms',
      value: (s) => s.crash.restartMs,
      higherIsBetter: false,
      key: 'crash',
    },
  ];
}

/** edge-event-store's advantage over `peer` on a workload (above 1: edge-event-store is better). */
function advantage(workload, ours, peer) {
  const [a, b] = [workload.value(ours), workload.value(peer)];
  return workload.higherIsBetter ? a / b : b / a;
}

/**
 * The systems as the report reads them: edge-event-store on its first engine (`ours`), the same
 * store on its other engines (`engines`, compared with ours in "HTTP engines"), and the peers.
 */
function roles(systems) {
  const [ours, ...others] = systems;
  return { ours, engines: others.filter((s) => s.engine), peers: others.filter((s) => !s.engine) };
}

function comparisonTable(res, list) {
  const { ours, peers } = roles(res.systems);
  const shown = [ours, ...peers];
  const head = `| Workload | Unit | ${shown.map((s) => s.name).join(' | ')} | ${peers.map((p) => `vs ${p.name}`).join(' | ')} |`;
  const rule = `|---|---|${shown.map(() => '---:').join('|')}|${peers.map(() => '---:').join('|')}|`;
  const rows = list.map((w) => {
    const figures = shown.map((s) => int(w.value(s)));
    return `| ${w.label} | ${w.unit} | ${figures.join(' | ')} | ${peers.map((p) => times(advantage(w, ours, p))).join(' | ')} |`;
  });
  const upload = res.uploads[0];
  rows.push(`| Streamed upload, ${upload.name} | MB/s | ${int(upload.mbPerSecond)} | ${peers.map(() => 'n/a').join(' | ')} | ${peers.map(() => '').join(' | ')} |`);
  return [head, rule, ...rows];
}

function costTable(res, list) {
  const measured = list.filter((w) => w.run);
  const head = `| Workload | ${res.systems.map((s) => `${s.name}: CPU s / 1,000 req. | p50 / p99 | peak RSS`).join(' | ')} |`;
  const rule = `|---|${res.systems.map(() => '---:|---:|---:').join('|')}|`;
  const rows = measured.map((w) => {
    const cells = res.systems.map((s) => {
      const r = w.run(s);
      const rss = r.peakRssBytes ?? (w.key === 'list' || w.label.startsWith('Filtered') ? s.list.peakRssBytes : undefined);
      return `${((1000 * r.serverCpuSeconds) / r.requests).toFixed(2)} | ${ms(r.p50Ms)} / ${ms(r.p99Ms)} | ${rss === undefined ? '' : mib(rss)}`;
    });
    return `| ${w.label} | ${cells.join(' | ')} |`;
  });
  return [head, rule, ...rows];
}

/**
 * edge-event-store on each HTTP engine, workload by workload: the figure on each and the share
 * of the native figure the other engine reaches (what the node:http fallback costs).
 */
function engineLines(res, list) {
  const { ours, engines } = roles(res.systems);
  if (engines.length === 0) return [];
  const share = (w, other) => (w.higherIsBetter ? w.value(other) / w.value(ours) : w.value(ours) / w.value(other));
  const head = `| Workload | Unit | ${[ours, ...engines].map((s) => `${s.name} (${s.engine})`).join(' | ')} | ${engines.map((e) => `${e.engine} / ${ours.engine}`).join(' | ')} |`;
  const rule = `|---|---|${[ours, ...engines].map(() => '---:').join('|')}|${engines.map(() => '---:').join('|')}|`;
  const rows = list.map((w) => `| ${w.label} | ${w.unit} | ${[ours, ...engines].map((s) => int(w.value(s))).join(' | ')} | ${engines.map((e) => pct(share(w, e))).join(' | ')} |`);
  const byEngine = res.ceilings.httpByEngine ?? {};
  for (const e of engines) {
    if (byEngine[ours.engine] && byEngine[e.engine]) {
      rows.push(`| HTTP ceiling (ceilings/http-hello.js) | req/s | ${int(byEngine[ours.engine].rate)} | ${int(byEngine[e.engine].rate)} | ${pct(byEngine[e.engine].rate / byEngine[ours.engine].rate)} |`);
    }
    const [ourCeiling, theirs] = [res.ceilings.noStorageByEngine?.[ours.engine], res.ceilings.noStorageByEngine?.[e.engine]];
    for (const [kind, label] of [['small', 'small events'], ['image', 'image events']]) {
      if (ourCeiling && theirs) rows.push(`| No-storage ceiling, ${label} (ceilings/no-storage.js) | req/s | ${int(ourCeiling[kind].rate)} | ${int(theirs[kind].rate)} | ${pct(theirs[kind].rate / ourCeiling[kind].rate)} |`);
    }
    const [ourFloor, theirFloor] = [res.ceilings.durableFloorByEngine?.[ours.engine], res.ceilings.durableFloorByEngine?.[e.engine]];
    for (const [kind, label] of [['small', 'small events'], ['image', 'image events']]) {
      if (ourFloor && theirFloor) rows.push(`| Durable floor, ${label} (ceilings/durable-floor.js) | req/s | ${int(ourFloor[kind].rate)} | ${int(theirFloor[kind].rate)} | ${pct(theirFloor[kind].rate / ourFloor[kind].rate)} |`);
    }
    const [a, b] = [res.uploadsByEngine?.[ours.engine], res.uploadsByEngine?.[e.engine]];
    if (a && b) a.forEach((u, i) => rows.push(`| Upload, ${u.name} | MB/s | ${int(u.mbPerSecond)} | ${int(b[i].mbPerSecond)} | ${pct(b[i].mbPerSecond / u.mbPerSecond)} |`));
  }
  return [
    '## HTTP engines',
    '',
    'The same store on each HTTP engine (docs/OPERATIONS.md, "HTTP engines"): native uWebSockets.js, and the node:http engine it',
    'falls back to where no native build loads. The last columns are the share of the native figure the other engine',
    'reaches (for start-up, the native time divided by the other\'s): what running on the fallback costs.',
    '',
    head,
    rule,
    ...rows,
    '',
  ];
}

/**
 * The ceilings table's no-storage rows (ceilings/no-storage.js on `ours`'s engine), one per
 * workload it ran: its rate beside the store's on the same bodies.
 */
function noStorageRows(res, ours) {
  const { noStorage } = res.ceilings;
  const how = 'the store\'s create path on its HTTP thread, nothing stored (ceilings/no-storage.js)';
  return [
    `| No storage, small events | ${how}: POST of the small-event bodies, ${noStorage.small.connections} conn. | ${int(noStorage.small.rate)} req/s | ${int(ours.small.rate)} events/s | ${pct(ours.small.rate / noStorage.small.rate)} |`,
    `| No storage, image events | ${how}: POST of the image-event bodies, JPEG decoded and sniffed, ${noStorage.image.connections} conn. | ${int(noStorage.image.rate)} req/s | ${int(ours.image.rate)} events/s | ${pct(ours.image.rate / noStorage.image.rate)} |`,
  ];
}

/**
 * Every system's ingest against the durable floor (ceilings/durable-floor.js on the first engine):
 * its rate, CPU per event and bytes passed to write calls per event (`wchar`, as the Cost table
 * counts them), each beside the floor's and divided by it. Empty when the run had no floor.
 */
function floorLines(res) {
  const floor = res.ceilings.durableFloor;
  if (!floor) return [];
  const cpu = (r) => (1e6 * r.serverCpuSeconds) / r.requests;
  const kib = (r) => r.writtenBytes / r.requests / 1024;
  const kinds = [['small', 'Ingest, small events'], ['image', 'Ingest, events with one JPEG']];
  const rows = kinds.flatMap(([kind, label]) => [
    `| ${label} | durable floor (${floor[kind].engine}) | ${int(floor[kind].rate)} | 1.00x | ${int(cpu(floor[kind]))} µs | 1.00x | ${kib(floor[kind]).toFixed(1)} KiB | 1.00x |`,
    ...res.systems.map((s) => {
      const r = s[kind];
      return `| ${label} | ${s.name} | ${int(r.rate)} | ${times(r.rate / floor[kind].rate)} | ${int(cpu(r))} µs | ${times(cpu(r) / cpu(floor[kind]))} | ${kib(r).toFixed(1)} KiB | ${times(kib(r) / kib(floor[kind]))} |`;
    }),
  ]);
  return [
    '## Against the durable floor',
    '',
    'The durable floor (ceilings/durable-floor.js, the store\'s src/bench/durable-floor.ts, which `edge-events bench` runs on a box) is',
    'the least a server must do to take an event durably: the body read and JSON.parsed, appended to a pre-zeroed file and',
    'fdatasync\'d before the 201, one sync per turn of its event loop; no validation, no index, no image decoding. It ran on',
    `the ${floor.small.engine === 'node' ? 'node:http' : 'uWebSockets.js'} engine, the first of the store's, with the same wrk scripts at ${floor.small.connections} connections. Each system's figure`,
    'is given beside the floor\'s and divided by it: a rate of 0.5x is half the floor\'s, a CPU or bytes figure of 3x three',
    'times the floor\'s. Bytes are those passed to write calls (`wchar` of /proc/<pid>/io), as in "Cost".',
    '',
    '| Workload | System | events/s | rate / floor | CPU / event | CPU / floor | written / event | written / floor |',
    '|---|---|---:|---:|---:|---:|---:|---:|',
    ...rows,
    '',
  ];
}

/** Requests wrk gave up on after 10 s (left out of the latencies), where there were any. */
function timeoutLines(systems, list) {
  const found = systems.flatMap((s) => list.filter((w) => w.run && w.run(s).timeouts > 0)
    .map((w) => `${s.name}, ${w.label}: ${int(w.run(s).timeouts)} of ${int(w.run(s).requests + w.run(s).timeouts)}`));
  return found.length === 0 ? ['No request went unanswered for 10 s (wrk\'s timeout).', ''] : [
    `Requests unanswered after 10 s (wrk's timeout; counted as not done and left out of the latencies): ${found.join('; ')}.`,
    '',
  ];
}

/**
 * The "## Machine" section of a results file: CPU, cores, RAM, kernel and Node, then `more`
 * rows ([label, value]) as each bench measured them.
 * @param {Record<string, string | number>} machine what the bench read of the machine
 * @param {[string, string][]} more
 * @returns {string[]} markdown lines
 */
export function machineSection(machine, more) {
  return [
    '## Machine',
    '',
    '| | |',
    '|---|---|',
    `| CPU | ${machine.cpu} |`,
    `| Cores | ${machine.cores} |`,
    `| RAM | ${machine.ramGiB} GiB |`,
    `| Kernel | ${machine.kernel} |`,
    `| Node | ${machine.node} |`,
    ...more.map(([label, value]) => `| ${label} | ${value} |`),
    '',
  ];
}

/**
 * RESULTS.md from the bench's results object.
 * @returns {string} markdown
 */
export function renderResults(res) {
  const { machine, ceilings, systems } = res;
  const { ours, peers } = roles(systems);
  const list = workloads(res);
  const byKey = Object.fromEntries(list.filter((w) => w.key).map((w) => [w.key, w]));
  const best = (w) => Math.min(...peers.map((p) => advantage(w, ours, p)));
  const [smallVsBest, imageVsBest, listVsBest] = [best(byKey.small), best(byKey.image), best(byKey.list)];
  const batchList = list.find((w) => w.label.includes('batch'));
  const httpShare = ours.small.rate / ceilings.http.rate;
  const cpuShare = ours.image.rate / ceilings.cpu.eventsPerSecond;
  const smallCpuMicros = (1e6 * ours.small.serverCpuSeconds) / ours.small.requests;
  const upload = res.uploads[0];
  const runs = systems.flatMap((s) => [s.small, s.varied, s.image, ...s.list.runs, s.range]);
  const otherCores = runs.reduce((n, r) => n + r.otherCpuSeconds, 0) / runs.reduce((n, r) => n + r.seconds, 0);
  const lines = [
    `# native-bench results${res.quick ? ' (quick run: short runs, a small list store)' : ''}`,
    '',
    `Written by \`npm run ${res.quick ? 'bench:quick' : 'bench'}\` in native-bench/ on ${new Date().toISOString().slice(0, 10)} `
      + `in ${res.minutes.toFixed(1)} min, store ${machine.store}. Every figure below was measured in that one run, on one`,
    `machine, each system started in turn on port ${res.port} with a fresh data directory and driven by the same wrk`,
    `scripts (C, one thread, on the same 2 cores); none is edited by hand. Every write is durable before its answer:`,
    'edge-event-store fdatasyncs its segment log (images and records) and checkpoints its LMDB index in the background',
    '(docs/STORAGE.md, "The head"); the peers fdatasync each image file and commit SQLite with `synchronous=FULL`',
    '([peers/README.md](peers/README.md)).',
    '',
    ...(res.engineNote ? [`**${res.engineNote}**`, ''] : []),
    ...(otherCores < 0.25 ? [] : [
      `**The machine was not quiet:** other work used ${otherCores.toFixed(2)} of its 2 cores on average during the measured runs;`,
      'every system competed with it, so every figure understates what it does on a quiet machine.',
      '',
    ]),
    '## Side by side',
    '',
    'The last columns are edge-event-store\'s advantage over each peer: its rate divided by the peer\'s (for start-up,',
    'the peer\'s time divided by its own). Above 1, edge-event-store is ahead. "Varied keys" sends bodies of the same shape',
    'as the small events, but as a fleet would: each index key value of an event (device, external id, custom_metadata) is',
    'rarely or never that of the events around it, so each event\'s index entries land apart ("Payloads" below).',
    '',
    ...comparisonTable(res, list),
    '',
    ...engineLines(res, list),
    ...floorLines(res),
    '## Targets',
    '',
    '| Target | Measured | |',
    '|---|---|---|',
    `| Small events >= 20,000/s durable, 50 connections | ${int(ours.small.rate)}/s | ${verdict(ours.small.rate >= 20000)} |`,
    `| Small events p99 < 10 ms | ${ms(ours.small.p99Ms)} | ${verdict(ours.small.p99Ms < 10)} |`,
    `| Server CPU per small event, 50 connections <= 40 µs | ${int(smallCpuMicros)} µs | ${verdict(smallCpuMicros <= 40)} |`,
    `| Restart after an unclean stop at full ingest < 2 s | ${int(ours.crash.restartMs)} ms (replayed ${ours.crash.replayed.map(int).join(', ')} creates) | ${verdict(ours.crash.restartMs < 2000)} |`,
    ...(ours.varied ? [`| Varied keys (1,000 devices, unique external ids) >= 12,000/s | ${int(ours.varied.rate)}/s | ${verdict(ours.varied.rate >= 12000)} |`] : []),
    `| Image events >= 5,000/s | ${int(ours.image.rate)}/s | ${verdict(ours.image.rate >= 5000)} |`,
    ...(ceilings.noStorage ? [`| Image events >= 60% of the no-storage path | ${pct(ours.image.rate / ceilings.noStorage.image.rate)} | ${verdict(ours.image.rate >= 0.6 * ceilings.noStorage.image.rate)} |`] : []),
    `| Range GETs of 1 MiB >= the better peer | ${times(best(list.find((w) => w.unit === 'MB/s')))} | ${verdict(best(list.find((w) => w.unit === 'MB/s')) >= 1)} |`,
    `| One 1 GiB upload >= 500 MB/s | ${int(upload.mbPerSecond)} MB/s | ${verdict(upload.mbPerSecond >= 500)} |`,
    `| Small-event ingest >= 4x the better peer | ${times(smallVsBest)} | ${verdict(smallVsBest >= 4)} |`,
    `| Image-event ingest >= 4x the better peer | ${times(imageVsBest)} | ${verdict(imageVsBest >= 4)} |`,
    `| Filtered list >= 3x the better peer (device + metadata, 1 connection) | ${times(listVsBest)} | ${verdict(listVsBest >= 3)} |`,
    ...(batchList ? [`| Filtered list >= 10x the better peer (metadata only, 1 connection) | ${times(best(batchList))} | ${verdict(best(batchList) >= 10)} |`] : []),
    `| Small events >= 40% of the HTTP ceiling | ${pct(httpShare)} | ${verdict(httpShare >= 0.4)} |`,
    `| Image events >= 60% of the CPU ceiling | ${pct(cpuShare)} | ${verdict(cpuShare >= 0.6)} |`,
    '',
    'Where a target is missed, [PROFILE.md](PROFILE.md) says what bounds it.',
    '',
    '## The machine\'s ceilings',
    '',
    '| Ceiling | How | Measured | edge-event-store | Share |',
    '|---|---|---:|---:|---:|',
    `| HTTP | ${ours.engine === 'node' ? 'node:http' : 'uWebSockets.js'} hello-world: POST of the small-event bodies, answered 201 after the whole body (ceilings/http-hello.js), ${ceilings.http.connections ?? res.connections.ingest} conn. | ${int(ceilings.http.rate)} req/s | ${int(ours.small.rate)} events/s | ${pct(httpShare)} |`,
    ...noStorageRows(res, ours),
    ...(ceilings.durableFloor ? ['small', 'image'].map((kind) => `| Durable floor, ${kind} events | the body appended to a pre-zeroed file and fdatasync'd, nothing else (ceilings/durable-floor.js), ${ceilings.durableFloor[kind].connections} conn. | ${int(ceilings.durableFloor[kind].rate)} req/s | ${int(ours[kind].rate)} events/s | ${pct(ours[kind].rate / ceilings.durableFloor[kind].rate)} |`) : []),
    `| CPU, image events | \`JSON.parse\` of a ${int(ceilings.cpu.bodyBytes)} B image-event body + base64 decode of its image, one thread | ${int(ceilings.cpu.eventsPerSecond)} events/s (${int(ceilings.cpu.mbPerSecond)} MB/s) | ${int(ours.image.rate)} events/s | ${pct(cpuShare)} |`,
    `| Disk | sequential 4 MiB writes, fdatasync after each | ${int(ceilings.diskMBs)} MB/s | ${int(upload.mbPerSecond)} MB/s (${upload.name} upload) | ${pct(upload.mbPerSecond / ceilings.diskMBs)} |`,
    `| Disk sync | 4 KiB write + fdatasync | ${machine.fdatasync} | | |`,
    '',
    'HTTP is the engine alone: a body read and a fixed answer. No storage is everything the store does for a create on its',
    'HTTP thread (route table, browser guard and key check, capacity gate, body read, `JSON.parse`, ajv validation, base64',
    'decode and content sniffing of images, the 201 body) with `EventStore.create` replaced by a stand-in that keeps nothing:',
    'the gap between HTTP and no storage is the create path\'s CPU, the gap between no storage and the store is what making the',
    'event durable costs.',
    '',
    '## Cost',
    '',
    'Server CPU seconds (every thread of every process of the system) per 1,000 requests, wrk\'s latency, and the',
    'server\'s peak resident set (summed over its processes: uvicorn runs a supervisor and two workers).',
    '',
    ...costTable(res, list),
    '',
    '## Uploads (edge-event-store only)',
    '',
    '| Upload | Throughput | Server peak RSS growth |',
    '|---|---:|---:|',
    ...res.uploads.map((u) => `| ${u.name} | ${int(u.mbPerSecond)} MB/s | ${(u.rssGrowth / 1024 ** 2).toFixed(1)} MiB over ${mib(u.idle)} idle |`),
    '',
    '## The systems',
    '',
    ...systems.map((s) => `- **${s.name}**: ${s.stack}. List store filled by ${s.list.preload.how} (${int(s.list.preload.rate)} events/s); `
      + `${mib(s.list.diskBytes)} on disk for ${int(s.list.stored)} events. Small ingest stored ${int(s.small.stored)} events, varied-key ingest ${int(s.varied.stored)}, for the acknowledged ones. `
      + `Restarts after kill -9: ${s.crash.restarts.map(int).join(', ')} ms, with all ${int(s.crash.acknowledged)} acknowledged events stored.`),
    '',
    ...timeoutLines(systems, list),
    `Payloads: ${int(res.payloads.small.count)} distinct small events (quality_check with detections, classifications and 7 custom_metadata`,
    `keys; device among 20, line among 4, batch among 500, so \`device_id\`+\`line\` selects ~1/80 and \`batch\` ~1/500). Varied-key events are`,
    `${int(res.payloads.varied.count)} bodies of the same shape (~${int(res.payloads.varied.meanBytes)} B before the id) from ${int(res.payloads.varied.devices)} devices, with an \`event_data.external_id\` that wrk makes unique`,
    'to each request (requests.lua, post-ids mode: a random part per body, then the run and a request count) and 4 custom_metadata',
    'keys of wide ranges (an order number among 900,000, a lot among 10,000, an operator among 200, a temperature to 0.01). Image events are',
    `the small events plus the base64 of ${res.imageFixture} (bodies of ${int(res.payloads.images.meanBytes)} B). Range requests are 1 MiB at 200 seeded offsets.`,
    'Before each list run the bench checks that the example query returns events matching its filters; after each ingest run that',
    'every acknowledged event is stored; before each Range run that a 206 carries the right bytes; before each no-storage ceiling',
    'that it answers a create as the store does (201, an id, an image id per image). Each restart after kill -9 comes',
    `${res.plan.crashAfterSeconds} s into a run of small events at ${res.connections.ingest} connections over the same data directory, ${res.plan.crashes} times in a row; the restart is`,
    'timed from its spawn to the first 200 of /health, and every event acknowledged before the kill must then be stored.',
    '',
    ...machineSection(machine, [
      ['Load generator', machine.wrk],
      ['Disk (data directories)', machine.disk],
      ['Other CPU during measured runs', `${otherCores.toFixed(2)} cores on average`],
    ]),
  ];
  return lines.join('\n');
}
