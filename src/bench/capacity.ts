/**
 * From the bench's figures to the operator's rate (docs/OPERATIONS.md, "Measuring the box:
 * edge-events bench"): cameras x frames a second, a share of them carrying an image. Each figure
 * per event is the highest the system showed over the steps of its workload (1, 4 and 16 in
 * flight): a camera's pipeline posts one event at a time, where no sync or checkpoint is shared,
 * so the dearest step is the nearest to a box's pace, and the cautious reading. The peak rate is
 * the highest over those steps. The cameras the store takes are given with the CPU left for
 * inference (the store on a share of the cores) and with the whole CPU, each with its spread over
 * the steps; the storage time from the bytes the store kept per event.
 */
import type { Holding, StepFigures, SystemName, WorkloadName } from './bench-steps.js';
import type { DiskInfo, EmmcWear } from './disk-wear.js';

/** What the operator's cameras produce. */
export interface CameraRate {
  cameras: number;
  /** Events a second per camera. */
  fps: number;
  /** Share of the events that carry an image, 0 to 1. */
  imageRatio: number;
}

/** One system's cost of one workload, read off its steps. */
export interface WorkloadCost {
  /** The highest CPU per event over the steps, µs. */
  cpuMicrosPerEvent: number;
  /** The highest bytes written per event over the steps. */
  bytesWrittenPerEvent: number;
  /** The highest rate over the steps, events/s. */
  peakEventsPerSecond: number;
}

/** One system at the operator's rate. */
export interface Capacity {
  /** Per workload, what the figures below are computed from. */
  basis: Record<WorkloadName, WorkloadCost>;
  /** Share of one core the system needs at the rate: events/s x mean CPU per event (0.25: a quarter of a core). */
  coreShare: number;
  /** Bytes written a day at the rate: 86,400 x events/s x mean bytes per event. */
  bytesPerDay: number;
  /** The highest rate of this mix the system reached: 1 / ((1 - imageRatio) / small peak + imageRatio / image peak), events/s. */
  peakEventsPerSecond: number;
  /** Cameras at `fps` the peak rate holds: floor(peakEventsPerSecond / fps). */
  maxCameras: number;
}

/** The rated endurance and the days it lasts at the operator's rate. */
export interface Endurance {
  /** Terabytes written the disk is rated for (`--tbw`), null when not given. */
  tbwTB: number | null;
  /** Days until the store's writes at the rate reach tbwTB; null without it. */
  days: number | null;
  /** The same from what the eMMC says is left of its life; null unless it says. */
  daysLeftByWear: number | null;
  /** In plain words: where the figures come from, or why there are none. */
  note: string;
}

/** Seconds in a day. */
const DAY_SECONDS = 86_400;
/** Bytes in the terabyte of a disk's rated TBW (terabytes written): drive makers' terabytes are 10^12 bytes. */
export const TB_BYTES = 1e12;

/**
 * `system`'s cost of `workload`: the highest CPU and bytes per event, and the highest rate, over its steps.
 * @throws Error when `steps` hold no step of that system and workload
 */
export function workloadCost(steps: StepFigures[], system: SystemName, workload: WorkloadName): WorkloadCost {
  const mine = steps.filter((step) => step.system === system && step.workload === workload);
  if (mine.length === 0) throw new Error(`no ${workload} step of the ${system}`);
  return {
    cpuMicrosPerEvent: Math.max(...mine.map((step) => step.cpuMicrosPerEvent)),
    bytesWrittenPerEvent: Math.max(...mine.map((step) => step.bytesWrittenPerEvent)),
    peakEventsPerSecond: Math.max(...mine.map((step) => step.eventsPerSecond)),
  };
}

/** Events a second of the whole rate. */
export const eventsPerSecond = (rate: CameraRate): number => rate.cameras * rate.fps;

/**
 * `system` at `rate`, from its steps.
 * @throws Error when a workload has no step of that system
 */
export function capacityAt(steps: StepFigures[], system: SystemName, rate: CameraRate): Capacity {
  const basis = { small: workloadCost(steps, system, 'small'), image: workloadCost(steps, system, 'image') };
  const mix = (pick: (cost: WorkloadCost) => number) => (1 - rate.imageRatio) * pick(basis.small) + rate.imageRatio * pick(basis.image);
  const perSecond = eventsPerSecond(rate);
  const peakEventsPerSecond = 1 / mix((cost) => 1 / cost.peakEventsPerSecond);
  return {
    basis,
    coreShare: (perSecond * mix((cost) => cost.cpuMicrosPerEvent)) / 1e6,
    bytesPerDay: DAY_SECONDS * perSecond * mix((cost) => cost.bytesWrittenPerEvent),
    peakEventsPerSecond,
    maxCameras: Math.floor(peakEventsPerSecond / rate.fps),
  };
}

/**
 * Days until `tbwTB` terabytes are written at `bytesPerDay`, the disk's rated endurance spent.
 * @param usedShare of that endurance already spent (0 to 1), when the disk says (disk-wear.ts); 0 otherwise
 */
export function daysToTbw(tbwTB: number, bytesPerDay: number, usedShare = 0): number {
  return (tbwTB * TB_BYTES * (1 - usedShare)) / bytesPerDay;
}

/** Days as days and years, `12,345 days (33.8 years)`. */
function daysText(days: number): string {
  const years = days / 365.25;
  return `${Math.round(days).toLocaleString('en-US')} days (${years.toLocaleString('en-US', { maximumFractionDigits: 1 })} years)`;
}

/** An eMMC's estimates in words: `0-10% (type A), 0-10% (type B) of its life used, its reserve normal`. */
function wearText(wear: EmmcWear): string {
  const range = (r: [number, number] | null, type: string) => (r === null ? [] : [`${r[0] === 100 ? 'past 100' : `${r[0]}-${r[1]}`}% (type ${type})`]);
  const used = [...range(wear.typeA, 'A'), ...range(wear.typeB, 'B')];
  return `${used.length > 0 ? `${used.join(', ')} of its life used` : 'no estimate of its life used'}${wear.preEol ? `, its reserve of blocks ${wear.preEol}` : ''}`;
}

/**
 * The rated endurance at `bytesPerDay`: the days to `tbwTB` (`--tbw`), and to what an eMMC says is
 * left of it; in plain words, with what to do when neither is known.
 */
export function enduranceAt(tbwTB: number | undefined, bytesPerDay: number, disk: DiskInfo): Endurance {
  const name = disk.disk ?? 'its file system has no block device';
  const wear = disk.wear === null ? '' : ` The eMMC (${name}) says ${wearText(disk.wear)}`;
  if (tbwTB === undefined) {
    const why = disk.wear === null
      ? `the disk (${name}) reports neither its wear nor its rated endurance where the bench can read it (only eMMC does, in /sys)`
      : `${wear.trim()}, but not its rated endurance`;
    return { tbwTB: null, days: null, daysLeftByWear: null, note: `No days to the disk's rated TBW: ${why}. Give it from the disk's datasheet: --tbw <TB>.` };
  }
  const days = daysToTbw(tbwTB, bytesPerDay);
  const left = disk.wear === null ? null : daysToTbw(tbwTB, bytesPerDay, Math.min(1, disk.wear.usedShare));
  const note = `At ${tbwTB.toLocaleString('en-US')} TB written (--tbw), the disk's rated endurance lasts ${daysText(days)} at this rate.`
    + (left === null ? '' : `${wear}: what is left lasts at most ${daysText(left)}.`);
  return { tbwTB, days, daysLeftByWear: left, note };
}

/** The cameras the store takes at the operator's fps, with a share of the cores and with all of them. */
export interface CameraFigures {
  /** The share of the cores the store may use, the rest left for inference (`--cpu-for-store`, 0.5). */
  cpuShare: number;
  /** Cameras with the store on `cpuShare` of the cores, at the dearest number in flight: the headline. */
  atCpuShare: number;
  /** The same at each number in flight, fewest and most. */
  atCpuShareSpread: [number, number];
  /** Cameras with the whole CPU: the store's highest rate of this mix at one number in flight, over fps. */
  wholeCpu: number;
  /** The same at each number in flight, fewest and most. */
  wholeCpuSpread: [number, number];
}

/**
 * The store's cameras at `rate.fps`, at each number in flight both workloads ran at: with the
 * whole CPU, its rate of the mix there (time-shared: 1 / ((1 - r) / small rate + r / image rate));
 * with `cpuShare` of `cores`, also no more than that share's CPU time over the mix's CPU per event.
 * @throws Error when no number in flight has steps of both workloads
 */
export function cameraFigures(steps: StepFigures[], rate: CameraRate, cores: number, cpuShare: number): CameraFigures {
  const store = steps.filter((step) => step.system === 'store');
  const perLoad = [...new Set(store.map((step) => step.inFlight))].flatMap((inFlight) => {
    const small = store.find((step) => step.workload === 'small' && step.inFlight === inFlight);
    const image = store.find((step) => step.workload === 'image' && step.inFlight === inFlight);
    if (!small || !image) return [];
    const mixRate = 1 / ((1 - rate.imageRatio) / small.eventsPerSecond + rate.imageRatio / image.eventsPerSecond);
    const cpuMicros = (1 - rate.imageRatio) * small.cpuMicrosPerEvent + rate.imageRatio * image.cpuMicrosPerEvent;
    const whole = Math.floor(mixRate / rate.fps);
    return [{ whole, share: Math.min(whole, Math.floor((cores * cpuShare * 1e6) / cpuMicros / rate.fps)) }];
  });
  if (perLoad.length === 0) throw new Error('no number in flight has steps of both workloads');
  const spread = (values: number[]): [number, number] => [Math.min(...values), Math.max(...values)];
  const shares = spread(perLoad.map((load) => load.share));
  const wholes = spread(perLoad.map((load) => load.whole));
  return { cpuShare, atCpuShare: shares[0], atCpuShareSpread: shares, wholeCpu: wholes[1], wholeCpuSpread: wholes };
}

/** How long the store keeps the operator's events: what they take a day, and the days each bound holds. */
export interface StorageTime {
  /** Bytes the bench's store kept per event of each workload (its /stats storage over its events). */
  storedPerEvent: Record<WorkloadName, number>;
  /** Bytes the events take a day at the rate. */
  bytesPerDay: number;
  /** Free bytes on the file system of DATA_DIR when the run began, and the days they hold. */
  diskFreeBytes: number;
  daysOnDisk: number;
  /** MAX_STORAGE_BYTES, and the days it holds (the store deletes the oldest past it). */
  maxStorageBytes: number;
  daysUnderLimit: number;
  /** RETENTION_DAYS: the store deletes events older than it. */
  retentionDays: number;
  /** Days the store keeps events at the rate: the least of the three. */
  daysKept: number;
}

/**
 * The storage time at `rate`, from what the store held before the steps and after each
 * workload's: the bytes per event each workload added. Null when a workload added no event (it
 * cannot be told).
 */
export function storageTime(holdings: { before: Holding } & Record<WorkloadName, Holding>, rate: CameraRate,
  bounds: { diskFreeBytes: number; maxStorageBytes: number; retentionDays: number }): StorageTime | null {
  const added = (from: Holding, to: Holding) => (to.events > from.events ? Math.max(0, to.bytes - from.bytes) / (to.events - from.events) : null);
  const small = added(holdings.before, holdings.small);
  const image = added(holdings.small, holdings.image);
  if (small === null || image === null) return null;
  const bytesPerDay = DAY_SECONDS * eventsPerSecond(rate) * ((1 - rate.imageRatio) * small + rate.imageRatio * image);
  const daysOnDisk = bounds.diskFreeBytes / bytesPerDay;
  const daysUnderLimit = bounds.maxStorageBytes / bytesPerDay;
  return {
    storedPerEvent: { small, image },
    bytesPerDay,
    diskFreeBytes: bounds.diskFreeBytes,
    daysOnDisk,
    maxStorageBytes: bounds.maxStorageBytes,
    daysUnderLimit,
    retentionDays: bounds.retentionDays,
    daysKept: Math.min(daysOnDisk, daysUnderLimit, bounds.retentionDays),
  };
}
