/**
 * The kernel's page size, which the log's zeros written ahead are cut to (blob-log.ts) and which
 * the page cache counts a dirtied page as in `write_bytes` (proc(5), /proc/<pid>/io): 4 KiB on
 * x86-64 and most arm64 kernels, 16 KiB on a Raspberry Pi 5's (docs/OPERATIONS.md, "Platforms"),
 * 64 KiB on some arm64 and POWER kernels.
 */
import fs from 'node:fs';

/** The ELF auxiliary vector's entry for the page size (AT_PAGESZ in Linux's uapi/linux/auxvec.h). */
const AT_PAGESZ = 6n;
const FALLBACK_PAGE_BYTES = 4096;

/**
 * The kernel's page size (bytes), from the auxiliary vector Linux gives every process
 * (/proc/self/auxv, what getauxval(3) reads: pairs of native words, little-endian on the
 * machines the store runs on); 4096 where it cannot be read (not Linux).
 */
export function kernelPageBytes(): number {
  try {
    const auxv = fs.readFileSync('/proc/self/auxv');
    const word = process.arch.endsWith('64') ? 8 : 4;
    const read = (at: number) => (word === 8 ? auxv.readBigUInt64LE(at) : BigInt(auxv.readUInt32LE(at)));
    for (let at = 0; at + 2 * word <= auxv.length; at += 2 * word) {
      const type = read(at);
      if (type === 0n) break;
      if (type === AT_PAGESZ) return Number(read(at + word));
    }
  } catch {
    // No /proc: the fallback below.
  }
  return FALLBACK_PAGE_BYTES;
}
