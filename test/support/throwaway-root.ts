/**
 * A throwaway root for installing a Debian package with `dpkg --root` (docs/OPERATIONS.md, "The
 * Debian package"), safe on the machine running the test. In a mount namespace of its own
 * (`unshare --mount`), overlays put this machine's /usr, /etc and dpkg database under the root
 * with every write going to the test's folder: the maintainer scripts, which dpkg runs chrooted
 * into the root, find sh, adduser, deb-systemd-helper and node, and `Depends:` is checked
 * against the packages really installed here, while this machine's files stay as they are.
 * /dev, /proc and /sys are bound in; /run is empty, so the root has no running systemd.
 * Needs root (CAP_SYS_ADMIN) and overlayfs. The namespace lives as long as its holder process
 * (`cat` reading the test's pipe): `close()` or the test's exit ends it and every mount with it.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** systemd's default PATH for services (systemd.exec(5), "Environment variables in spawned processes"). */
export const SYSTEMD_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export interface ThrowawayRoot {
  /** The root's path as the namespace sees it (what `dpkg --root` and `chroot` take). */
  root: string;
  /** Pid of the namespace's holder, for `nsenter --target <pid> --mount`. */
  pid: number;
  /** The path of `file` (absolute inside the root) as this process reaches it, through /proc/<pid>/root. */
  file: (file: string) => string;
  /** Runs a command in the namespace; resolves with its output, rejects with its stderr when it fails. */
  exec: (command: string[], env?: Record<string, string>) => Promise<{ stdout: string; stderr: string }>;
  /**
   * The prefix that runs a command in the namespace, chrooted into the root as `uid`:`gid`, with
   * `env` as its whole environment (as systemd starts a service: nothing of the caller's).
   */
  chrootAs: (uid: number, gid: number, env: Record<string, string>) => string[];
  /** Ends the namespace (the holder's pipe closes) and waits for it. */
  close: () => Promise<void>;
}

/** The holder: mounts the root, says "ready", then keeps the namespace while its stdin is open. */
const HOLDER = `set -e
w=$1; r=$w/root
for d in usr etc dpkg; do mkdir -p "$w/upper/$d" "$w/work/$d"; done
mount -t overlay overlay -o "lowerdir=/usr,upperdir=$w/upper/usr,workdir=$w/work/usr" "$r/usr"
mount -t overlay overlay -o "lowerdir=/etc,upperdir=$w/upper/etc,workdir=$w/work/etc" "$r/etc"
mount -t overlay overlay -o "lowerdir=/var/lib/dpkg,upperdir=$w/upper/dpkg,workdir=$w/work/dpkg" "$r/var/lib/dpkg"
for d in dev proc sys; do mount --rbind "/$d" "$r/$d"; done
echo ready
exec cat >/dev/null`;

/**
 * Makes a throwaway root under `work` (an empty folder of the test's) and its namespace.
 * @throws Error with the holder's output when the mounts fail (not root, no overlayfs)
 */
export async function openThrowawayRoot(work: string): Promise<ThrowawayRoot> {
  const root = path.join(work, 'root');
  for (const dir of ['usr', 'etc', 'var/lib/dpkg', 'var/log', 'var/cache', 'var/tmp', 'tmp', 'run', 'dev', 'proc', 'sys']) fs.mkdirSync(path.join(root, dir), { recursive: true });
  for (const dir of ['tmp', 'var/tmp']) fs.chmodSync(path.join(root, dir), 0o1777);
  // Merged /usr, as on Debian 12: /bin, /lib, /lib64 and /sbin are links into /usr.
  for (const link of ['bin', 'lib', 'lib64', 'sbin']) fs.symlinkSync(`usr/${link}`, path.join(root, link));

  const holder: ChildProcess = spawn('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', HOLDER, 'holder', work], { stdio: ['pipe', 'pipe', 'pipe'] });
  let output = '';
  holder.stderr!.on('data', (d) => (output += d));
  await new Promise<void>((resolve, reject) => {
    holder.stdout!.on('data', (d) => {
      output += d;
      if (output.includes('ready\n')) resolve();
    });
    holder.on('exit', (code) => reject(new Error(`the throwaway root's mounts failed (exit ${code}): ${output}`)));
  });
  const pid = holder.pid!;
  const enter = ['nsenter', `--target=${pid}`, '--mount', '--'];
  return {
    root,
    pid,
    file: (file) => path.join(`/proc/${pid}/root`, root, file),
    exec: async (command, env = {}) => {
      const [program, ...args] = [...enter, ...command];
      return run(program, args, { env: { ...process.env, PATH: SYSTEMD_PATH, ...env }, maxBuffer: 64 << 20 });
    },
    chrootAs: (uid, gid, env) => [...enter, 'env', '-i', ...Object.entries(env).map(([name, value]) => `${name}=${value}`), 'chroot', `--userspec=${uid}:${gid}`, root],
    close: async () => {
      if (holder.exitCode !== null || holder.signalCode !== null) return;
      const exited = once(holder, 'exit');
      holder.stdin!.end();
      await exited;
    },
  };
}
