/**
 * What a process holds and does, read from /proc (Linux, proc(5)): resident memory, open file
 * descriptors, the states of its threads, and disk use of a directory.
 */
import fs from 'node:fs';
import path from 'node:path';

/** Resident set size of process `pid` in bytes (VmRSS), or NaN when /proc cannot tell. */
export function residentBytes(pid: number): number {
  try {
    const match = /^VmRSS:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** Number of open file descriptors of process `pid`, or NaN when /proc cannot tell. */
export function openFds(pid: number): number {
  try {
    return fs.readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return NaN;
  }
}

/**
 * The state letter of every thread of process `pid` (`R` running, `S` sleeping, `D` in
 * uninterruptible sleep, `T` stopped by a signal...: field 3 of /proc/<pid>/task/<tid>/stat,
 * proc(5)); empty once the process is gone.
 */
export function threadStates(pid: number): string[] {
  let tids: string[];
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  const states: string[] = [];
  for (const tid of tids) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      states.push(stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3));
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return states;
}

/** Bytes allocated on disk under `dir` (st_blocks, so sparse files count what they use). */
export function diskBytes(dir: string): number {
  let total = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) total += diskBytes(full);
    else total += (fs.statSync(full, { throwIfNoEntry: false })?.blocks ?? 0) * 512;
  }
  return total;
}
