/**
 * The arithmetic of `edge-events bench` (src/bench/capacity.ts; docs/OPERATIONS.md, "Measuring the
 * box: edge-events bench"): from the steps' figures to a share of a core, bytes a day, the cameras
 * the peak rate holds and the days to a rated TBW; the eMMC wear sysfs gives (src/bench/disk-wear.ts,
 * on a copy of its layout); and where the bench's folder goes (src/bench/temp-folder.ts).
 */
import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { StepFigures } from '../src/bench/bench-steps.js';
import { capacityAt, daysToTbw, enduranceAt, workloadCost } from '../src/bench/capacity.js';
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
