/** What a process holds, read from /proc (Linux): resident memory, open file descriptors, and disk use of a directory. */
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
