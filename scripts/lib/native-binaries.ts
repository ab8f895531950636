/**
 * Which native addons (`*.node`) of an installed tree are built for another machine than this
 * one (docs/OPERATIONS.md, "The Debian package": only the host architecture's binaries ship).
 * Read from each file's ELF header, so it holds for every package, whatever its naming.
 */
import fs from 'node:fs';
import path from 'node:path';

/** ELF e_machine of each Node `process.arch` (the ELF specification's EM_* numbers). */
const ELF_MACHINE: Record<string, number> = { ia32: 3, arm: 40, x64: 62, arm64: 183, riscv64: 243, ppc64: 21, s390x: 22, loong64: 258 };

/** A native addon and the machine it is built for: `ELF machine <n>`, or `not ELF` (macOS, Windows). */
export interface ForeignBinary {
  file: string;
  builtFor: string;
}

/** Every `*.node` file under `dir` (absolute paths). */
export function nativeAddons(dir: string): string[] {
  return (fs.readdirSync(dir, { recursive: true, withFileTypes: true }) as fs.Dirent[])
    .filter((entry) => entry.isFile() && entry.name.endsWith('.node'))
    .map((entry) => path.join(entry.parentPath, entry.name));
}

/** The machine an addon is built for, from the first 20 bytes of its header. */
function builtFor(file: string): { elf: boolean; machine: number } {
  const header = Buffer.alloc(20);
  const fd = fs.openSync(file, 'r');
  try {
    fs.readSync(fd, header, 0, header.length, 0);
  } finally {
    fs.closeSync(fd);
  }
  const elf = header.readUInt32BE(0) === 0x7f454c46;
  // EI_DATA (byte 5): 1 little-endian, 2 big-endian; e_machine is the half-word at offset 18.
  const machine = header[5] === 2 ? header.readUInt16BE(18) : header.readUInt16LE(18);
  return { elf, machine };
}

/**
 * The native addons under `dir` that this machine cannot load: not ELF, or ELF for another
 * machine than `arch`'s.
 * @param arch a Node `process.arch` (default: this process's)
 * @throws Error when `arch` has no known ELF machine number
 */
export function foreignBinaries(dir: string, arch: string = process.arch): ForeignBinary[] {
  const wanted = ELF_MACHINE[arch];
  if (wanted === undefined) throw new Error(`no ELF machine number known for process.arch ${arch}`);
  const foreign: ForeignBinary[] = [];
  for (const file of nativeAddons(dir)) {
    const { elf, machine } = builtFor(file);
    if (!elf) foreign.push({ file, builtFor: 'not ELF' });
    else if (machine !== wanted) foreign.push({ file, builtFor: `ELF machine ${machine}` });
  }
  return foreign;
}
