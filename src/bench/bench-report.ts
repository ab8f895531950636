/**
 * What `edge-events bench` found (docs/OPERATIONS.md, "Measuring the box: edge-events bench"): the
 * one object `--json` prints, and the same for a terminal: a plain summary in words a buyer knows
 * (cameras, CPU, storage time, disk writes, disk life), and with `--details` the measured steps
 * in tables beside the durable floor.
 */
import type { StepFigures, StepPlan, SystemName, WorkloadName } from './bench-steps.js';
import type { CameraFigures, CameraRate, Capacity, Endurance, StorageTime } from './capacity.js';
import type { DiskInfo } from './disk-wear.js';

/** The store's figure over the floor's, at one number in flight on one workload. */
export interface FloorRatio {
  workload: WorkloadName;
  inFlight: number;
  /** The store's events/s over the floor's (0.5: half the floor's rate). */
  eventsPerSecond: number;
  /** The store's CPU per event over the floor's (3: three times the floor's). */
  cpuPerEvent: number;
  /** The store's bytes written per event over the floor's. */
  bytesWrittenPerEvent: number;
}

/** The result, as `--json` prints it. */
export interface BenchResult {
  version: string;
  node: string;
  /** ISO 8601, when the run started. */
  startedAt: string;
  /** DATA_DIR as the store resolves it. */
  dataDir: string;
  /**
   * The bench's own folder, on DATA_DIR's file system; `removed` once it is gone; what its store
   * may hold there (MAX_STORAGE_BYTES, bytes: bench-run.ts `benchStorageLimit`).
   */
  benchFolder: { path: string; removed: boolean; storageLimitBytes: number };
  disk: DiskInfo;
  /** The HTTP engine each side served on (docs/OPERATIONS.md, "HTTP engines"). */
  engines: Record<SystemName, 'uws' | 'node'>;
  machine: { cores: number; load1Before: number; load1After: number; otherCores: number };
  image: { source: string; bytes: number; width: number; height: number };
  /** Mean create body per workload, bytes. */
  bodyBytes: Record<WorkloadName, number>;
  plan: StepPlan;
  steps: StepFigures[];
  ratios: FloorRatio[];
  rate: CameraRate & { eventsPerSecond: number };
  capacity: Record<SystemName, Capacity>;
  /** The store's cameras with the CPU left for inference and with the whole CPU, with their spread over the steps. */
  cameras: CameraFigures;
  /** How long the store keeps the events at the rate; null when the run could not tell the bytes stored per event. */
  storage: StorageTime | null;
  /** What the bytes written a day are: a fresh store's (FRESH_STORE_NOTE). */
  freshStoreNote: string;
  endurance: Endurance;
}

/** The caveat of every bytes-a-day figure of the bench, printed with it. */
export const FRESH_STORE_NOTE = 'Measured on the bench\'s fresh store: a grown store\'s index writes more per event, up to about twice as much '
  + '(docs/PERFORMANCE.md: at 10 small events a second, 14.2 KiB each on a fresh store, 27.1 KiB on one of 60,000 events). '
  + 'Read /stats disk_writes on the box after a day at its load.';

const int = (n: number): string => Math.round(n).toLocaleString('en-US');
const fixed = (n: number, digits: number): string => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const times = (ratio: number): string => `${fixed(ratio, 2)}x`;
const gb = (bytes: number): string => `${fixed(bytes / 1e9, bytes < 1e9 ? 3 : 1)} GB`;
const pct = (share: number): string => `${fixed(100 * share, share < 0.1 ? 2 : 1)}%`;
const SYSTEM_NAMES: Record<SystemName, string> = { store: 'store', floor: 'durable floor' };

/** The `ratios` of `steps`: the store over the floor at each step they share. */
export function floorRatios(steps: StepFigures[]): FloorRatio[] {
  return steps.filter((step) => step.system === 'store').flatMap((store) => {
    const floor = steps.find((step) => step.system === 'floor' && step.workload === store.workload && step.inFlight === store.inFlight);
    return floor ? [{
      workload: store.workload,
      inFlight: store.inFlight,
      eventsPerSecond: store.eventsPerSecond / floor.eventsPerSecond,
      cpuPerEvent: store.cpuMicrosPerEvent / floor.cpuMicrosPerEvent,
      bytesWrittenPerEvent: store.bytesWrittenPerEvent / floor.bytesWrittenPerEvent,
    }] : [];
  });
}

/** Columns padded: the first left-aligned, the others right-aligned. */
function columns(rows: string[][]): string[] {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => (row[i] ?? '').length)));
  return rows.map((row) => `  ${row.map((cell, i) => (i <= 1 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  ')}`.trimEnd());
}

/** One workload's table: per number in flight, the store, the floor, and the store over the floor. */
function workloadTable(result: BenchResult, workload: WorkloadName): string[] {
  const rows = [['in flight', 'system', 'events/s', 'p50 ms', 'p99 ms', 'CPU µs/event', 'written KiB/event']];
  for (const inFlight of result.plan.inFlight) {
    for (const system of ['store', 'floor'] as const) {
      const step = result.steps.find((s) => s.system === system && s.workload === workload && s.inFlight === inFlight);
      if (!step) continue;
      rows.push([system === 'store' ? String(inFlight) : '', SYSTEM_NAMES[system], int(step.eventsPerSecond), fixed(step.p50Ms, 2), fixed(step.p99Ms, 2), int(step.cpuMicrosPerEvent), fixed(step.bytesWrittenPerEvent / 1024, 1)]);
    }
    const ratio = result.ratios.find((r) => r.workload === workload && r.inFlight === inFlight);
    if (ratio) rows.push(['', 'store / floor', times(ratio.eventsPerSecond), '', '', times(ratio.cpuPerEvent), times(ratio.bytesWrittenPerEvent)]);
  }
  return columns(rows);
}

/** The opening lines: what ran where, on which engines, beside what. */
function header(result: BenchResult): string[] {
  const { disk, machine, plan, image } = result;
  const device = disk.device === null ? 'no block device of its own' : `device ${disk.device}${disk.disk !== disk.device ? ` of ${disk.disk}` : ''}${disk.model ? `, ${disk.model}` : ''}`;
  return [
    `edge-events bench: edge-event-store ${result.version}, Node ${result.node}, ${result.startedAt.slice(0, 16).replace('T', ' ')} UTC`,
    `Measured in ${result.benchFolder.path} (the file system of DATA_DIR ${result.dataDir}: ${device}); ${result.benchFolder.removed ? 'removed afterwards' : 'NOT removed'}; the bench's store held to ${int(result.benchFolder.storageLimitBytes / 1024 / 1024)} MiB.`,
    `HTTP engines: the store ${result.engines.store}, the durable floor ${result.engines.floor}. The bench's store ran with no sink, no API key, no systemd notification.`,
    `Machine: ${machine.cores} cores; 1-minute load ${fixed(machine.load1Before, 2)} before, ${fixed(machine.load1After, 2)} after; other work ${fixed(machine.otherCores, 2)} cores on average during the steps.`,
    `Each step: ${fixed(plan.warmupSeconds, 2)} s of warm-up, ${fixed(plan.seconds, 2)} s measured, ${fixed(plan.tailSeconds, 2)} s of tail counted; the store and the durable floor by turns.`,
    `Image events carry a ${image.width}x${image.height} image of ${int(image.bytes)} bytes (${image.source === 'generated' ? 'a JPEG made for the bench' : image.source}).`,
  ];
}

/** The closing lines of the details: how the summary's figures come from the steps. */
function verdict(result: BenchResult): string[] {
  const { rate, capacity, cameras } = result;
  const { store, floor } = capacity;
  const fps = fixed(rate.fps, rate.fps % 1 === 0 ? 0 : 1);
  const [shareLeast, shareMost] = cameras.atCpuShareSpread;
  const [wholeLeast, wholeMost] = cameras.wholeCpuSpread;
  return [
    `At ${fixed(rate.eventsPerSecond, 1)} events/s, ${pct(rate.imageRatio)} with an image, each figure per event taken at the dearest of the`,
    `  1, 4 and 16 in flight steps of its workload: the store needs ${pct(store.coreShare)} of one core (the durable floor ${pct(floor.coreShare)})`,
    `  and writes ${gb(store.bytesPerDay)} a day (the floor ${gb(floor.bytesPerDay)}).`,
    '',
    `Cameras at ${fps} events/s, at each number in flight (the mix's rate there, time-shared between the workloads):`,
    `  with the whole CPU ${int(wholeLeast)} to ${int(wholeMost)}; with ${pct(cameras.cpuShare)} of the cores for the store (its CPU per event there)`,
    `  ${int(shareLeast)} to ${int(shareMost)}. The summary gives the most with the whole CPU, and the fewest with the share.`,
    `  The store took up to ${int(store.peakEventsPerSecond)} events/s of this mix at its fastest steps (the durable floor ${int(floor.peakEventsPerSecond)}).`,
  ];
}

/** A span of days as a person says it: hours under two days, else days. */
function duration(days: number): string {
  if (days < 2) {
    const hours = days * 24;
    return `${fixed(hours, hours < 10 ? 1 : 0)} hours`;
  }
  return `${fixed(days, days < 10 ? 1 : 0)} days`;
}

/** `text` wrapped at `width` characters, on word boundaries. */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  return line === '' ? lines : [...lines, line];
}

/** Rows of a label and its text, the text wrapped beside the label. */
function labelled(rows: [string, string][]): string[] {
  const width = Math.max(...rows.map(([label]) => label.length));
  return rows.flatMap(([label, text]) => wrap(text, 96 - width).map((line, i) => `  ${(i === 0 ? label : '').padEnd(width)}  ${line}`.trimEnd()));
}

/** The storage time in words: how long the store keeps the events, and what bounds it. */
function storageText(result: BenchResult): string {
  const storage = result.storage;
  if (storage === null) return 'not told: the bench\'s store did not keep both kinds of event (see --details).';
  const retention = fixed(storage.retentionDays, storage.retentionDays % 1 === 0 ? 0 : 2);
  return `${duration(storage.daysKept)} of these events (${gb(storage.bytesPerDay)} a day): MAX_STORAGE_BYTES=${fixed(storage.maxStorageBytes / 1024 ** 3, 1)} GiB `
    + `holds ${duration(storage.daysUnderLimit)}; RETENTION_DAYS=${retention} keeps them ${duration(storage.retentionDays)}; `
    + `the disk's ${gb(storage.diskFreeBytes)} free hold ${duration(storage.daysOnDisk)}.`;
}

/** The plain summary: what the operator's cameras cost on this box, in words a buyer knows. */
function summary(result: BenchResult): string[] {
  const { rate, cameras, machine, endurance } = result;
  const store = result.capacity.store;
  const fps = fixed(rate.fps, rate.fps % 1 === 0 ? 0 : 1);
  const yours = `${int(rate.cameras)} camera${rate.cameras === 1 ? '' : 's'}`;
  const range = ([least, most]: [number, number], how = '') => (least === most ? '' : ` (${int(least)} to ${int(most)}${how})`);
  const left = cameras.cpuShare === 0.5 ? 'half of' : `${pct(1 - cameras.cpuShare)} of`;
  const device = result.disk.device === null ? 'no block device of its own' : `disk ${result.disk.disk ?? result.disk.device}${result.disk.model ? ` (${result.disk.model})` : ''}`;
  const lines = [
    `edge-events bench: this box, ${machine.cores} cores, ${device}; edge-event-store ${result.version}, Node ${result.node}, ${result.startedAt.slice(0, 16).replace('T', ' ')} UTC`,
    '',
    `For ${yours} x ${fps} events a second, ${pct(rate.imageRatio)} of them with an image (${fixed(rate.eventsPerSecond, 1)} events a second):`,
    '',
    ...labelled([
      ['Cameras', `up to ${int(cameras.atCpuShare)} cameras at ${fps} events a second with ${left} the ${machine.cores} cores left for inference`
        + `${range(cameras.atCpuShareSpread, ' as they post 1, 4 or 16 events at a time')}; ${int(cameras.wholeCpu)} with the whole CPU${range(cameras.wholeCpuSpread)}.`],
      ['CPU', `your ${yours} need ${pct(store.coreShare)} of one core; ${fixed(machine.cores - store.coreShare, 2)} of the ${machine.cores} cores stay for inference.`],
      ['Storage time', storageText(result)],
      ['Disk writes', `${gb(store.bytesPerDay)} a day. ${result.freshStoreNote}`],
      ['Disk life', endurance.note],
    ]),
    '',
  ];
  if (machine.otherCores > 0.1) lines.push(`Other programs used ${fixed(machine.otherCores, 2)} cores during the run: on an idle box the figures are better.`);
  lines.push('Each measured step, beside the least a durable store must do: edge-events bench --details.');
  return lines;
}

/** The result as a terminal shows it: the plain summary, and with `details` the measured steps after it. */
export function renderBench(result: BenchResult, options: { details?: boolean } = {}): string {
  const lines = summary(result);
  if (options.details) {
    const label: Record<WorkloadName, string> = {
      small: `Small events (~${int(result.bodyBytes.small)} B of JSON)`,
      image: `Image events (bodies of ~${int(result.bodyBytes.image)} B)`,
    };
    lines.pop(); // the pointer to --details
    lines.push('', 'Details', '', ...header(result), '');
    for (const workload of ['small', 'image'] as const) lines.push(label[workload], ...workloadTable(result, workload), '');
    lines.push(...verdict(result));
  }
  return `${lines.join('\n')}\n`;
}
