/** Damage as a card returning a bad page makes it, for the tests of damage at rest. */
import fs from 'node:fs';

/** Flips bits of the byte at `offset` (bytes) of `file`, in place. */
export function flipByte(file: string, offset: number): void {
  const fd = fs.openSync(file, 'r+');
  try {
    const byte = Buffer.alloc(1);
    fs.readSync(fd, byte, 0, 1, offset);
    byte[0] ^= 0x40;
    fs.writeSync(fd, byte, 0, 1, offset);
  } finally {
    fs.closeSync(fd);
  }
}
