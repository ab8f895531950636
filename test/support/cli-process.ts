/**
 * Runs the built `edge-events` binary (scripts/lib/spawned-store.ts's `cliPath`; `npm run build`
 * makes it) as a real child process, for what only a process shows: another user's permissions,
 * signals, exit codes, a terminal.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { cliPath, withoutRunnerHooks } from '../../scripts/lib/spawned-store.js';

export interface CliProcess {
  child: ChildProcess;
  /** stdout and stderr so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves once the process exited and its output was read: its code, or the signal that ended it. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Starts `edge-events <args>`.
 * @param prefix a command that runs its arguments in place, e.g. `['unshare', '--user']`
 */
export function startCli(args: string[], options: { prefix?: string[]; env?: Record<string, string> } = {}): CliProcess {
  const env = { ...process.env, ...options.env };
  const [command, ...rest] = [...(options.prefix ?? []), ...withoutRunnerHooks(env), process.execPath, cliPath, ...args];
  const child = spawn(command, rest, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const exited = once(child, 'close').then(([code, signal]) => ({ code: code as number | null, signal: signal as NodeJS.Signals | null }));
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

/** Runs `edge-events <args>` to its end; see startCli. */
export async function runCli(args: string[], options: { prefix?: string[]; env?: Record<string, string> } = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const cli = startCli(args, options);
  const { code } = await cli.exited;
  return { code, stdout: cli.stdout(), stderr: cli.stderr() };
}

/**
 * The prefix that runs a command without privileges: in a user namespace of its own (util-linux's
 * unshare), where no capability holds outside it, root's included, so file modes and port
 * numbers stop it as they stop any user; files keep their owner, so a checkout under a private
 * folder stays readable.
 */
export function unprivileged(): string[] {
  return ['unshare', '--user'];
}
