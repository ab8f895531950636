/**
 * ext4 file systems in image files on loop devices, for the power-loss harness (needs root): an
 * image made with mkfs.ext4, attached with losetup(8) and mounted read-write, then unmounted and
 * detached. Whatever is still mounted when the process exits, by any path (an error, Ctrl-C
 * through store-process.ts's handler), is unmounted lazily (umount(8) -l: a file a dying process
 * still holds does not keep it mounted) and its loop device detached (losetup -d on a busy
 * device detaches it once the lazy unmount lets go of it, loop(4) autoclear).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** Mounting failed for a reason of the machine (no loop device, no ext4, not root). */
export class LoopRefused extends Error {}

/** An image's file system, mounted. */
export interface MountedImage {
  image: string;
  /** The loop device, e.g. `/dev/loop3`. */
  device: string;
  mountPoint: string;
  /** Unmounts it, detaches the loop device and removes the mount point; again, does nothing. */
  release(): void;
}

const MiB = 1024 * 1024;
/** How long a lazily unmounted image may take to let go of its loop device (its last user, a killed store, exiting). */
const DETACH_WAIT_MS = 5000;
const mounted = new Set<MountedImage>();
process.on('exit', () => {
  for (const image of mounted) image.release();
});

function run(command: string, args: string[]): string {
  return execFileSync(command, args, { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' }).trim();
}

function failure(err: unknown): string {
  return String((err as { stderr?: string }).stderr || (err as Error).message).trim();
}

/**
 * Blocks (it may run in an exit hook) until `device` is detached, for at most DETACH_WAIT_MS: a
 * bound loop device has a `loop` directory in sysfs (Linux Documentation/ABI/testing/sysfs-block-loop).
 */
function awaitDetached(device: string): void {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let waited = 0; waited < DETACH_WAIT_MS && fs.existsSync(`/sys/block/${path.basename(device)}/loop`); waited += 20) Atomics.wait(pause, 0, 0, 20);
}

/** Why this process cannot mount images, or undefined when it may try (root, the tools on the PATH). */
export function loopMountRefusal(): string | undefined {
  if (process.getuid?.() !== 0) return `mounting a loop device needs root (mount(8), losetup(8)); running as uid ${process.getuid?.()}`;
  for (const tool of ['losetup', 'mount', 'umount', 'mkfs.ext4', 'cp', 'unshare']) {
    try {
      execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    } catch {
      return `${tool} is not on the PATH`;
    }
  }
  return undefined;
}

/**
 * Makes `image`: a sparse file of `sizeMiB` holding an empty ext4 with default options. Inode
 * tables and journal are initialised at once (mke2fs(8), `-E lazy_itable_init=0,lazy_journal_init=0`),
 * so no background initialisation writes to the device once it is mounted.
 * @throws LoopRefused when mkfs.ext4 fails
 */
export function makeExt4Image(image: string, sizeMiB: number): void {
  fs.writeFileSync(image, '', { flag: 'wx' });
  fs.truncateSync(image, sizeMiB * MiB);
  try {
    run('mkfs.ext4', ['-q', '-F', '-E', 'lazy_itable_init=0,lazy_journal_init=0', image]);
  } catch (err) {
    throw new LoopRefused(`mkfs.ext4 ${image} failed: ${failure(err)}`);
  }
}

/**
 * Attaches `image` to a free loop device and mounts its ext4 read-write (default options) at
 * `mountPoint`, which it creates. An image copied from a mounted file system has its journal
 * replayed by this mount (ext4(5)), as after a power cut.
 * @throws LoopRefused when losetup or mount fails
 */
export function mountImage(image: string, mountPoint: string): MountedImage {
  fs.mkdirSync(mountPoint);
  let device: string;
  try {
    device = run('losetup', ['--find', '--show', image]);
  } catch (err) {
    fs.rmdirSync(mountPoint);
    throw new LoopRefused(`losetup --find --show ${image} failed: ${failure(err)}`);
  }
  try {
    run('mount', ['-t', 'ext4', device, mountPoint]);
  } catch (err) {
    run('losetup', ['-d', device]);
    fs.rmdirSync(mountPoint);
    throw new LoopRefused(`mount -t ext4 ${device} ${mountPoint} failed: ${failure(err)}`);
  }
  const mount: MountedImage = {
    image,
    device,
    mountPoint,
    release() {
      if (!mounted.delete(mount)) return;
      let lazy = false;
      try {
        run('umount', [mountPoint]);
      } catch {
        run('umount', ['-l', mountPoint]);
        lazy = true;
      }
      run('losetup', ['-d', device]);
      fs.rmdirSync(mountPoint);
      if (lazy) awaitDetached(device);
    },
  };
  mounted.add(mount);
  return mount;
}
