/**
 * The store as a child process for the harness scripts: the built binary (`dist/src/cli.js
 * serve`, started by test/support/spawned-store.ts) on 127.0.0.1 and a free port, killed with any
 * signal and awaited, and never left running when the harness exits.
 */
import type { ChildProcess } from 'node:child_process';
import { spawnStore } from '../../test/support/spawned-store.js';

/** How a store process ended. */
export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A running store process. */
export interface StoreProcess {
  url: string;
  pid: number;
  child: ChildProcess;
  /** Its stdout and stderr so far. */
  output(): string;
  /** Resolves when the process has ended, however it ended. */
  exited: Promise<Exit>;
  /** True once the process has ended. */
  hasExited(): boolean;
  /** Sends `signal` (default SIGKILL) and waits for the process to end. */
  kill(signal?: NodeJS.Signals): Promise<Exit>;
}

const running = new Set<ChildProcess>();
const killAll = () => {
  for (const child of running) child.kill('SIGKILL');
};
process.on('exit', killAll);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    killAll();
    process.exit(130);
  });
}

/**
 * Starts `edge-events serve` with `env` (HOST is 127.0.0.1, PORT 0 unless given) and waits until
 * it listens.
 * @throws Error with the store's output when it exits before listening
 */
export async function launchStore(env: Record<string, string>): Promise<StoreProcess> {
  const spawned = await spawnStore({ PORT: '0', ...env });
  const { child } = spawned;
  running.add(child);
  let ended: Exit | undefined;
  const exited = new Promise<Exit>((resolve) => {
    const end = (code: number | null, signal: NodeJS.Signals | null) => {
      running.delete(child);
      ended = { code, signal };
      resolve(ended);
    };
    if (child.exitCode !== null || child.signalCode !== null) end(child.exitCode, child.signalCode);
    else child.once('exit', end);
  });
  return {
    url: spawned.url,
    pid: child.pid!,
    child,
    output: spawned.output,
    exited,
    hasExited: () => ended !== undefined,
    kill(signal = 'SIGKILL') {
      if (!ended) child.kill(signal);
      return exited;
    },
  };
}
