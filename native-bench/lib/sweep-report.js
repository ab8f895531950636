/** Renders the concurrency sweep's figures (sweep.js) as RESULTS.sweep.md. */
import { machineSection } from './report.js';

const int = (n) => Math.round(n).toLocaleString('en-US');
const ms = (n) => `${n.toFixed(2)} ms`;
const times = (ratio) => `${ratio.toFixed(2)}x`;
const kib = (bytes) => `${(bytes / 1024).toFixed(1)} KiB`;
const us = (seconds) => `${int(seconds * 1e6)} µs`;

/**
 * @typedef {object} SweepCell one system at one concurrency on one workload (sweep.js `measureCell`)
 * @property {number} inFlight requests in flight
 * @property {number} preloaded events posted flat out before the warm-up (`--preload=S`; 0 without)
 * @property {number} requests answered 201 in the measured window
 * @property {number} seconds length of the window, s
 * @property {number} rate events/s
 * @property {number} p50Ms
 * @property {number} p99Ms
 * @property {number} serverCpuSeconds utime + stime of the server's process tree over the window, s
 * @property {number} clientCpuSeconds the client's (this process's) CPU over the window, s
 * @property {number} otherCpuSeconds the machine's busy CPU over the window minus server and client, s
 * @property {number} load1 1-minute load average at the window's end
 * @property {number} processWrittenBytes write_bytes of the server's tree, window + tail
 * @property {number | null} deviceWrittenBytes sectors written x 512 on the data directory's device,
 *   window + tail (null when it has no block device)
 * @property {number} lateProcessBytes process bytes written after the tail, up to the late check
 * @property {number | null} lateDeviceBytes device bytes written after the tail, up to the late check
 * @property {{ p50Ms: number, p99Ms: number, maxMs: number, writes: number } | null} diskAlone paced runs: the
 *   disk alone at the pace right after the system stopped (machine.js `pacedSyncLatency`); null otherwise
 */

/**
 * The systems as the report reads them: edge-event-store on its first engine (`ours`, whose
 * rate is divided by each peer's), the peers, and the durable floor (`floor`, whose figures every
 * other system's are divided by), when the run had it.
 */
function roles(systems) {
  const ours = systems.find((s) => s.engine && !s.floor);
  return { ours, peers: ours ? systems.filter((s) => !s.engine) : [], floor: systems.find((s) => s.floor) };
}

const cellOf = (system, workload, inFlight) => system.cells[workload].find((c) => c.inFlight === inFlight);
/** The first column: requests in flight, or the pace of a paced run (sweep.js `--pace`). */
const rowHead = (res) => (res.plan.pace ? 'Pace' : 'In flight');
const rowName = (res, n) => (res.plan.pace ? `${res.plan.pace}/s offered, 1 at a time` : n);
const perEvent = (bytes, c) => (bytes === null ? 'n/a' : kib(bytes / c.requests));

function rateTable(res, workload) {
  const { ours, peers } = roles(res.systems);
  const head = [rowHead(res), ...res.systems.flatMap((s) => [`${s.name} events/s`, 'p50 / p99']), ...peers.map((p) => `${ours.name} / ${p.name}`)];
  const rows = res.inFlight.map((n) => [
    rowName(res, n),
    ...res.systems.flatMap((s) => {
      const c = cellOf(s, workload, n);
      return [int(c.rate), `${ms(c.p50Ms)} / ${ms(c.p99Ms)}`];
    }),
    ...peers.map((p) => times(cellOf(ours, workload, n).rate / cellOf(p, workload, n).rate)),
  ]);
  return table(head, rows);
}

/** A markdown table, every column right-aligned. */
function table(head, rows) {
  const line = (cells) => `| ${cells.join(' | ')} |`;
  return [line(head), line(head.map(() => '---:')).replaceAll(' ', ''), ...rows.map(line)];
}

function costTable(res, workload) {
  const head = [rowHead(res), ...res.systems.flatMap((s) => [`${s.name} CPU / event`, 'written / event, process / device'])];
  const rows = res.inFlight.map((n) => [rowName(res, n), ...res.systems.flatMap((s) => {
    const c = cellOf(s, workload, n);
    return [us(c.serverCpuSeconds / c.requests), `${perEvent(c.processWrittenBytes, c)} / ${perEvent(c.deviceWrittenBytes, c)}`];
  })]);
  return table(head, rows);
}

/**
 * Each system against the durable floor at each row: its rate, its CPU per event and its bytes
 * written per event (the process's `write_bytes`), each divided by the floor's. Empty without a floor.
 */
function floorTable(res, workload) {
  const { floor } = roles(res.systems);
  if (!floor) return [];
  const others = res.systems.filter((s) => s !== floor);
  const head = [rowHead(res), ...others.flatMap((s) => [`${s.name} events/s`, 'CPU / event', 'written / event'])];
  const rows = res.inFlight.map((n) => {
    const f = cellOf(floor, workload, n);
    return [rowName(res, n), ...others.flatMap((s) => {
      const c = cellOf(s, workload, n);
      const perEvent = (cell) => cell.processWrittenBytes / cell.requests;
      return [times(c.rate / f.rate), times(c.serverCpuSeconds / c.requests / (f.serverCpuSeconds / f.requests)), times(perEvent(c) / perEvent(f))];
    })];
  });
  return [
    `Against the durable floor (${floor.engine === 'node' ? 'node:http' : 'uWebSockets.js'}), each figure divided by the floor's:`,
    '',
    ...table(head, rows),
    '',
  ];
}

function besideTable(res, workload) {
  const rows = res.inFlight.map((n) => [rowName(res, n), ...res.systems.map((s) => {
    const c = cellOf(s, workload, n);
    return `other ${(c.otherCpuSeconds / c.seconds).toFixed(2)} cores, load ${c.load1.toFixed(2)}; client ${us(c.clientCpuSeconds / c.requests)}; `
      + `late +${perEvent(c.lateProcessBytes, c)} / +${perEvent(c.lateDeviceBytes, c)}`
      + (c.diskAlone ? `; the disk alone after it ${ms(c.diskAlone.p50Ms)} / ${ms(c.diskAlone.p99Ms)}` : '');
  })]);
  return table([rowHead(res), ...res.systems.map((s) => s.name)], rows);
}

/**
 * RESULTS.sweep.md from the sweep's results object.
 * @param {{ machine: object, systems: Array<{ name: string, engine?: string, stack: string,
 *   cells: Record<string, SweepCell[]> }>, workloads: Array<{ name: string, label: string }>,
 *   inFlight: number[], plan: object, device: { name: string, majorMinor: string } | null,
 *   quick: boolean, argv?: string[], minutes: number }} res argv: sweep.js's arguments, named in
 *   the report (results written before they were kept name the npm script instead)
 * @returns {string} markdown
 */
export function renderSweep(res) {
  const { machine, plan } = res;
  const all = res.systems.flatMap((s) => Object.values(s.cells).flat());
  const otherCores = all.reduce((n, c) => n + c.otherCpuSeconds, 0) / all.reduce((n, c) => n + c.seconds, 0);
  const how = plan.pace ? [
    'For each workload and each system in turn, the system was started on a fresh data directory, warmed up at the same',
    `pace for ${plan.warmupSeconds} s, then measured for ${plan.seconds} s, driven by a paced client (node:http, keep-alive, one socket; it posts an event every`,
    `${(1000 / plan.pace).toFixed(0)} ms, or as soon as the one before is answered when that is later: one device pipeline at ${plan.pace} events a second).`,
    'The warm-up runs at the pace because V8 optimizes a function only after many calls, which at this pace takes minutes:',
    'a window after a few seconds measures the JIT, not the system (PROFILE.md, "CPU at a pipeline\'s pace").',
    'At that pace a commit or a checkpoint is shared by few events, so the bytes written per event are what a box sees at',
    'its usual rate, where the concurrency sweep (RESULTS.sweep.md) runs every system flat out. Every write is durable',
    'before its answer (RESULTS.md says how each system makes it so).',
  ] : [
    'For each workload, each number of requests in flight',
    'and each system in turn, the system was started on a fresh data directory, warmed up for',
    `${plan.warmupSeconds} s, then driven for ${plan.seconds} s by a closed-loop client (node:http, keep-alive, one socket per loop; each`,
    'loop posts an event and waits for its 201 before the next: what a device pipeline does). Every write is durable before',
    'its answer (RESULTS.md says how each system makes it so).',
  ];
  if (plan.preloadSeconds > 0) {
    how.push(
      `Before its warm-up each system was filled flat out for ${plan.preloadSeconds} s (${plan.preloadInFlight} requests in flight; ${int(Math.min(...all.map((c) => c.preloaded)))}`
        + ` to ${int(Math.max(...all.map((c) => c.preloaded)))} events),`,
      'so the window\'s checkpoints land on the index of a box that has run a while.',
    );
  }
  const lines = [
    plan.pace
      ? `# Pipeline pace: ${plan.pace} events a second, one at a time${res.quick ? ' (quick run, not for comparison)' : ''}`
      : `# Concurrency sweep${res.quick ? ' (quick run: short windows, not for comparison)' : ''}`,
    '',
    `Written by ${res.argv ? `\`node sweep.js${res.argv.map((arg) => ` ${arg}`).join('')}\` in native-bench` : `\`npm run ${plan.pace ? 'paced' : 'sweep'}\` (native-bench/sweep.js${plan.pace ? ` --pace=${plan.pace}` : ''})`}`
      + ` on ${new Date().toISOString().slice(0, 10)} in ${res.minutes.toFixed(1)} min, store ${machine.store}.`,
    'Every figure below comes from that one run; none is edited by hand.',
    ...(res.engineNote ? ['', `**${res.engineNote}**`] : []),
    ...how,
    '',
    '- **events/s, p50 / p99**: 201 answers over the window, and latency from the post to the answer\'s last byte (every',
    '  request, nearest rank). The ratio columns divide edge-event-store\'s rate by each peer\'s: above 1, it is ahead.',
    '- **CPU / event**: utime + stime of the server (every thread of every process of its tree: uvicorn runs a supervisor',
    '  and two workers) over the window, per event answered.',
    `- **written / event**: the server tree's \`write_bytes\` (/proc/<pid>/io) and the data directory's block device's sectors`,
    `  written (/proc/diskstats, ${res.device ? `\`${res.device.name}\`, ${res.device.majorMinor}` : 'no block device found'}) from the window's start to ${plan.tailSeconds} s after its end,`,
    '  per event answered. The device counts every writer on it: the filesystem journal, and any other work on the machine.',
    ...(roles(res.systems).floor ? [
      '- **Against the durable floor**: each system\'s rate, CPU per event and process bytes written per event divided by those of',
      '  the durable floor (ceilings/durable-floor.js, the store\'s src/bench/durable-floor.ts): the body JSON.parsed, appended to a',
      '  pre-zeroed file and fdatasync\'d before the 201, one sync per turn of its event loop, on the store\'s HTTP engine; no validation,',
      '  no index, no image decoding. A rate of 0.5x is half the floor\'s; a CPU or bytes figure of 3x is three times the floor\'s.',
    ] : []),
    `- **Beside each run**: the machine's busy CPU over the window minus the server's and the client's (other work), the`,
    '  1-minute load average at the window\'s end, the client\'s own CPU per event, and what was written after the tail',
    `  (from ${plan.tailSeconds} s to ${plan.lateCheckSeconds} s after the window; not counted above): when it is not near zero, the tail was too short.`,
    ...(plan.pace ? [
      `  Then **the disk alone after it**, p50 / p99: right after the system stopped, a write of the workload's mean body size`,
      `  and an fdatasync into a pre-zeroed file, ${plan.pace} a second for ${plan.seconds} s. This virtual disk stalls for 100 ms and more`,
      '  by the minute, with or without a server on it, and a paced p99 is mostly those stalls (PROFILE.md, "Stalls and',
      '  `write_bytes` on a grown store, traced"): compare a system\'s p99 with the disk\'s of the same minutes.',
    ] : []),
    '',
    ...(otherCores < 0.25 ? [] : [
      `**The machine was not quiet:** other work used ${otherCores.toFixed(2)} of its ${machine.cores} cores on average during the measured windows;`,
      'every system competed with it, so every figure understates what it does on a quiet machine.',
      '',
    ]),
  ];
  for (const workload of res.workloads) {
    lines.push(
      `## ${workload.label}`,
      '',
      ...rateTable(res, workload.name),
      '',
      ...costTable(res, workload.name),
      '',
      ...floorTable(res, workload.name),
      'Beside each run:',
      '',
      ...besideTable(res, workload.name),
      '',
    );
  }
  lines.push(
    '## The systems',
    '',
    ...res.systems.map((s) => `- **${s.name}**: ${s.stack}.`),
    '',
    ...machineSection(machine, [
      ['Disk (data directories)', machine.disk],
      ['Disk sync', machine.fdatasync],
      ['Other CPU during measured windows', `${otherCores.toFixed(2)} cores on average`],
    ]),
  );
  return lines.join('\n');
}
