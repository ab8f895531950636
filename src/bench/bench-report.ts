/**
 * What `edge-events bench` found (docs/OPERATIONS.md, "Measuring the box: edge-events bench"): the
 * one object `--json` prints, and the same in words and tables for a terminal.
 */
import type { StepFigures, StepPlan, SystemName, WorkloadName } from './bench-steps.js';
import type { CameraRate, Capacity, Endurance } from './capacity.js';
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
  endurance: Endurance;
}

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

/** The closing lines: the operator's rate, the share of a core, the disk's days, the cameras. */
function verdict(result: BenchResult): string[] {
  const { rate, capacity, endurance } = result;
  const { store, floor } = capacity;
  const cameras = `${int(rate.cameras)} camera${rate.cameras === 1 ? '' : 's'}`;
  const fps = fixed(rate.fps, rate.fps % 1 === 0 ? 0 : 1);
  const lines = [
    `At ${cameras} x ${fps} events/s, ${pct(rate.imageRatio)} with an image (${fixed(rate.eventsPerSecond, 1)} events/s), each figure per event`,
    '  taken at the dearest of the 1, 4 and 16 in flight steps of its workload:',
    `  the store needs ${pct(store.coreShare)} of one core (the durable floor ${pct(floor.coreShare)}) and writes ${gb(store.bytesPerDay)} a day (the floor ${gb(floor.bytesPerDay)}).`,
    `  ${endurance.note}`,
    '',
    `How many cameras: up to ${int(store.maxCameras)} at ${fps} events/s. The store took up to ${int(store.peakEventsPerSecond)} events/s of this mix here`,
    `  (the durable floor ${int(floor.peakEventsPerSecond)}, ${int(floor.maxCameras)} cameras), using all the CPU it could get; at ${cameras} it leaves`,
    `  ${fixed(result.machine.cores - store.coreShare, 2)} of the ${result.machine.cores} cores to the pipelines.`,
  ];
  return lines;
}

/** The result in words and tables, as a terminal shows it. */
export function renderBench(result: BenchResult): string {
  const label: Record<WorkloadName, string> = {
    small: `Small events (~${int(result.bodyBytes.small)} B of JSON)`,
    image: `Image events (bodies of ~${int(result.bodyBytes.image)} B)`,
  };
  const lines = [...header(result), ''];
  for (const workload of ['small', 'image'] as const) lines.push(label[workload], ...workloadTable(result, workload), '');
  lines.push(...verdict(result));
  return `${lines.join('\n')}\n`;
}
