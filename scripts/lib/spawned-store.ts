/**
 * Runs the built binary (`dist/src/cli.js`, made by `npm run build`, which `npm test` and the
 * harness scripts run first) as a child process, for what only a real process shows: start-up
 * refusal, exit codes, signals. Shared by the tests and the harness scripts (scripts/lib is the
 * one place for harness code both use).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { packageRoot } from '../../src/paths.js';
import { nodeOptionsWithoutPreloads } from '../../src/worker-start.js';

export const cliPath = path.join(packageRoot, 'dist', 'src', 'cli.js');

/**
 * The command that runs before a Node program spawned with `env` so that it starts as an
 * operator's does, without the test runner's module hooks: under tap with coverage off,
 * `/usr/bin/env` setting the NODE_OPTIONS the program was meant to have (this process's less its
 * preloads when `env` inherits it, the caller's own as it is); otherwise nothing. tap adds its
 * process-info hook to the NODE_OPTIONS of every process a test spawns, whatever environment it is
 * given (for coverage, and `tap --changed`): on Node 20 that doubled the CPU time of a store's
 * start, its modules loaded through the hook's thread. With coverage on, the hook stays: it
 * collects the program's coverage.
 */
export function withoutRunnerHooks(env: NodeJS.ProcessEnv): string[] {
  if (process.env.TAP !== '1' || process.env.TAP_DISABLE_COVERAGE !== '1') return [];
  const inherited = env.NODE_OPTIONS === process.env.NODE_OPTIONS;
  const wanted = inherited ? nodeOptionsWithoutPreloads(env.NODE_OPTIONS ?? '') : env.NODE_OPTIONS ?? '';
  return wanted ? ['/usr/bin/env', `NODE_OPTIONS=${wanted}`] : ['/usr/bin/env', '-u', 'NODE_OPTIONS'];
}

export interface SpawnedStore {
  child: ChildProcess;
  url: string;
  output: () => string;
}

/** How `spawnStore` runs the process, beyond its environment. */
export interface SpawnOptions {
  /** Called with the process as soon as it exists, before it listens (so a caller can kill a store still starting). */
  spawned?: (child: ChildProcess) => void;
  /** A command that execs its arguments (`node cli.js serve`) in place, e.g. in a namespace of its own: the pid stays the store's. */
  prefix?: string[];
  /** The program and its arguments before `serve` (default: `node` and `cliPath`), e.g. an installed `edge-events` found on PATH. */
  command?: string[];
  /** The working directory (default: this process's). */
  cwd?: string;
}

/**
 * Runs `edge-events serve` with `env` and waits for its "listening" log line.
 * @param node the Node binary to run it with (default: this test's)
 * @param prefix a command and arguments that run it, e.g. `['setpriv', '--reuid=65534', ...]`
 */
export async function spawnStore(env: Record<string, string>, node = process.execPath, options: SpawnOptions = {}): Promise<SpawnedStore> {
  const childEnv = { ...process.env, HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env };
  const [command, ...args] = [...(options.prefix ?? []), ...withoutRunnerHooks(childEnv), ...(options.command ?? [node, cliPath]), 'serve'];
  const child = spawn(command, args, {
    env: childEnv,
    cwd: options.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  options.spawned?.(child);
  let output = '';
  child.stderr!.on('data', (d) => (output += d));
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      output += d;
      const match = /"port":(\d+)/.exec(output);
      if (match) resolve(Number(match[1]));
    });
    child.on('exit', (code) => reject(new Error(`store exited with ${code}: ${output}`)));
  });
  return { child, url: `http://127.0.0.1:${port}`, output: () => output };
}

/**
 * Runs `edge-events serve` expecting it to refuse to start; resolves with exit code and stderr.
 * @param node the Node binary to run it with (default: this test's)
 * @param prefix a command and arguments that run it, e.g. `['setpriv', '--reuid=65534', ...]`
 */
export async function refusedStart(env: Record<string, string>, node = process.execPath, prefix: string[] = []): Promise<{ code: number | null; stderr: string }> {
  const childEnv = { ...process.env, HOST: '127.0.0.1', PORT: '0', ...env };
  const [command, ...args] = [...prefix, ...withoutRunnerHooks(childEnv), node, cliPath, 'serve'];
  const child = spawn(command, args, { env: childEnv, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stderr };
}
