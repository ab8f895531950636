/**
 * The store as a child process for the harness scripts: the built binary (`dist/src/cli.js
 * serve`, started by spawned-store.ts) on 127.0.0.1 and a free port, signalled
 * (stopped and continued too) or killed with any signal and awaited, and never left running when
 * the harness exits (SIGKILL ends a stopped process as well).
 */
import type { ChildProcess } from 'node:child_process';
import { spawnStore } from './spawned-store.js';

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
  /** Sends `signal` and returns at once (for SIGSTOP and SIGCONT); nothing once the process has ended. */
  signal(signal: NodeJS.Signals): void;
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

/** The store ended before it listened: `exit` says how (a refusal's code, or the signal that killed it). */
export class StoreNotStarted extends Error {
  constructor(message: string, readonly exit: Exit) {
    super(message);
    this.name = 'StoreNotStarted';
  }
}

/**
 * Starts `edge-events serve` with `env` (HOST is 127.0.0.1, PORT 0 unless given) and waits until
 * it listens.
 * @param prefix a command that execs `node cli.js serve` in place (see SpawnOptions)
 * @throws StoreNotStarted with the store's output when it exits before listening
 */
export async function launchStore(env: Record<string, string>, prefix: string[] = []): Promise<StoreProcess> {
  // Known to the exit hook from its spawn on: a harness stopped while a store starts leaves none behind.
  let starting: ChildProcess | undefined;
  const spawned = await spawnStore({ PORT: '0', ...env }, process.execPath, {
    prefix,
    spawned: (child) => {
      starting = child;
      running.add(child);
    },
  }).catch((err: Error) => {
    if (!starting) throw err;
    running.delete(starting);
    throw new StoreNotStarted(err.message, { code: starting.exitCode, signal: starting.signalCode });
  });
  const { child } = spawned;
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
    signal(signal) {
      if (!ended) child.kill(signal);
    },
    kill(signal = 'SIGKILL') {
      if (!ended) child.kill(signal);
      return exited;
    },
  };
}
