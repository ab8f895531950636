/**
 * The kernel's page size as the store reads it (src/store/log/kernel-page.ts, from the auxiliary
 * vector) is the one `getconf PAGESIZE` reports (glibc's sysconf). This machine has 4 KiB pages;
 * a 16 KiB kernel (a Raspberry Pi 5's) cannot be had here, under qemu-user either.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import t from 'tap';
import { kernelPageBytes } from '../src/store/log/kernel-page.js';

const run = promisify(execFile);

t.test('the page size read from the auxiliary vector is the kernel\'s', async (t) => {
  const getconf = Number((await run('getconf', ['PAGESIZE'])).stdout.trim());
  t.ok(getconf >= 4096, `getconf PAGESIZE: ${getconf}`);
  t.equal(kernelPageBytes(), getconf);
});
