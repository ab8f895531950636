/** A small tmpfs for the disk-full harness: mounted when running as root, always unmounted after. */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

/** A mounted tmpfs. */
export interface Tmpfs {
  path: string;
  /** Bytes free on it now. */
  freeBytes(): number;
  /** Unmounts it (lazily, so a file still open does not keep it mounted) and removes the mount point. */
  unmount(): void;
}

/**
 * Mounts a tmpfs of `sizeMiB` at a new directory under `parent`.
 * @returns the mount, or a reason why it could not be mounted (not root, mount refused)
 */
export function mountTmpfs(parent: string, sizeMiB: number): Tmpfs | { refused: string } {
  if (process.getuid?.() !== 0) return { refused: `mounting a tmpfs needs root; running as uid ${process.getuid?.()}` };
  const mountPoint = fs.mkdtempSync(`${parent}/ees-diskfull-`);
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMiB}m,mode=0700`, 'tmpfs', mountPoint], { stdio: 'pipe' });
  } catch (err) {
    fs.rmdirSync(mountPoint);
    return { refused: `mount -t tmpfs failed: ${String((err as { stderr?: Buffer }).stderr ?? err).trim()}` };
  }
  let mounted = true;
  return {
    path: mountPoint,
    freeBytes: () => {
      const stats = fs.statfsSync(mountPoint);
      return stats.bavail * stats.bsize;
    },
    unmount: () => {
      if (!mounted) return;
      mounted = false;
      execFileSync('umount', ['-l', mountPoint], { stdio: 'pipe' });
      fs.rmdirSync(mountPoint);
    },
  };
}
