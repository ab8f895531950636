/**
 * `edge-events bench` (docs/OPERATIONS.md, "Measuring the box: edge-events bench"), the built binary
 * as an operator runs it, with short steps: the JSON's shape, every figure positive and finite, the
 * store and the durable floor both measured, the share of a core, the cameras with half of the
 * cores left for inference and with all of them, the storage time and the days to the rated TBW as
 * the figures give them (recomputed here); the same result as a terminal shows it, a plain summary
 * first in words a buyer knows and the steps' jargon only under --details; the bench's folder gone
 * afterwards, also after Ctrl-C; and a bad option refused, named. The free space it leaves:
 * bench-free-space.test.ts.
 */
import t from 'tap';
import type { Test } from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { renderBench } from '../../src/bench/bench-report.js';
import { runCli, startCli } from '../support/cli-process.js';
import { until } from '../support/waiting.js';

/** A folder whose `data` child is the DATA_DIR the bench is given (not made: the bench writes beside it). */
function parentFolder(t: Test): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-command-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const STEP_FIGURES = ['events', 'seconds', 'eventsPerSecond', 'p50Ms', 'p99Ms', 'cpuMicrosPerEvent', 'bytesWrittenPerEvent'] as const;
const positive = (value: unknown): boolean => typeof value === 'number' && Number.isFinite(value) && value > 0;

/** Processes whose environment names `dir` (the bench's servers have DATA_DIR inside it). */
function processesUsing(dir: string): number[] {
  return fs.readdirSync('/proc').filter((name) => /^\d+$/.test(name)).filter((pid) => {
    try {
      return fs.readFileSync(`/proc/${pid}/environ`, 'utf8').includes(dir);
    } catch {
      return false; // ended, or another user's
    }
  }).map(Number);
}

t.test('measures the store and the durable floor, and says what the cameras cost', async (t) => {
  const parent = parentFolder(t);
  const dataDir = path.join(parent, 'data');
  const run = await runCli(['bench', '--seconds-per-step', '0.5', '--json', '--cameras', '2', '--fps', '5', '--image-ratio', '0.5', '--tbw', '100'], { env: { DATA_DIR: dataDir } });
  t.equal(run.code, 0, run.stderr);
  const result = JSON.parse(run.stdout);

  t.equal(result.dataDir, dataDir);
  t.equal(path.dirname(result.benchFolder.path), parent, 'the folder is made beside DATA_DIR, on its file system');
  t.match(path.basename(result.benchFolder.path), /^\.edge-events-bench-/);
  t.equal(result.benchFolder.removed, true);
  t.notOk(fs.existsSync(result.benchFolder.path), 'the bench\'s folder is gone');
  t.same(fs.readdirSync(parent), [], 'nothing is left beside DATA_DIR, and DATA_DIR itself is never made');
  const { bavail, bsize } = fs.statfsSync(parent);
  const room = bavail * bsize - 512 * 1024 * 1024;
  t.ok(result.benchFolder.storageLimitBytes > 0 && result.benchFolder.storageLimitBytes <= 10 * 1024 ** 3, 'the store held to MAX_STORAGE_BYTES (10 GiB by default)');
  t.ok(result.benchFolder.storageLimitBytes <= room + 256 * 1024 * 1024, 'and to the room left once 512 MiB stay free (give or take the run\'s own writes)');
  t.match(result.engines, { store: /^(uws|node)$/, floor: /^(uws|node)$/ });
  t.equal(result.engines.floor, result.engines.store, 'the floor serves on the store\'s engine');
  t.same(result.plan.inFlight, [1, 4, 16]);
  t.equal(result.plan.seconds, 0.5);
  t.match(result.image, { source: 'generated', width: 640, height: 480 });
  t.ok(result.image.bytes > 20_000, 'the image events carry a JPEG of a photo\'s size');

  t.equal(result.steps.length, 12, 'two systems, two workloads, three numbers in flight');
  for (const system of ['store', 'floor']) {
    for (const workload of ['small', 'image']) {
      for (const inFlight of [1, 4, 16]) {
        const step = result.steps.find((s: any) => s.system === system && s.workload === workload && s.inFlight === inFlight);
        t.ok(step, `${system} ${workload} x${inFlight} ran`);
        for (const figure of STEP_FIGURES) t.ok(positive(step[figure]), `${system} ${workload} x${inFlight}: ${figure} ${step[figure]} is positive and finite`);
        t.ok(step.p99Ms >= step.p50Ms);
      }
    }
  }
  t.equal(result.ratios.length, 6);
  for (const ratio of result.ratios) {
    const [store, floor] = ['store', 'floor'].map((system) => result.steps.find((s: any) => s.system === system && s.workload === ratio.workload && s.inFlight === ratio.inFlight));
    t.equal(ratio.eventsPerSecond, store.eventsPerSecond / floor.eventsPerSecond);
    t.equal(ratio.cpuPerEvent, store.cpuMicrosPerEvent / floor.cpuMicrosPerEvent);
    t.equal(ratio.bytesWrittenPerEvent, store.bytesWrittenPerEvent / floor.bytesWrittenPerEvent);
  }

  t.same(result.rate, { cameras: 2, fps: 5, imageRatio: 0.5, eventsPerSecond: 10 });
  for (const system of ['store', 'floor']) {
    // The dearest step of each workload, as docs/OPERATIONS.md says the figures are read.
    const dearest = (workload: string, figure: 'cpuMicrosPerEvent' | 'bytesWrittenPerEvent') =>
      Math.max(...result.steps.filter((s: any) => s.system === system && s.workload === workload).map((s: any) => s[figure]));
    const peak = (workload: string) => Math.max(...result.steps.filter((s: any) => s.system === system && s.workload === workload).map((s: any) => s.eventsPerSecond));
    const capacity = result.capacity[system];
    const coreShare = (10 * (0.5 * dearest('small', 'cpuMicrosPerEvent') + 0.5 * dearest('image', 'cpuMicrosPerEvent'))) / 1e6;
    const bytesPerDay = 86_400 * 10 * (0.5 * dearest('small', 'bytesWrittenPerEvent') + 0.5 * dearest('image', 'bytesWrittenPerEvent'));
    const peakMix = 1 / (0.5 / peak('small') + 0.5 / peak('image'));
    t.ok(Math.abs(capacity.coreShare - coreShare) <= 1e-12 * coreShare, `${system}: the share of a core is events/s x CPU per event`);
    t.ok(Math.abs(capacity.bytesPerDay - bytesPerDay) <= 1e-9 * bytesPerDay, `${system}: bytes a day`);
    t.ok(Math.abs(capacity.peakEventsPerSecond - peakMix) <= 1e-9 * peakMix, `${system}: the mix's peak rate`);
    t.equal(capacity.maxCameras, Math.floor(capacity.peakEventsPerSecond / 5));
    for (const figure of ['coreShare', 'bytesPerDay', 'peakEventsPerSecond']) t.ok(positive(capacity[figure]), `${system}: ${figure} is positive and finite`);
  }
  const days = (100e12) / result.capacity.store.bytesPerDay;
  t.equal(result.endurance.tbwTB, 100);
  t.ok(Math.abs(result.endurance.days - days) <= 1e-9 * days, 'the days to the rated TBW are 100 TB over the store\'s bytes a day');
  t.match(result.endurance.note, /100 TB written/);
  t.ok(positive(result.machine.cores));

  // Cameras at each number in flight: the whole CPU's from the mix's rate there, half the cores'
  // also bounded by half the cores over the mix's CPU per event there.
  const storeStep = (workload: string, inFlight: number) => result.steps.find((s: any) => s.system === 'store' && s.workload === workload && s.inFlight === inFlight);
  const perLoad = [1, 4, 16].map((inFlight) => {
    const [small, image] = [storeStep('small', inFlight), storeStep('image', inFlight)];
    const whole = Math.floor(1 / (0.5 / small.eventsPerSecond + 0.5 / image.eventsPerSecond) / 5);
    return { whole, half: Math.min(whole, Math.floor((result.machine.cores * 0.5 * 1e6) / (0.5 * small.cpuMicrosPerEvent + 0.5 * image.cpuMicrosPerEvent) / 5)) };
  });
  const spread = (values: number[]) => [Math.min(...values), Math.max(...values)];
  t.same(result.cameras, {
    cpuShare: 0.5,
    atCpuShare: Math.min(...perLoad.map((load) => load.half)),
    atCpuShareSpread: spread(perLoad.map((load) => load.half)),
    wholeCpu: Math.max(...perLoad.map((load) => load.whole)),
    wholeCpuSpread: spread(perLoad.map((load) => load.whole)),
  }, 'the cameras: at half the cores the fewest over the steps, with the whole CPU the most');

  const { storage } = result;
  t.ok(positive(storage.storedPerEvent.small) && storage.storedPerEvent.image > storage.storedPerEvent.small, `bytes kept per event, an image event's the more: ${JSON.stringify(storage.storedPerEvent)}`);
  t.ok(Math.abs(storage.bytesPerDay - 86_400 * 10 * (0.5 * storage.storedPerEvent.small + 0.5 * storage.storedPerEvent.image)) <= 1e-6 * storage.bytesPerDay, 'bytes kept a day at the rate');
  t.equal(storage.maxStorageBytes, 10 * 1024 ** 3, 'MAX_STORAGE_BYTES as the store reads it (its default)');
  t.equal(storage.retentionDays, 1, 'RETENTION_DAYS likewise');
  // The test files beside this one (tap runs them in parallel) write and free temp folders meanwhile.
  t.ok(Math.abs(storage.diskFreeBytes - bavail * bsize) <= 2 * 1024 ** 3, `the disk's free bytes when the run began (${storage.diskFreeBytes}), near statfs's after it (${bavail * bsize})`);
  t.equal(storage.daysKept, Math.min(storage.diskFreeBytes / storage.bytesPerDay, storage.maxStorageBytes / storage.bytesPerDay, 1), 'the store keeps them for the least of the three');
  t.match(result.freshStoreNote, /fresh store/);

  // As a terminal shows it: the summary first, in words a buyer knows; the steps under --details.
  const plain = renderBench(result);
  const [first, , rateLine] = plain.split('\n');
  t.match(first, /^edge-events bench: this box, \d+ cores, /);
  t.equal(rateLine, 'For 2 cameras x 5 events a second, 50.0% of them with an image (10.0 events a second):');
  const words = plain.replace(/\s+/g, ' ');
  t.match(words, new RegExp(` Cameras up to ${result.cameras.atCpuShare.toLocaleString('en-US')} cameras at 5 events a second with half of the ${result.machine.cores} cores left for inference`), 'the headline: cameras with half the cores left for inference');
  t.match(words, new RegExp(`; ${result.cameras.wholeCpu.toLocaleString('en-US')} with the whole CPU`), 'the whole CPU\'s beside it');
  t.match(words, / Storage time [\d.,]+ (hours|days) of these events \([\d.,]+ GB a day\): MAX_STORAGE_BYTES=10\.0 GiB holds /, 'how long the store keeps the events');
  t.match(words, /RETENTION_DAYS=1 keeps them 24 hours; the disk's [\d.,]+ GB free hold /);
  t.match(words, / Disk writes [\d.,]+ GB a day\. Measured on the bench's fresh store: a grown store's index writes more per event/, 'bytes a day with the caveat, printed');
  t.match(words, / Disk life At 100 TB written \(--tbw\)/, 'the disk\'s life: wear only');
  t.match(words, /edge-events bench --details\. $/, 'and where the details are');
  for (const jargon of ['durable floor', 'in flight', 'tail counted', 'store / floor']) t.notOk(plain.includes(jargon), `no "${jargon}" in the summary`);
  const detailed = renderBench(result, { details: true });
  t.ok(detailed.startsWith(plain.slice(0, plain.indexOf('Each measured step'))), 'with --details: the same summary first');
  for (const jargon of ['durable floor', 'in flight', 'tail counted', 'store / floor']) t.ok(detailed.includes(jargon), `then the steps: "${jargon}"`);
});

t.test('--help names the summary\'s options and --details', async (t) => {
  const help = await runCli(['bench', '--help']);
  t.equal(help.code, 0);
  t.match(help.stdout, /--cpu-for-store <share>/);
  t.match(help.stdout, /--details +after the summary, each measured step/);
});

t.test('a bad option is refused, named, before anything runs', async (t) => {
  const parent = parentFolder(t);
  const run = await runCli(['bench', '--image-ratio', '2', '--json'], { env: { DATA_DIR: path.join(parent, 'data') } });
  t.equal(run.code, 1);
  t.match(run.stderr, /--image-ratio/);
  t.match(run.stderr, /a share from 0 to 1/);
  t.equal(run.stdout, '');
  t.same(fs.readdirSync(parent), [], 'no folder was made');
});

t.test('Ctrl-C stops the servers and removes the bench\'s folder', async (t) => {
  const parent = parentFolder(t);
  const cli = startCli(['bench', '--seconds-per-step', '5'], { env: { DATA_DIR: path.join(parent, 'data') } });
  t.teardown(() => cli.child.kill('SIGKILL'));
  // Without a terminal, one line names the folder once it is made, before the servers start.
  const folder = await until('the bench\'s folder', () => /measuring .* in (\S+) for about/.exec(cli.stderr())?.[1]);
  t.ok(fs.existsSync(folder));
  cli.child.kill('SIGINT');
  const { code } = await cli.exited;
  t.equal(code, 130, cli.stderr());
  t.match(cli.stderr(), /stopped by SIGINT; the servers were stopped and .* removed/);
  t.notOk(fs.existsSync(folder), 'the folder is gone');
  t.same(processesUsing(folder), [], 'no server of the bench is left running');
});
