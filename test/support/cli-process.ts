/**
 * Runs the built `edge-events` binary (scripts/lib/spawned-store.ts's `cliPath`; `npm run build`
 * makes it) as a real child process, for what only a process shows: another user's permissions,
 * signals, exit codes, a terminal.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { cliPath } from '../../scripts/lib/spawned-store.js';

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
 * @param prefix a command that runs its arguments in place, e.g. `['setpriv', '--reuid=65534', ...]`
 */
export function startCli(args: string[], options: { prefix?: string[]; env?: Record<string, string> } = {}): CliProcess {
  const [command, ...rest] = [...(options.prefix ?? []), process.execPath, cliPath, ...args];
  const child = spawn(command, rest, { env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
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
 * The prefix that runs a command as an unprivileged user (`nobody`, via util-linux's setpriv)
 * when this process is root, whom no file permission stops; none otherwise. Without tap's
 * NODE_OPTIONS: its process-info hook would write under the project as that user.
 */
export function unprivileged(): string[] {
  return process.getuid?.() === 0 ? ['env', '-u', 'NODE_OPTIONS', 'setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'] : [];
}
