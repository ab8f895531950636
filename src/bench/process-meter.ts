/**
 * What a process has cost so far, read from Linux's /proc (proc(5)): CPU as utime + stime of
 * /proc/<pid>/stat (every thread of the process, those that ended included), bytes written as
 * `write_bytes` of /proc/<pid>/io (what the process caused to be sent toward storage: page-cache
 * pages it dirtied, and direct I/O; docs/OPERATIONS.md, "Disk writes", says what it counts), and
 * the machine's busy CPU from /proc/stat, so that the bench can say what else ran meanwhile.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

/** What a process has used since it started. */
export interface ProcessCounters {
  /** utime + stime, s. */
  cpuSeconds: number;
  /** write_bytes, bytes. */
  writeBytes: number;
}

/** Clock ticks a second of /proc's CPU times (sysconf(_SC_CLK_TCK), 100 on Linux's common builds). */
function clockTicks(): number {
  try {
    const ticks = Number(execFileSync('getconf', ['CLK_TCK'], { stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim());
    return ticks > 0 ? ticks : 100;
  } catch {
    return 100;
  }
}

let ticksPerSecond: number | undefined;

/** The fields of a /proc stat line after the command's name (which may hold spaces and parentheses). */
function statFields(text: string): string[] {
  return text.slice(text.lastIndexOf(')') + 2).split(' ');
}

/**
 * CPU and bytes written of process `pid`, all its threads.
 * @throws Error naming the file when /proc/<pid>/stat or /proc/<pid>/io cannot be read (the
 *   process ended, another user's, not Linux) or io has no write_bytes (a kernel without task I/O
 *   accounting)
 */
export function processCounters(pid: number): ProcessCounters {
  ticksPerSecond ??= clockTicks();
  const fields = statFields(readProc(`/proc/${pid}/stat`));
  // utime and stime are fields 14 and 15 of the line (proc(5)), 11 and 12 after the name.
  const cpuSeconds = (Number(fields[11]) + Number(fields[12])) / ticksPerSecond;
  const io = /^write_bytes: (\d+)$/m.exec(readProc(`/proc/${pid}/io`))?.[1];
  if (io === undefined) throw new Error(`/proc/${pid}/io has no write_bytes: this kernel does not account task I/O (CONFIG_TASK_IO_ACCOUNTING)`);
  return { cpuSeconds, writeBytes: Number(io) };
}

/** Busy CPU seconds of the whole machine since boot, all cores: user, nice, system, irq, softirq and steal of /proc/stat. */
export function machineBusySeconds(): number {
  ticksPerSecond ??= clockTicks();
  const [, ...ticks] = readProc('/proc/stat').split('\n')[0].trim().split(/\s+/);
  // user nice system idle iowait irq softirq steal: idle and iowait are not busy.
  const [user, nice, system, , , irq, softirq, steal] = ticks.map(Number);
  return (user + nice + system + irq + softirq + steal) / ticksPerSecond;
}

function readProc(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`cannot read ${file}: edge-events bench measures processes through Linux's /proc (${(err as Error).message})`, { cause: err });
  }
}
