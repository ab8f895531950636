/**
 * The arithmetic of `edge-events bench` (src/bench/capacity.ts; docs/OPERATIONS.md, "Measuring the
 * box: edge-events bench"): from the steps' figures to a share of a core, bytes a day, the cameras
 * the peak rate holds, the cameras with a share of the cores left for inference and with all of
 * them at each number in flight, the storage time from the bytes kept per event, and the days to
 * a rated TBW; the eMMC wear sysfs gives (src/bench/disk-wear.ts,
 * on a copy of its layout); and where the bench's folder goes (src/bench/temp-folder.ts).
 */
import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { StepFigures } from '../src/bench/bench-steps.js';
import { cameraFigures, capacityAt, daysToTbw, enduranceAt, storageTime, workloadCost } from '../src/bench/capacity.js';
import { diskInfo, emmcWear } from '../src/bench/disk-wear.js';
import { benchFolderParent } from '../src/bench/temp-folder.js';

function step(system: 'store' | 'floor', workload: 'small' | 'image', inFlight: number, eventsPerSecond: number, cpuMicrosPerEvent: number, bytesWrittenPerEvent: number): StepFigures {
  return { system, workload, inFlight, events: eventsPerSecond, seconds: 1, eventsPerSecond, p50Ms: 1, p99Ms: 2, cpuMicrosPerEvent, bytesWrittenPerEvent, otherCores: 0 };
}

const STEPS = [
  step('store', 'small', 1, 1_000, 500, 16_000),
  step('store', 'small', 16, 4_000, 250, 6_000),
  step('store', 'image', 1, 800, 800, 60_000),
  step('store', 'image', 16, 2_000, 400, 50_000),
  step('floor', 'small', 1, 2_000, 200, 4_096),
  step('floor', 'image', 1, 1_500, 300, 57_000),
];

t.test('each workload is read at its dearest step, its peak rate at its fastest', async (t) => {
  t.same(workloadCost(STEPS, 'store', 'small'), { cpuMicrosPerEvent: 500, bytesWrittenPerEvent: 16_000, peakEventsPerSecond: 4_000 });
  t.same(workloadCost(STEPS, 'store', 'image'), { cpuMicrosPerEvent: 800, bytesWrittenPerEvent: 60_000, peakEventsPerSecond: 2_000 });
  t.throws(() => workloadCost([], 'store', 'small'), /no small step of the store/);
});

t.test('the share of a core, bytes a day and cameras at the operator\'s rate', async (t) => {
  // 8 cameras x 10/s = 80 events/s, a quarter with an image.
  const capacity = capacityAt(STEPS, 'store', { cameras: 8, fps: 10, imageRatio: 0.25 });
  // 80 x (0.75 x 500 + 0.25 x 800) µs = 80 x 575 µs = 0.046 s a second.
  t.equal(capacity.coreShare, 0.046);
  // 86,400 x 80 x (0.75 x 16,000 + 0.25 x 60,000) = 86,400 x 80 x 27,000 bytes.
  t.equal(capacity.bytesPerDay, 86_400 * 80 * 27_000);
  // Time-shared: 0.75 / 4,000 + 0.25 / 2,000 = 0.0003125 s an event: 3,200 events/s, 320 cameras at 10/s.
  t.ok(Math.abs(capacity.peakEventsPerSecond - 3_200) < 1e-9);
  t.equal(capacity.maxCameras, 320);
  const smallOnly = capacityAt(STEPS, 'store', { cameras: 1, fps: 10, imageRatio: 0 });
  t.equal(smallOnly.peakEventsPerSecond, 4_000, 'no images: the small events\' peak');
  t.equal(smallOnly.coreShare, 0.005);
});

t.test('cameras with half of the cores left for inference and with the whole CPU, each with its spread over the numbers in flight', async (t) => {
  // 8 cameras x 10/s, a quarter with an image, on 2 cores. At 1 in flight: the mix's rate
  // 1 / (0.75 / 1,000 + 0.25 / 800) = 941.2/s, 94 cameras; CPU 0.75 x 500 + 0.25 x 800 = 575 µs an
  // event, so one core (half of 2) takes 1,739 events/s: 173 cameras, held to the rate's 94.
  // At 16: 3,200/s, 320 cameras; 287.5 µs an event, 3,478/s on one core: 347, held to 320.
  const rate = { cameras: 8, fps: 10, imageRatio: 0.25 };
  t.same(cameraFigures(STEPS, rate, 2, 0.5), { cpuShare: 0.5, atCpuShare: 94, atCpuShareSpread: [94, 320], wholeCpu: 320, wholeCpuSpread: [94, 320] });
  // A tenth of 2 cores: 200,000 µs a second, 347 events/s at 1 in flight (34 cameras), 695 at 16 (69).
  t.same(cameraFigures(STEPS, rate, 2, 0.1), { cpuShare: 0.1, atCpuShare: 34, atCpuShareSpread: [34, 69], wholeCpu: 320, wholeCpuSpread: [94, 320] }, 'the CPU bounds it below the rate');
  t.throws(() => cameraFigures(STEPS.filter((step) => step.workload === 'small'), rate, 2, 0.5), /no number in flight has steps of both workloads/);
});

t.test('the storage time: the bytes the store kept per event, at the rate, against MAX_STORAGE_BYTES, RETENTION_DAYS and the disk', async (t) => {
  // 1,000 small events took 3 MB, then 500 image events 25 MB: 3,000 and 50,000 bytes an event.
  const holdings = { before: { events: 0, bytes: 1_000_000 }, small: { events: 1_000, bytes: 4_000_000 }, image: { events: 1_500, bytes: 29_000_000 } };
  const rate = { cameras: 8, fps: 10, imageRatio: 0.25 };
  // 86,400 x 80 x (0.75 x 3,000 + 0.25 x 50,000) = 86,400 x 80 x 14,750 = 101.952 GB a day.
  const time = storageTime(holdings, rate, { diskFreeBytes: 203_904_000_000, maxStorageBytes: 50_976_000_000, retentionDays: 30 })!;
  t.same(time.storedPerEvent, { small: 3_000, image: 50_000 });
  t.equal(time.bytesPerDay, 101_952_000_000);
  t.same([time.daysOnDisk, time.daysUnderLimit, time.retentionDays, time.daysKept], [2, 0.5, 30, 0.5], 'MAX_STORAGE_BYTES holds half a day, the least');
  t.equal(storageTime(holdings, rate, { diskFreeBytes: 1e15, maxStorageBytes: 1e15, retentionDays: 1 })!.daysKept, 1, 'RETENTION_DAYS when it is the least');
  t.equal(storageTime({ ...holdings, image: holdings.small }, rate, { diskFreeBytes: 1, maxStorageBytes: 1, retentionDays: 1 }), null, 'no image event kept: not told');
});

t.test('the days to a rated TBW, and to what an eMMC says is left', async (t) => {
  t.equal(daysToTbw(100, 1e9), 100_000, '100 TB at 1 GB a day');
  t.equal(daysToTbw(100, 1e9, 0.2), 80_000, '20% of the life used');
  const plain = { device: 'vda', disk: 'vda', model: null, wear: null };
  const given = enduranceAt(100, 1e9, plain);
  t.same([given.tbwTB, given.days, given.daysLeftByWear], [100, 100_000, null]);
  t.match(given.note, /At 100 TB written \(--tbw\), the disk's rated endurance lasts 100,000 days \(273\.8 years\)/);
  const none = enduranceAt(undefined, 1e9, plain);
  t.same([none.tbwTB, none.days], [null, null]);
  t.match(none.note, /the disk \(vda\) reports neither its wear nor its rated endurance .* --tbw <TB>/, 'says plainly that --tbw is needed');
  const emmc = { device: 'mmcblk0p2', disk: 'mmcblk0', model: 'DG4016', wear: { typeA: [10, 20] as [number, number], typeB: [0, 10] as [number, number], preEol: 'normal' as const, usedShare: 0.2 } };
  const worn = enduranceAt(100, 1e9, emmc);
  t.equal(worn.daysLeftByWear, 80_000);
  t.match(worn.note, /The eMMC \(mmcblk0\) says 10-20% \(type A\), 0-10% \(type B\) of its life used, its reserve of blocks normal: what is left lasts at most 80,000 days/);
  t.match(enduranceAt(undefined, 1e9, emmc).note, /The eMMC \(mmcblk0\) says .*, but not its rated endurance\. Give it from the disk's datasheet: --tbw <TB>\./);
});

t.test('an eMMC\'s wear and a partition\'s disk, from a copy of /sys', async (t) => {
  const sys = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-sys-'));
  t.teardown(() => fs.rmSync(sys, { recursive: true, force: true }));
  // /sys/class/block/<name> links into /sys/devices, where a partition sits inside its disk's folder.
  const disk = path.join(sys, 'devices', 'mmc0', 'block', 'mmcblk0');
  fs.mkdirSync(path.join(disk, 'mmcblk0p2'), { recursive: true });
  fs.writeFileSync(path.join(disk, 'mmcblk0p2', 'partition'), '2\n');
  fs.mkdirSync(path.join(sys, 'class', 'block'), { recursive: true });
  fs.symlinkSync(path.join(disk, 'mmcblk0p2'), path.join(sys, 'class', 'block', 'mmcblk0p2'));
  const device = path.join(sys, 'block', 'mmcblk0', 'device');
  fs.mkdirSync(device, { recursive: true });
  fs.writeFileSync(path.join(device, 'name'), 'DG4016\n');
  fs.writeFileSync(path.join(device, 'life_time'), '0x02 0x01\n');
  fs.writeFileSync(path.join(device, 'pre_eol_info'), '0x01\n');
  t.same(diskInfo('mmcblk0p2', sys), {
    device: 'mmcblk0p2', disk: 'mmcblk0', model: 'DG4016',
    wear: { typeA: [10, 20], typeB: [0, 10], preEol: 'normal', usedShare: 0.2 },
  });
  fs.writeFileSync(path.join(device, 'life_time'), '0x0B 0x00\n');
  fs.writeFileSync(path.join(device, 'pre_eol_info'), '0x03\n');
  t.same(emmcWear(device), { typeA: [100, 100], typeB: null, preEol: 'urgent', usedShare: 1 }, 'past its estimated life; type B not defined');
  fs.rmSync(path.join(device, 'life_time'));
  t.equal(emmcWear(device), null, 'no life_time: no wear to report (an SD card, an NVMe drive)');
  t.same(diskInfo('vda', sys), { device: 'vda', disk: 'vda', model: null, wear: null }, 'a device /sys does not list is its own disk');
});

t.test('the bench\'s folder goes beside DATA_DIR, or into its nearest existing folder', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-folder-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  t.equal(benchFolderParent(path.join(dir, 'data')), dir, 'DATA_DIR not made yet: its nearest existing ancestor');
  t.equal(benchFolderParent(path.join(dir, 'a', 'b', 'data')), dir);
  fs.mkdirSync(path.join(dir, 'data'));
  t.equal(benchFolderParent(path.join(dir, 'data')), dir, 'DATA_DIR on its parent\'s file system: beside it');
});
