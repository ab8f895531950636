/**
 * A store started "after a reboot" without rebooting (needs root): the process runs in a mount
 * namespace of its own (unshare(1) --mount, private propagation) in which a file holding another
 * boot id is bind-mounted over /proc/sys/kernel/random/boot_id (mount(8) --bind). Nothing changes
 * outside that namespace.
 *
 * Why it matters after a power cut: a real one reboots the machine, and software tells a restart
 * after a crash of its own process from one after a reboot by the boot id. lmdb-js does (the
 * store's DATA_DIR lock is the kernel's, which needs no boot id): with `overlappingSync` (its default
 * on Linux) it opens the latest committed transaction when the meta page's boot id is the current
 * one, and the latest flushed one otherwise (the lmdb-js README, `safeRestore`; `mdb_pick_meta` in
 * its mdb.c). A copy of a device opened in the boot that wrote it would be taken for a process
 * restart, as if the page cache had survived.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';

const BOOT_ID = '/proc/sys/kernel/random/boot_id';

/**
 * Writes a boot id unlike the current one to `file` (its first group differs too: lmdb-js reads
 * only that far) and returns the command to put before `node cli.js serve` so that the store
 * reads it as its boot id. The command execs the store in place: its pid is the store's.
 */
export function newBootPrefix(file: string): string[] {
  const current = fs.readFileSync(BOOT_ID, 'utf8').trim();
  let id = randomUUID();
  while (id.split('-')[0] === current.split('-')[0]) id = randomUUID();
  fs.writeFileSync(file, `${id}\n`);
  return ['unshare', '--mount', '--propagation', 'private', 'sh', '-c', `mount --bind "$0" ${BOOT_ID} && exec "$@"`, file];
}
