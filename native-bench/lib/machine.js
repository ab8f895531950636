/** What the figures were measured on, and how busy the machine was besides the bench. */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { machineBusySeconds } from '../../dist/src/bench/process-meter.js';
import { quantile } from './closed-loop.js';
import { blockDeviceOf } from './write-counters.js';

// Busy CPU seconds of the whole machine so far, from /proc/stat: one definition, shipped with the
// store for edge-events bench (src/bench/process-meter.ts), loaded from the build as closed-loop.js is.
export { machineBusySeconds };

const run = (cmd, args) => {
  try {
    return execFileSync(cmd, args, { stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim();
  } catch {
    return '';
  }
};

/** MB/s of 4 MiB sequential writes, each followed by fdatasync: the ceiling of durable bytes. */
function syncedWriteMBs(dir) {
  const file = `${dir}/bandwidth-probe`;
  const fd = fs.openSync(file, 'w');
  const block = Buffer.alloc(4 * 1024 * 1024, 7);
  const started = process.hrtime.bigint();
  for (let i = 0; i < 32; i++) {
    fs.writeSync(fd, block, 0, block.length, i * block.length);
    fs.fdatasyncSync(fd);
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  fs.closeSync(fd);
  fs.unlinkSync(file);
  return (32 * block.length) / 1e6 / seconds;
}

/** Median and p99 of fdatasync after a 4 KiB write, in ms: the floor of a durable ack. */
function fdatasyncMs(dir) {
  const file = `${dir}/fsync-probe`;
  const fd = fs.openSync(file, 'w');
  const block = Buffer.alloc(4096, 1);
  const times = [];
  for (let i = 0; i < 300; i++) {
    fs.writeSync(fd, block, 0, block.length, i * block.length);
    const started = process.hrtime.bigint();
    fs.fdatasyncSync(fd);
    times.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  fs.closeSync(fd);
  fs.unlinkSync(file);
  times.sort((a, b) => a - b);
  return { p50: times[150], p99: times[296] };
}

/**
 * The disk alone at a pipeline's pace (sweep.js `--pace`): `bytes` written and fdatasync'd `rate`
 * times a second for `seconds`, into a file pre-zeroed and synced first (so an append commits no
 * file size), in `dir`. A paced run's p99 is mostly this disk's own stalls (PROFILE.md, "Stalls and
 * `write_bytes` on a grown store, traced"), which come and go by the minute; measured right after
 * each system, it says what the disk did then.
 * @param {{ dir: string, bytes: number, rate: number, seconds: number }} options bytes per write;
 *   rate: writes a second
 * @returns {Promise<{ p50Ms: number, p99Ms: number, maxMs: number, writes: number }>} latency of
 *   write + fdatasync, ms (nearest rank)
 */
export async function pacedSyncLatency({ dir, bytes, rate, seconds }) {
  const file = `${dir}/paced-sync-probe`;
  const count = Math.floor(seconds * rate);
  const fd = fs.openSync(file, 'w');
  try {
    fs.writeSync(fd, Buffer.alloc(count * bytes));
    fs.fsyncSync(fd);
    const block = Buffer.alloc(bytes, 1);
    const times = [];
    const started = performance.now();
    for (let k = 0; k < count; k++) {
      const wait = started + (k * 1000) / rate - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      const t0 = performance.now();
      fs.writeSync(fd, block, 0, bytes, k * bytes);
      fs.fdatasyncSync(fd);
      times.push(performance.now() - t0);
    }
    times.sort((a, b) => a - b);
    return { p50Ms: quantile(times, 0.5), p99Ms: quantile(times, 0.99), maxMs: times[times.length - 1], writes: times.length };
  } finally {
    fs.closeSync(fd);
    fs.unlinkSync(file);
  }
}

function cpuDescription() {
  const info = fs.readFileSync('/proc/cpuinfo', 'utf8');
  const field = (name) => new RegExp(`^${name}\\s*: (.*)$`, 'm').exec(info)?.[1].trim() ?? '?';
  const virtual = /^flags\s*:.*\bhypervisor\b/m.test(info) ? ', virtual machine' : '';
  return `${field('model name')} (family ${field('cpu family')}, model ${field('model')}, ${Math.round(Number(field('cpu MHz')))} MHz${virtual})`;
}

/** Which store was measured: the commit, whether src/ differed from it, when dist/ was built. */
function storeBuild(repoDir) {
  const commit = run('git', ['-C', repoDir, 'rev-parse', '--short', 'HEAD']) || '?';
  const dirty = run('git', ['-C', repoDir, 'status', '--porcelain', '--', 'src', 'schemas']) !== '';
  // tsc -b rewrites only the files a build changes; its build info is written by every build that emits.
  const built = fs.statSync(`${repoDir}/dist/tsconfig.tsbuildinfo`, { throwIfNoEntry: false })?.mtime.toISOString().slice(0, 16).replace('T', ' ');
  return `commit ${commit}${dirty ? ' with uncommitted changes in src/' : ''}, dist/ built ${built ?? '?'} UTC`;
}

/**
 * How the file system holding `dataDir` is mounted, from findmnt, and for ext4 whether it keeps a
 * journal: jbd2 lists each journal it runs in /proc/fs/jbd2 under its block device's name (`vda-8`),
 * the name `blockDeviceOf` resolves (df may say `/dev/root`). A journal changes what a sync writes:
 * an append that allocates blocks commits the journal, a timestamp alone does not (PROFILE.md, "A
 * journaled ext4").
 */
function mountDescription(dataDir, fsType) {
  const options = run('findmnt', ['-n', '-o', 'OPTIONS', '--target', dataDir]) || '?';
  if (fsType !== 'ext4') return options;
  const name = blockDeviceOf(dataDir)?.name;
  const journals = fs.existsSync('/proc/fs/jbd2') ? fs.readdirSync('/proc/fs/jbd2') : [];
  const journaled = journals.some((journal) => journal.startsWith(`${name}-`));
  return `${options}; ${journaled ? 'with' : 'without'} a journal`;
}

/**
 * CPU model, cores, RAM, kernel, Node and wrk versions, the disk under `dataDir` (device,
 * filesystem, its mount options and journal, size, fdatasync latency, and `diskCeilingMBs`: MB/s
 * of sequential 4 MiB writes each followed by fdatasync, the disk ceiling) and the build of the
 * store in `repoDir`.
 */
export function machineDetails(dataDir, repoDir) {
  const [device = '?', fsType = '?', size = '?', avail = '?'] = run('df', ['-h', '--output=source,fstype,size,avail', dataDir]).split('\n')[1]?.trim().split(/\s+/) ?? [];
  const sync = fdatasyncMs(dataDir);
  const diskCeilingMBs = syncedWriteMBs(dataDir);
  return {
    cpu: cpuDescription(),
    cores: os.availableParallelism(),
    ramGiB: (os.totalmem() / 1024 ** 3).toFixed(1),
    kernel: `${os.type()} ${os.release()}`,
    node: process.version,
    // `wrk --version` exits 1 after printing.
    wrk: run('sh', ['-c', 'wrk --version 2>&1 | head -1']).split(' [')[0],
    disk: `${device} (${fsType}, ${mountDescription(dataDir, fsType)}, ${size}, ${avail} free)`,
    fdatasync: `p50 ${sync.p50.toFixed(2)} ms, p99 ${sync.p99.toFixed(2)} ms (4 KiB write + fdatasync)`,
    syncedWrite: `${diskCeilingMBs.toFixed(0)} MB/s (4 MiB writes, fdatasync after each)`,
    diskCeilingMBs,
    fdatasyncP50Ms: sync.p50,
    store: storeBuild(repoDir),
  };
}

/**
 * Waits until the machine has been quiet (under `maxCores` busy) for `quietSeconds` in a row,
 * or `timeoutSeconds` passed: other work on the box skews every figure.
 * @returns {Promise<boolean>} true when it got quiet, false on timeout
 */
export async function waitForQuiet({ maxCores = 0.25, quietSeconds = 3, timeoutSeconds = 60 } = {}) {
  const deadline = Date.now() + timeoutSeconds * 1000;
  let quiet = 0;
  while (quiet < quietSeconds) {
    if (Date.now() > deadline) return false;
    const before = machineBusySeconds();
    await new Promise((r) => setTimeout(r, 1000));
    quiet = machineBusySeconds() - before < maxCores ? quiet + 1 : 0;
  }
  return true;
}
