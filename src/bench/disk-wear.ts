/**
 * The disk under the bench's folder and what it says of its own wear. Only eMMC reports wear where
 * a program may read it without tools of its own: `life_time`, two estimates of the share of its
 * rated life used (types A and B of its cells), and `pre_eol_info`, how far its reserve of blocks
 * is spent (Linux's Documentation/driver-api/mmc/mmc-dev-attrs.rst; the values are JEDEC eMMC
 * 5.0's DEVICE_LIFE_TIME_EST_TYP_A/B and PRE_EOL_INFO). An NVMe drive tells its "Percentage Used"
 * through `nvme smart-log`, a SATA drive its wear through `smartctl -A`, an SD card nothing: there
 * the operator gives the rated TBW (`--tbw`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { blockDeviceOf } from '../operations/block-device.js';

/** An eMMC's own estimate of its wear. */
export interface EmmcWear {
  /** Share of rated life used by each cell type, as a range of percent ([0, 10] for 0x01); null where it says "not defined". */
  typeA: [number, number] | null;
  typeB: [number, number] | null;
  /** The reserve of blocks: `normal`, `warning` (80% spent) or `urgent`; null where it says "not defined". */
  preEol: 'normal' | 'warning' | 'urgent' | null;
  /** The highest share of life used the estimates allow, 0 to 1 (1: past its estimated life). */
  usedShare: number;
}

/** The disk as the bench reports it. */
export interface DiskInfo {
  /** The block device of the file system, as /proc/diskstats names it (`mmcblk0p2`); null when it has none (tmpfs, overlay). */
  device: string | null;
  /** The whole disk that device is part of (`mmcblk0`). */
  disk: string | null;
  /** Its model or name, as /sys gives it; null when it gives none (a virtual disk). */
  model: string | null;
  /** null unless the disk is an eMMC that reports its wear. */
  wear: EmmcWear | null;
}

const PRE_EOL = { '0x01': 'normal', '0x02': 'warning', '0x03': 'urgent' } as const;

/** A life_time value (0x01 .. 0x0B) as a range of percent used; null for 0x00 or anything else. */
function lifeRange(value: string | undefined): [number, number] | null {
  const n = Number.parseInt(value ?? '', 16);
  if (!(n >= 1 && n <= 11)) return null;
  return n === 11 ? [100, 100] : [(n - 1) * 10, n * 10];
}

function readTrimmed(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** The wear an eMMC at `deviceDir` (/sys/block/mmcblkN/device) reports, or null when it reports none. */
export function emmcWear(deviceDir: string): EmmcWear | null {
  const lifeTime = readTrimmed(path.join(deviceDir, 'life_time'));
  if (lifeTime === undefined) return null;
  const [a, b] = lifeTime.split(/\s+/);
  const typeA = lifeRange(a);
  const typeB = lifeRange(b);
  const preEol = PRE_EOL[readTrimmed(path.join(deviceDir, 'pre_eol_info')) as keyof typeof PRE_EOL] ?? null;
  if (typeA === null && typeB === null && preEol === null) return null;
  return { typeA, typeB, preEol, usedShare: Math.max(typeA?.[1] ?? 0, typeB?.[1] ?? 0) / 100 };
}

/**
 * The disk device `name` (a partition or a whole disk) belongs to, its model and its wear, from
 * `sysRoot` (/sys; a copy of its layout in tests).
 */
export function diskInfo(name: string, sysRoot = '/sys'): DiskInfo {
  let disk = name;
  try {
    const real = fs.realpathSync(path.join(sysRoot, 'class', 'block', name));
    // A partition's folder sits inside its disk's and holds a `partition` file.
    if (fs.existsSync(path.join(real, 'partition'))) disk = path.basename(path.dirname(real));
  } catch {
    // no /sys entry: the name is all there is
  }
  const deviceDir = path.join(sysRoot, 'block', disk, 'device');
  const model = readTrimmed(path.join(deviceDir, 'model')) || readTrimmed(path.join(deviceDir, 'name')) || null;
  return { device: name, disk, model, wear: emmcWear(deviceDir) };
}

/**
 * The disk under `dir`; every field null when its file system has no block device of its own.
 * @throws the fs error when `dir` cannot be stat'ed
 */
export function readDiskInfo(dir: string): DiskInfo {
  const device = blockDeviceOf(dir);
  return device === null ? { device: null, disk: null, model: null, wear: null } : diskInfo(device.name);
}
